//! How a built-in handler says no. Every refusal is a JSON-RPC error with a
//! stable `data.reason`, so an agent (and a test) can tell an escape from a
//! missing file without parsing the message.

use std::io;

use serde_json::json;

use crate::acp::Reply;
use crate::rpc::ErrorCode;

/// ACP's "Resource not found" (a file, a session or a terminal).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinError {
    pub code: i64,
    /// `invalidParams`, `outsideRoots`, `notAFile`, `tooLarge`, `notUtf8`,
    /// `scanLimit`, `notFound`, `tooManyTerminals`, `outputBudget`,
    /// `spawnFailed`, `shellDisabled`, `noThread`, `io`, `internal`, `cancelled` or
    /// `methodNotFound`.
    pub reason: &'static str,
    pub message: String,
    /// `ENOENT`, `EACCES`, … for `io` and `spawnFailed`.
    pub errno: Option<&'static str>,
}

impl BuiltinError {
    fn new(code: i64, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            errno: None,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, "invalidParams", message)
    }

    pub fn outside_roots(path: &str) -> Self {
        Self::new(
            ErrorCode::INVALID_PARAMS,
            "outsideRoots",
            format!("{path} is outside the directories this client allows"),
        )
    }

    pub fn not_a_file(path: &str) -> Self {
        Self::new(
            ErrorCode::INVALID_PARAMS,
            "notAFile",
            format!("{path} is not a regular file"),
        )
    }

    pub fn too_large(what: &str, max: usize) -> Self {
        Self::new(
            ErrorCode::INVALID_PARAMS,
            "tooLarge",
            format!("{what} is over the {max}-byte limit"),
        )
    }

    pub fn not_utf8(path: &str) -> Self {
        Self::new(
            ErrorCode::INVALID_PARAMS,
            "notUtf8",
            format!("{path} is not UTF-8 text"),
        )
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(RESOURCE_NOT_FOUND, "notFound", message)
    }

    /// The request was settled (cancelled, connection closed) while the
    /// work ran; this answer is never sent.
    pub fn cancelled() -> Self {
        Self::new(
            ErrorCode::REQUEST_CANCELLED,
            "cancelled",
            "Request cancelled",
        )
    }

    /// Skipping to `line` would read more than the scan budget.
    pub fn scan_limit(path: &str, max: u64) -> Self {
        Self::new(
            ErrorCode::INVALID_PARAMS,
            "scanLimit",
            format!("reaching the requested line of {path} would scan over {max} bytes"),
        )
    }

    /// The built-in terminals' output budget is taken by open terminals.
    pub fn output_budget(max: usize) -> Self {
        Self::new(
            ErrorCode::INTERNAL_ERROR,
            "outputBudget",
            format!("open terminals already keep {max} bytes of output; release one first"),
        )
    }

    /// No thread could be had for the work (the system is out of
    /// processes or threads): try again later.
    pub fn no_thread(why: &str) -> Self {
        Self::new(
            ErrorCode::INTERNAL_ERROR,
            "noThread",
            format!("no thread could be started for this request ({why}); try again later"),
        )
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, "internal", message)
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            "methodNotFound",
            format!("Method not found: {method}"),
        )
    }

    pub fn too_many_terminals(max: usize) -> Self {
        Self::new(
            ErrorCode::INTERNAL_ERROR,
            "tooManyTerminals",
            format!("{max} terminals are open; release one first"),
        )
    }

    /// A command line that needs a shell, with the shell switched off.
    pub fn shell_disabled(command: &str) -> Self {
        Self::new(
            ErrorCode::INVALID_PARAMS,
            "shellDisabled",
            format!(
                "`{command}` is a shell command line and this client runs no shell: \
                 send the program in `command` and its arguments in `args`"
            ),
        )
    }

    pub fn spawn_failed(command: &str, err: &io::Error) -> Self {
        Self {
            errno: Some(errno_name(err)),
            ..Self::new(
                ErrorCode::INTERNAL_ERROR,
                "spawnFailed",
                format!("cannot run `{command}`: {err}"),
            )
        }
    }

    /// An I/O error on a path that passed the confinement checks. A missing
    /// file becomes `notFound`; anything else keeps its errno.
    pub fn io(path: &str, err: &io::Error) -> Self {
        if err.kind() == io::ErrorKind::NotFound {
            return Self::not_found(format!("{path} does not exist"));
        }
        Self {
            errno: Some(errno_name(err)),
            ..Self::new(ErrorCode::INTERNAL_ERROR, "io", format!("{path}: {err}"))
        }
    }

    pub fn into_reply(self) -> Reply {
        let mut data = json!({ "reason": self.reason });
        if let Some(errno) = self.errno {
            data["errno"] = json!(errno);
        }
        Reply::Error {
            code: self.code,
            message: self.message,
            data: Some(data.to_string()),
        }
    }
}

pub fn errno_name(err: &io::Error) -> &'static str {
    match err.kind() {
        io::ErrorKind::NotFound => return "ENOENT",
        io::ErrorKind::PermissionDenied => return "EACCES",
        _ => {}
    }
    #[cfg(unix)]
    match err.raw_os_error() {
        Some(libc::ENOTDIR) => return "ENOTDIR",
        Some(libc::EISDIR) => return "EISDIR",
        Some(libc::ELOOP) => return "ELOOP",
        Some(libc::ENOSPC) => return "ENOSPC",
        Some(libc::EROFS) => return "EROFS",
        Some(libc::EEXIST) => return "EEXIST",
        Some(libc::ENOEXEC) => return "ENOEXEC",
        Some(libc::EMFILE) => return "EMFILE",
        Some(libc::ENAMETOOLONG) => return "ENAMETOOLONG",
        _ => {}
    }
    "EIO"
}
