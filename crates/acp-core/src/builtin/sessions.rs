//! The cwd of each session, learnt from what the host sends: `session/load`
//! and `session/resume` name the session and its cwd; `session/new` names
//! the cwd and the agent's answer names the session.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use serde::Deserialize;

use crate::acp::methods;

/// `session/new` requests remembered while unanswered, at most (one that
/// never gets an answer must not grow this forever).
const MAX_UNANSWERED: usize = 256;

#[derive(Debug, Default)]
pub struct Sessions {
    cwd: Mutex<HashMap<Box<str>, PathBuf>>,
    unanswered_new: Mutex<HashMap<u64, PathBuf>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sessions {
    /// The host sent request `id`; remember the cwd of session requests.
    pub fn on_request(&self, id: u64, method: &str, params: Option<&str>) {
        #[derive(Deserialize)]
        struct P {
            cwd: Option<PathBuf>,
            #[serde(rename = "sessionId")]
            session_id: Option<String>,
        }
        let is_new = method == methods::SESSION_NEW;
        if !is_new && method != methods::SESSION_LOAD && method != methods::SESSION_RESUME {
            return;
        }
        let Some(P {
            cwd: Some(cwd),
            session_id,
        }) = params.and_then(|p| serde_json::from_str::<P>(p).ok())
        else {
            return;
        };
        if is_new {
            let mut unanswered = lock(&self.unanswered_new);
            if unanswered.len() >= MAX_UNANSWERED {
                unanswered.clear();
            }
            unanswered.insert(id, cwd);
        } else if let Some(session_id) = session_id {
            // Loading: the agent may already act in the session while it
            // replays history, before its answer.
            lock(&self.cwd).insert(session_id.into(), cwd);
        }
    }

    /// The agent answered our request `id` (`result` is None for an error).
    pub fn on_response(&self, id: u64, result: Option<&str>) {
        #[derive(Deserialize)]
        struct R {
            #[serde(rename = "sessionId")]
            session_id: String,
        }
        let Some(cwd) = lock(&self.unanswered_new).remove(&id) else {
            return;
        };
        if let Some(r) = result.and_then(|r| serde_json::from_str::<R>(r).ok()) {
            lock(&self.cwd).insert(r.session_id.into(), cwd);
        }
    }

    pub fn cwd(&self, session_id: &str) -> Option<PathBuf> {
        lock(&self.cwd).get(session_id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_is_known_once_answered_load_at_once() {
        let s = Sessions::default();
        s.on_request(1, "session/new", Some(r#"{"cwd":"/p","mcpServers":[]}"#));
        assert_eq!(s.cwd("sess_1"), None);
        s.on_response(1, Some(r#"{"sessionId":"sess_1"}"#));
        assert_eq!(s.cwd("sess_1"), Some(PathBuf::from("/p")));

        s.on_request(2, "session/load", Some(r#"{"cwd":"/q","sessionId":"old"}"#));
        assert_eq!(s.cwd("old"), Some(PathBuf::from("/q")));

        // A failed session/new teaches nothing; other methods are ignored.
        s.on_request(3, "session/new", Some(r#"{"cwd":"/r"}"#));
        s.on_response(3, None);
        s.on_request(
            4,
            "session/prompt",
            Some(r#"{"cwd":"/x","sessionId":"sess_1"}"#),
        );
        assert_eq!(s.cwd("sess_1"), Some(PathBuf::from("/p")));
    }
}
