//! Errors thrown synchronously by the binding carry their stable code as
//! the JS error's `code` (napi's custom status), so the facade never parses
//! a message. A spawn failure's OS error name (`ENOENT`…) is its `cause`'s
//! message.

use acp_core::connection::CallError;
use acp_core::transport::SpawnError;
use acp_core::vocabulary::ErrorCode;

/// The `code` of an error the binding throws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcpStatus {
    Spawn,
    Closed,
    Backpressure,
    InvalidArgument,
    /// A session store error, by its code (`acp_core::store::StoreError`).
    Store(&'static str),
    /// A failure of napi itself, under napi's own status name.
    Napi(napi::Status),
}

impl AsRef<str> for AcpStatus {
    fn as_ref(&self) -> &str {
        match self {
            AcpStatus::Spawn => ErrorCode::Spawn.as_str(),
            AcpStatus::Closed => ErrorCode::Closed.as_str(),
            AcpStatus::Backpressure => ErrorCode::Backpressure.as_str(),
            AcpStatus::InvalidArgument => ErrorCode::InvalidArgument.as_str(),
            AcpStatus::Store(code) => code,
            AcpStatus::Napi(status) => status.as_ref(),
        }
    }
}

pub type Result<T> = napi::Result<T, AcpStatus>;

pub fn spawn_error(e: SpawnError) -> napi::Error<AcpStatus> {
    let mut err = napi::Error::new(AcpStatus::Spawn, e.to_string());
    err.set_cause(napi::Error::from_reason(e.errno.to_string()));
    err
}

pub fn call_error(e: CallError) -> napi::Error<AcpStatus> {
    let status = match &e {
        CallError::Closed(_) => AcpStatus::Closed,
        CallError::Backpressure(_) => AcpStatus::Backpressure,
        CallError::InvalidArgument(_) => AcpStatus::InvalidArgument,
    };
    napi::Error::new(status, e.to_string())
}

/// A napi failure (not one of ours) under our error type.
pub fn internal(e: napi::Error) -> napi::Error<AcpStatus> {
    napi::Error::new(AcpStatus::Napi(e.status), e.reason.clone())
}
