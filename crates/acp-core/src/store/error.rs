//! Typed errors of the session store. Each maps to one stable code the
//! host can act on (see docs/sessions-store.md).

use std::path::PathBuf;

use crate::vocabulary::ErrorCode;

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StoreError {
    /// The file is not an SQLite database, or SQLite found it damaged.
    #[error("the session store {path} is corrupt: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    /// An SQLite file, but some other program's.
    #[error("{path} is not an acp-native session store (application id {found:#x})")]
    Foreign { path: PathBuf, found: i64 },
    /// Written by a newer acp-native: we would not know its schema.
    #[error("the session store {path} has schema version {found}; this acp-native reads up to {supported}")]
    Newer {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    /// Another process held the write lock longer than the busy timeout.
    #[error("the session store is busy (another process is writing): {0}")]
    Busy(String),
    /// The disk (or quota) is full: the batch was not written, and is kept
    /// to retry; what was committed before is intact.
    #[error("the disk holding the session store is full: {0}")]
    Full(String),
    /// No session with this id in the store.
    #[error("no stored session {0}")]
    NotFound(String),
    /// The store was closed.
    #[error("the session store is closed")]
    Closed,
    /// Any other I/O or SQLite failure.
    #[error("session store I/O failed: {0}")]
    Io(String),
}

impl StoreError {
    /// The stable code of the error, for hosts.
    pub fn code(&self) -> &'static str {
        let code = match self {
            StoreError::Corrupt { .. } => ErrorCode::StoreCorrupt,
            StoreError::Foreign { .. } => ErrorCode::StoreForeign,
            StoreError::Newer { .. } => ErrorCode::StoreNewer,
            StoreError::Busy(_) => ErrorCode::StoreBusy,
            StoreError::Full(_) => ErrorCode::StoreFull,
            StoreError::NotFound(_) => ErrorCode::StoreNotFound,
            StoreError::Closed => ErrorCode::StoreClosed,
            StoreError::Io(_) => ErrorCode::StoreIo,
        };
        code.as_str()
    }

    /// An SQLite failure of the store at `path`, by kind.
    pub(crate) fn sqlite(path: &std::path::Path, e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode as C;
        let detail = e.to_string();
        match e.sqlite_error_code() {
            Some(C::NotADatabase | C::DatabaseCorrupt) => StoreError::Corrupt {
                path: path.to_path_buf(),
                detail,
            },
            Some(C::DiskFull) => StoreError::Full(detail),
            Some(C::DatabaseBusy | C::DatabaseLocked) => StoreError::Busy(detail),
            _ => StoreError::Io(detail),
        }
    }
}
