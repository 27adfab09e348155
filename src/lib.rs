//! The napi binding: a thin layer that turns JS calls into calls on an
//! `acp_core::Connection` and hands its batches to a JS callback. All
//! protocol logic lives in `crates/acp-core`; the public JS API
//! (`AcpClient`) lives in `index.js`.

mod arena;
mod cleanup;
mod connection;
mod errors;
#[cfg(unix)]
mod host_poll;
mod logging;
mod options;
mod runtime;
mod sink;
mod store;
mod trim;
mod view;

use napi_derive::napi;

pub use connection::{full_result_text, held_full_result_bytes, AgentConnection};
pub use logging::{set_log_sink, take_log_records};
pub use store::open_store;
pub use view::fold_recording;

/// `clientCapabilities` for the given agent → client methods the host
/// handles (JSON text).
#[napi]
pub fn client_capabilities(methods: Vec<String>) -> String {
    acp_core::acp::client_capabilities(methods.iter().map(String::as_str)).to_string()
}

/// The kinds of batch items (see `acp_core::connection::ItemKind`), by
/// name: the facade reads the numbers from here instead of repeating them.
#[napi]
pub fn item_kinds() -> std::collections::HashMap<String, u32> {
    acp_core::connection::ItemKind::ALL
        .iter()
        .map(|(name, kind)| ((*name).to_string(), *kind as u32))
        .collect()
}

/// Every error code and client event with its meaning, as JSON (see
/// `acp_core::vocabulary`): what index.d.ts and the docs are checked against.
#[napi]
pub fn vocabulary() -> String {
    acp_core::vocabulary::to_json()
}

/// Connections registered with this thread's environment cleanup hook
/// (agents not yet released): for tests that no hook accumulates.
#[napi]
pub fn live_connections() -> u32 {
    cleanup::live_count() as u32
}

/// The ACP protocol version this binding speaks.
#[napi]
pub fn protocol_version() -> u32 {
    acp_core::acp::PROTOCOL_VERSION as u32
}
