//! Errors thrown synchronously by the binding carry a stable code as the
//! message prefix (`ERR_ACP_CLOSED: …`); `index.js` turns that into
//! `err.code`. napi itself would only give the napi status name.

use acp_core::connection::CallError;
use acp_core::transport::SpawnError;

pub fn spawn_error(e: SpawnError) -> napi::Error {
    napi::Error::from_reason(format!("ERR_ACP_SPAWN: {e} [errno={}]", e.errno))
}

pub fn call_error(e: CallError) -> napi::Error {
    let code = match &e {
        CallError::Closed(_) => "ERR_ACP_CLOSED",
        CallError::Backpressure(_) => "ERR_ACP_BACKPRESSURE",
        CallError::InvalidArgument(_) => "ERR_ACP_INVALID_ARGUMENT",
    };
    napi::Error::from_reason(format!("{code}: {e}"))
}
