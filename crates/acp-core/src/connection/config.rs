use std::collections::HashMap;
use std::time::Duration;

use super::trace::TraceConfig;
use crate::builtin::BuiltinConfig;
use crate::transport::AgentCommand;

/// Everything that shapes one connection. `Default` gives the documented
/// defaults; only `command` has to be set.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    pub command: AgentCommand,
    /// Longest stdout line accepted; a longer one is skipped and reported
    /// as a `protocolError` event, and the connection goes on.
    pub max_line_bytes: usize,
    /// How much of the agent's stderr is kept for crash reports.
    pub stderr_tail_bytes: usize,
    /// Forward stderr lines to the host as `stderr` events.
    pub forward_stderr: bool,
    /// Bytes that may wait for the agent to read its stdin before calls fail.
    pub max_write_queue_bytes: usize,
    /// Agent requests waiting for an answer (host handlers and built-ins
    /// together), at most; more are refused with `data.reason`
    /// `tooManyPendingRequests`.
    pub max_pending_agent_requests: usize,
    /// Bytes of agent requests waiting for an answer, at most (one request
    /// of any size is always taken when none is waiting).
    pub max_pending_agent_request_bytes: usize,
    /// Params of an agent request bigger than this (by the views'
    /// `jsonSize`) reach a host handler cut with `$omitted` markers; the
    /// full text stays available while the request waits.
    pub max_handler_params_bytes: usize,
    /// The result of one of our ACP requests bigger than this (by
    /// `jsonSize`) reaches the host cut with `$omitted` markers; the full
    /// text waits for the host to take it (see `Connection::take_full_result`).
    pub max_result_bytes: usize,
    /// How long a host handler may take to answer an agent request.
    pub handler_timeout: Option<Duration>,
    /// `close()`: how long to wait after stdin EOF before SIGTERM.
    pub close_grace: Duration,
    /// `close()`: how long to wait after SIGTERM before SIGKILL.
    pub term_grace: Duration,
    /// Messages per batch handed to the host at most.
    pub batch_max_messages: usize,
    /// Bytes per batch at most (a single larger message still goes alone).
    pub batch_max_bytes: usize,
    /// Batches handed to the host and not yet acknowledged, at most. This
    /// is the backpressure: when the host is slow, reading stops.
    pub in_flight_batches: usize,
    /// Unix: the host may read stdout on its own thread while the agent is
    /// quiet (see [`super::Connection::host_read`]); the core reads it
    /// until the host polls it, while the agent floods, and at its exit.
    pub read_on_host: bool,
    /// Built-in `fs/*` and `terminal/*` handlers (off by default).
    pub builtins: BuiltinConfig,
    /// Message history and live tracing.
    pub trace: TraceConfig,
    /// The result (JSON text) `cancel_session` answers an extension
    /// request with, by method; others get -32800. Vendor knowledge stays
    /// with the host (e.g. agentao's `_agentao.cn/ask_user`).
    pub cancelled_results: HashMap<String, String>,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        Self {
            command: AgentCommand::default(),
            max_line_bytes: 64 * 1024 * 1024,
            stderr_tail_bytes: 64 * 1024,
            forward_stderr: true,
            max_write_queue_bytes: 64 * 1024 * 1024,
            max_pending_agent_requests: 1024,
            max_pending_agent_request_bytes: 32 * 1024 * 1024,
            max_handler_params_bytes: 4 * 1024 * 1024,
            max_result_bytes: 4 * 1024 * 1024,
            handler_timeout: Some(Duration::from_secs(300)),
            close_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(1),
            batch_max_messages: 1024,
            // Under V8's large-object size (128 KiB): a batch is then an
            // ordinary string to the host, and bigger ones only hold more
            // memory without delivering faster.
            batch_max_bytes: 64 * 1024,
            in_flight_batches: 2,
            read_on_host: false,
            builtins: BuiltinConfig::default(),
            trace: TraceConfig::default(),
            cancelled_results: HashMap::new(),
        }
    }
}
