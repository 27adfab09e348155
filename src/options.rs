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
    pub handler_timeout_ms: Option<u32>,
    pub close_grace_ms: Option<u32>,
    pub term_grace_ms: Option<u32>,
    pub batch_max_messages: Option<u32>,
    pub batch_max_bytes: Option<u32>,
    pub in_flight_batches: Option<u32>,
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
}

/// Built-in terminals (absolute `roots`; none = the session cwd).
#[napi(object)]
pub struct TerminalOptions {
    pub roots: Option<Vec<String>>,
    pub max_terminals: Option<u32>,
    pub default_output_byte_limit: Option<u32>,
    pub max_output_byte_limit: Option<u32>,
    pub env: Option<HashMap<String, String>>,
}

impl From<FsOptions> for FsConfig {
    fn from(o: FsOptions) -> Self {
        let d = FsConfig::default();
        FsConfig {
            roots: paths(o.roots),
            max_file_bytes: o.max_file_bytes.map_or(d.max_file_bytes, |v| v as usize),
            read_only: o.read_only.unwrap_or(d.read_only),
        }
    }
}

impl From<TerminalOptions> for TerminalConfig {
    fn from(o: TerminalOptions) -> Self {
        let d = TerminalConfig::default();
        TerminalConfig {
            roots: paths(o.roots),
            max_terminals: o.max_terminals.map_or(d.max_terminals, |v| v as usize),
            default_output_byte_limit: o
                .default_output_byte_limit
                .map_or(d.default_output_byte_limit, |v| v as usize),
            max_output_byte_limit: o
                .max_output_byte_limit
                .map_or(d.max_output_byte_limit, |v| v as usize),
            env: sorted_env(o.env),
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

fn ms(v: u32) -> Duration {
    Duration::from_millis(u64::from(v))
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
            max_line_bytes: o.max_line_bytes.map_or(d.max_line_bytes, |v| v as usize),
            stderr_tail_bytes: o
                .stderr_tail_bytes
                .map_or(d.stderr_tail_bytes, |v| v as usize),
            forward_stderr: o.forward_stderr.unwrap_or(d.forward_stderr),
            max_write_queue_bytes: o
                .max_write_queue_bytes
                .map_or(d.max_write_queue_bytes, |v| v as usize),
            handler_timeout: o
                .handler_timeout_ms
                .map_or(d.handler_timeout, |v| Some(ms(v))),
            close_grace: o.close_grace_ms.map_or(d.close_grace, ms),
            term_grace: o.term_grace_ms.map_or(d.term_grace, ms),
            batch_max_messages: o
                .batch_max_messages
                .map_or(d.batch_max_messages, |v| v as usize),
            batch_max_bytes: o.batch_max_bytes.map_or(d.batch_max_bytes, |v| v as usize),
            in_flight_batches: o
                .in_flight_batches
                .map_or(d.in_flight_batches, |v| v as usize),
            builtins: BuiltinConfig {
                fs: o.fs.map(Into::into),
                terminals: o.terminals.map(Into::into),
                host_methods: o.host_methods.unwrap_or_default(),
            },
            trace: TraceConfig {
                live: o.trace.unwrap_or(t.live),
                live_max_payload: o
                    .trace_max_payload_bytes
                    .map_or(t.live_max_payload, |v| v as usize),
                history: o.history_size.map_or(t.history, |v| v as usize),
                history_max_payload: o
                    .history_max_payload_bytes
                    .map_or(t.history_max_payload, |v| v as usize),
            },
            cancelled_results: o.cancelled_results.unwrap_or_default(),
        }
    }
}
