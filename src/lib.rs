//! The napi binding: a thin layer that turns JS calls into calls on an
//! `acp_core::Connection` and hands its batches to a JS callback. All
//! protocol logic lives in `crates/acp-core`; the public JS API
//! (`AcpClient`) lives in `index.js`.

mod connection;
mod errors;
mod logging;
mod options;
mod runtime;
mod sink;
mod view;

use napi_derive::napi;

pub use connection::AgentConnection;
pub use logging::set_log_sink;
pub use view::fold_recording;

/// `clientCapabilities` for the given agent → client methods the host
/// handles (JSON text).
#[napi]
pub fn client_capabilities(methods: Vec<String>) -> String {
    acp_core::acp::client_capabilities(methods.iter().map(String::as_str)).to_string()
}

/// The ACP protocol version this binding speaks.
#[napi]
pub fn protocol_version() -> u32 {
    acp_core::acp::PROTOCOL_VERSION as u32
}
