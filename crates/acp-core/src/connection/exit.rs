use std::process::ExitStatus;

use crate::rpc::json_str;
use crate::transport::TreeTrouble;
use crate::vocabulary::ErrorCode as HostError;

/// How the agent ended.
#[derive(Debug, Clone, Default)]
pub struct ExitInfo {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub stderr_tail: String,
    /// Why the connection ended: `exited` (on its own), `closed` (by
    /// `close()`), `killed` (by `kill()` or host teardown), `stdout-closed`.
    pub reason: &'static str,
    /// What went wrong with the process guarding the agent's tree.
    pub reaper: Option<TreeTrouble>,
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
            reaper: None,
        }
    }

    /// One line a human can read: "exited with code 3", "killed by SIGKILL".
    pub fn describe(&self) -> String {
        let end = match (&self.exit_code, &self.signal) {
            (Some(code), _) => format!("agent exited with code {code}"),
            (None, Some(sig)) => format!("agent was killed by {sig}"),
            (None, None) => "agent connection closed".to_string(),
        };
        match &self.reaper {
            Some(TreeTrouble::Killed { .. }) => {
                format!("{end} (its reaper was killed: processes it started may have survived)")
            }
            _ => end,
        }
    }

    /// The JSON fields shared by the `exit` event and `ERR_ACP_CLOSED`.
    pub fn json_fields(&self) -> String {
        format!(
            r#""exitCode":{},"signal":{},"stderrTail":{},"reason":"{}","reaper":{}"#,
            self.exit_code.map_or("null".into(), |c| c.to_string()),
            self.signal.as_deref().map_or("null".into(), json_str),
            json_str(&self.stderr_tail),
            self.reason,
            self.reaper.as_ref().map_or("null".into(), reaper_json)
        )
    }

    pub fn to_json(&self) -> String {
        format!("{{{}}}", self.json_fields())
    }

    /// The error object for a call that can no longer be answered.
    pub fn closed_error(&self, method: &str) -> String {
        format!(
            r#"{{"code":"{}","message":{},"method":{},{}}}"#,
            HostError::Closed.as_str(),
            json_str(&format!("{} before answering {method}", self.describe())),
            json_str(method),
            self.json_fields()
        )
    }
}

/// `{"state":"stopped"|"unresponsive"}`, or `{"state":"killed","signal",
/// "escaped":[{pid, command}]}`.
fn reaper_json(trouble: &TreeTrouble) -> String {
    match trouble {
        TreeTrouble::Unresponsive { stopped } => format!(
            r#"{{"state":"{}"}}"#,
            if *stopped { "stopped" } else { "unresponsive" }
        ),
        TreeTrouble::Killed { signal, escaped } => {
            let escaped: Vec<String> = escaped
                .iter()
                .map(|e| format!(r#"{{"pid":{},"command":{}}}"#, e.pid, json_str(&e.command)))
                .collect();
            format!(
                r#"{{"state":"killed","signal":{},"escaped":[{}]}}"#,
                json_str(&crate::transport::signal_name(*signal)),
                escaped.join(",")
            )
        }
    }
}
