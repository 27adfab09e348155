use std::collections::HashMap;
use std::time::Duration;

use acp_core::builtin::{BuiltinConfig, FsConfig, TerminalConfig};
use acp_core::connection::TraceConfig;
use acp_core::{AgentCommand, ConnectionConfig};
use napi_derive::napi;

/// Options of the native connection (the JS `AcpClient` fills these in
/// from its own options; sizes in bytes, times in milliseconds).
#[napi(object)]
pub struct ConnectionOptions {
    pub command: String,
    pub args: Option<Vec<String>>,
    pub cwd: Option<String>,
    pub env: Option<HashMap<String, String>>,
    pub clear_env: Option<bool>,
    /// Let the agent's detached (`setsid`) processes outlive it.
    pub keep_detached: Option<bool>,
    pub max_line_bytes: Option<u32>,
    pub stderr_tail_bytes: Option<u32>,
    pub forward_stderr: Option<bool>,
    pub max_write_queue_bytes: Option<u32>,
    /// 0 disables the handler timeout.
    pub handler_timeout_ms: Option<f64>,
    /// Agent requests waiting for an answer at once, at most.
    pub max_pending_agent_requests: Option<u32>,
    /// Bytes of agent requests waiting for an answer, at most.
    pub max_pending_agent_request_bytes: Option<u32>,
    /// Params bigger than this reach a request handler cut.
    pub max_handler_params_bytes: Option<u32>,
    /// The result of an ACP request bigger than this reaches the host cut.
    pub max_result_bytes: Option<u32>,
    /// Blocking built-in jobs (file I/O, output replies) at once, at most.
    pub builtin_jobs: Option<u32>,
    pub close_grace_ms: Option<u32>,
    pub term_grace_ms: Option<u32>,
    pub batch_max_messages: Option<u32>,
    pub batch_max_bytes: Option<u32>,
    pub in_flight_batches: Option<u32>,
    /// Unix: the host may read stdout on its event loop while the agent is
    /// quiet (`readStdoutHere`).
    pub read_on_host: Option<bool>,
    /// Deliver a `[6, record]` trace item for every wire message.
    pub trace: Option<bool>,
    pub trace_max_payload_bytes: Option<u32>,
    /// Recent messages kept for `history()`; 0 keeps none.
    pub history_size: Option<u32>,
    pub history_max_payload_bytes: Option<u32>,
    /// Built-in `fs/*` handlers; absent = off.
    pub fs: Option<FsOptions>,
    /// Built-in `terminal/*` handlers; absent = off.
    pub terminals: Option<TerminalOptions>,
    /// Agent request methods the host handles itself (they win).
    pub host_methods: Option<Vec<String>>,
    /// Extension method → the result (JSON text) `cancelSession` answers
    /// its pending requests with (default: a -32800 error).
    pub cancelled_results: Option<HashMap<String, String>>,
}

/// Built-in file system (absolute `roots`; none = the session cwd).
#[napi(object)]
pub struct FsOptions {
    pub roots: Option<Vec<String>>,
    pub max_file_bytes: Option<u32>,
    pub read_only: Option<bool>,
    pub max_scan_bytes: Option<f64>,
}

/// Built-in terminals (absolute `roots`; none = the session cwd).
#[napi(object)]
pub struct TerminalOptions {
    pub roots: Option<Vec<String>>,
    pub max_terminals: Option<u32>,
    pub default_output_byte_limit: Option<u32>,
    pub max_output_byte_limit: Option<u32>,
    pub max_total_output_bytes: Option<u32>,
    pub env: Option<HashMap<String, String>>,
    /// Run a command sent without args through the shell (default true).
    pub shell: Option<bool>,
}

impl From<FsOptions> for FsConfig {
    fn from(o: FsOptions) -> Self {
        let d = FsConfig::default();
        FsConfig {
            roots: paths(o.roots),
            max_file_bytes: size(o.max_file_bytes, d.max_file_bytes),
            read_only: o.read_only.unwrap_or(d.read_only),
            max_scan_bytes: o
                .max_scan_bytes
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map_or(d.max_scan_bytes, |v| v as u64),
        }
    }
}

impl From<TerminalOptions> for TerminalConfig {
    fn from(o: TerminalOptions) -> Self {
        let d = TerminalConfig::default();
        TerminalConfig {
            roots: paths(o.roots),
            max_terminals: size(o.max_terminals, d.max_terminals),
            default_output_byte_limit: size(
                o.default_output_byte_limit,
                d.default_output_byte_limit,
            ),
            max_output_byte_limit: size(o.max_output_byte_limit, d.max_output_byte_limit),
            max_total_output_bytes: size(o.max_total_output_bytes, d.max_total_output_bytes),
            env: sorted_env(o.env),
            shell: o.shell.unwrap_or(d.shell),
        }
    }
}

fn paths(roots: Option<Vec<String>>) -> Vec<std::path::PathBuf> {
    roots
        .unwrap_or_default()
        .into_iter()
        .map(Into::into)
        .collect()
}

/// Variables in a stable order (the spawn result must not depend on hashing).
fn sorted_env(env: Option<HashMap<String, String>>) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = env.unwrap_or_default().into_iter().collect();
    env.sort();
    env
}

/// A size or count option, or its default.
fn size(v: Option<u32>, default: usize) -> usize {
    v.map_or(default, |v| v as usize)
}

fn ms(v: u32) -> Duration {
    Duration::from_millis(u64::from(v))
}

/// A timeout given as a JS number: taken as a double (a `u32` would wrap
/// 2^32 + 1 to 1 ms); 0, negative, NaN or Infinity mean none, and huge
/// values saturate.
pub fn millis(v: f64) -> Option<Duration> {
    (v.is_finite() && v >= 1.0).then(|| Duration::from_millis(v as u64))
}

impl From<ConnectionOptions> for ConnectionConfig {
    fn from(o: ConnectionOptions) -> Self {
        let d = ConnectionConfig::default();
        let t = TraceConfig::default();
        ConnectionConfig {
            command: AgentCommand {
                program: o.command,
                args: o.args.unwrap_or_default(),
                cwd: o.cwd.map(Into::into),
                env: sorted_env(o.env),
                clear_env: o.clear_env.unwrap_or(false),
                keep_detached: o.keep_detached.unwrap_or(false),
            },
            max_line_bytes: size(o.max_line_bytes, d.max_line_bytes),
            stderr_tail_bytes: size(o.stderr_tail_bytes, d.stderr_tail_bytes),
            forward_stderr: o.forward_stderr.unwrap_or(d.forward_stderr),
            max_write_queue_bytes: size(o.max_write_queue_bytes, d.max_write_queue_bytes),
            handler_timeout: o.handler_timeout_ms.map_or(d.handler_timeout, millis),
            max_pending_agent_requests: size(
                o.max_pending_agent_requests,
                d.max_pending_agent_requests,
            ),
            max_pending_agent_request_bytes: size(
                o.max_pending_agent_request_bytes,
                d.max_pending_agent_request_bytes,
            ),
            max_handler_params_bytes: size(o.max_handler_params_bytes, d.max_handler_params_bytes),
            max_result_bytes: size(o.max_result_bytes, d.max_result_bytes),
            close_grace: o.close_grace_ms.map_or(d.close_grace, ms),
            term_grace: o.term_grace_ms.map_or(d.term_grace, ms),
            batch_max_messages: size(o.batch_max_messages, d.batch_max_messages),
            batch_max_bytes: size(o.batch_max_bytes, d.batch_max_bytes),
            in_flight_batches: size(o.in_flight_batches, d.in_flight_batches),
            read_on_host: o.read_on_host.unwrap_or(d.read_on_host),
            builtins: BuiltinConfig {
                fs: o.fs.map(Into::into),
                terminals: o.terminals.map(Into::into),
                host_methods: o.host_methods.unwrap_or_default(),
                max_jobs: size(o.builtin_jobs, acp_core::builtin::DEFAULT_MAX_JOBS),
            },
            trace: TraceConfig {
                live: o.trace.unwrap_or(t.live),
                live_max_payload: size(o.trace_max_payload_bytes, t.live_max_payload),
                history: size(o.history_size, t.history),
                history_max_payload: size(o.history_max_payload_bytes, t.history_max_payload),
            },
            cancelled_results: o.cancelled_results.unwrap_or_default(),
        }
    }
}
