use std::process::ExitStatus;

use crate::rpc::json_str;

/// How the agent ended.
#[derive(Debug, Clone, Default)]
pub struct ExitInfo {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub stderr_tail: String,
    /// Why the connection ended: `exited` (on its own), `closed` (by
    /// `close()`), `killed` (by `kill()` or host teardown), `stdout-closed`.
    pub reason: &'static str,
}

impl ExitInfo {
    pub fn from_status(status: Option<ExitStatus>, reason: &'static str, tail: String) -> Self {
        let (exit_code, signal) = match status {
            Some(s) => crate::transport::exit_parts(&s),
            None => (None, None),
        };
        Self {
            exit_code,
            signal,
            stderr_tail: tail,
            reason,
        }
    }

    /// One line a human can read: "exited with code 3", "killed by SIGKILL".
    pub fn describe(&self) -> String {
        match (&self.exit_code, &self.signal) {
            (Some(code), _) => format!("agent exited with code {code}"),
            (None, Some(sig)) => format!("agent was killed by {sig}"),
            (None, None) => "agent connection closed".to_string(),
        }
    }

    /// The JSON fields shared by the `exit` event and `ERR_ACP_CLOSED`.
    pub fn json_fields(&self) -> String {
        format!(
            r#""exitCode":{},"signal":{},"stderrTail":{},"reason":"{}""#,
            self.exit_code.map_or("null".into(), |c| c.to_string()),
            self.signal.as_deref().map_or("null".into(), json_str),
            json_str(&self.stderr_tail),
            self.reason
        )
    }

    pub fn to_json(&self) -> String {
        format!("{{{}}}", self.json_fields())
    }

    /// The error object for a call that can no longer be answered.
    pub fn closed_error(&self, method: &str) -> String {
        format!(
            r#"{{"code":"ERR_ACP_CLOSED","message":{},"method":{},{}}}"#,
            json_str(&format!("{} before answering {method}", self.describe())),
            json_str(method),
            self.json_fields()
        )
    }
}
