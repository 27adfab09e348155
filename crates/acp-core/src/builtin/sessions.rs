//! The workspace of each session, learnt from what the host sends:
//! `session/load` and `session/resume` name the session and its cwd;
//! `session/new` names the cwd and the agent's answer names the session.
//! `additionalDirectories` (absolute paths) widen the workspace.
//! A relative cwd is refused (the spec requires absolute paths; resolving
//! it against the host's cwd would widen the roots silently), and the
//! table shrinks on `session/close`/`session/delete` and stays bounded.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use serde::Deserialize;

use crate::acp::methods;
use crate::rpc::RequestId;

/// `session/new` requests remembered while unanswered, at most (one that
/// never gets an answer must not grow this forever).
const MAX_UNANSWERED: usize = 256;
/// Sessions remembered, at most: the oldest is forgotten first (its
/// built-in requests are then refused as an unknown session).
pub const MAX_SESSIONS: usize = 4096;

/// Where a session works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// The base for relative paths, and a root.
    pub cwd: PathBuf,
    /// More roots (`additionalDirectories`).
    pub additional: Vec<PathBuf>,
}

#[derive(Debug, Default)]
pub struct Sessions {
    known: Mutex<Known>,
    unanswered_new: Mutex<HashMap<RequestId, Workspace>>,
}

/// Workspaces by session id, with the order they were learnt in.
#[derive(Debug, Default)]
struct Known {
    map: HashMap<Box<str>, Workspace>,
    order: std::collections::VecDeque<Box<str>>,
}

impl Known {
    fn insert(&mut self, id: Box<str>, workspace: Workspace) {
        if self.map.insert(id.clone(), workspace).is_none() {
            self.order.push_back(id);
        }
        while self.map.len() > MAX_SESSIONS {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            self.map.remove(&old);
        }
    }

    fn remove(&mut self, id: &str) {
        if self.map.remove(id).is_some() {
            self.order.retain(|k| &**k != id);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sessions {
    /// The host sent request `id`; remember the workspace of session requests.
    pub fn on_request(&self, id: RequestId, method: &str, params: Option<&str>) {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct P {
            cwd: Option<PathBuf>,
            session_id: Option<String>,
            additional_directories: Option<Vec<PathBuf>>,
        }
        let is_new = method == methods::SESSION_NEW;
        if method == methods::SESSION_CLOSE || method == methods::SESSION_DELETE {
            if let Some(p) = params.and_then(|p| serde_json::from_str::<P>(p).ok()) {
                if let Some(id) = p.session_id {
                    lock(&self.known).remove(&id);
                }
            }
            return;
        }
        if !is_new && method != methods::SESSION_LOAD && method != methods::SESSION_RESUME {
            return;
        }
        let Some(p) = params.and_then(|p| serde_json::from_str::<P>(p).ok()) else {
            return;
        };
        let Some(cwd) = p.cwd.filter(|c| c.is_absolute()) else {
            return;
        };
        let workspace = Workspace {
            cwd,
            // Relative entries are invalid per the spec; they never widen.
            additional: p
                .additional_directories
                .unwrap_or_default()
                .into_iter()
                .filter(|d| d.is_absolute())
                .collect(),
        };
        if is_new {
            let mut unanswered = lock(&self.unanswered_new);
            if unanswered.len() >= MAX_UNANSWERED {
                unanswered.clear();
            }
            unanswered.insert(id, workspace);
        } else if let Some(session_id) = p.session_id {
            // Loading: the agent may already act in the session while it
            // replays history, before its answer.
            lock(&self.known).insert(session_id.into(), workspace);
        }
    }

    /// The agent answered our request `id` (`result` is None for an error).
    pub fn on_response(&self, id: RequestId, result: Option<&str>) {
        #[derive(Deserialize)]
        struct R {
            #[serde(rename = "sessionId")]
            session_id: String,
        }
        let Some(workspace) = lock(&self.unanswered_new).remove(&id) else {
            return;
        };
        if let Some(r) = result.and_then(|r| serde_json::from_str::<R>(r).ok()) {
            lock(&self.known).insert(r.session_id.into(), workspace);
        }
    }

    pub fn workspace(&self, session_id: &str) -> Option<Workspace> {
        lock(&self.known).map.get(session_id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests write Unix absolute paths; Windows needs a drive for a
    /// path to be absolute.
    fn abs(json: &str) -> String {
        if cfg!(windows) {
            json.replace("\"/", "\"C:/")
        } else {
            json.to_string()
        }
    }

    fn path(unix: &str) -> PathBuf {
        PathBuf::from(if cfg!(windows) {
            format!("C:{unix}")
        } else {
            unix.to_string()
        })
    }

    fn cwd(s: &Sessions, id: &str) -> Option<PathBuf> {
        s.workspace(id).map(|w| w.cwd)
    }

    #[test]
    fn new_is_known_once_answered_load_at_once() {
        let s = Sessions::default();
        s.on_request(
            RequestId::new(1),
            "session/new",
            Some(&abs(r#"{"cwd":"/p","mcpServers":[]}"#)),
        );
        assert_eq!(cwd(&s, "sess_1"), None);
        s.on_response(RequestId::new(1), Some(&abs(r#"{"sessionId":"sess_1"}"#)));
        assert_eq!(cwd(&s, "sess_1"), Some(path("/p")));

        s.on_request(
            RequestId::new(2),
            "session/load",
            Some(&abs(r#"{"cwd":"/q","sessionId":"old"}"#)),
        );
        assert_eq!(cwd(&s, "old"), Some(path("/q")));

        // A failed session/new teaches nothing; other methods are ignored.
        s.on_request(
            RequestId::new(3),
            "session/new",
            Some(&abs(r#"{"cwd":"/r"}"#)),
        );
        s.on_response(RequestId::new(3), None);
        s.on_request(
            RequestId::new(4),
            "session/prompt",
            Some(&abs(r#"{"cwd":"/x","sessionId":"sess_1"}"#)),
        );
        assert_eq!(cwd(&s, "sess_1"), Some(path("/p")));
    }

    #[test]
    fn relative_cwd_is_not_learnt_and_closed_sessions_are_forgotten() {
        let s = Sessions::default();
        s.on_request(
            RequestId::new(1),
            "session/load",
            Some(&abs(r#"{"cwd":"rel","sessionId":"r"}"#)),
        );
        assert_eq!(cwd(&s, "r"), None);
        s.on_request(
            RequestId::new(2),
            "session/load",
            Some(&abs(r#"{"cwd":"/a","sessionId":"a"}"#)),
        );
        s.on_request(
            RequestId::new(3),
            "session/close",
            Some(&abs(r#"{"sessionId":"a"}"#)),
        );
        assert_eq!(cwd(&s, "a"), None);
        s.on_request(
            RequestId::new(4),
            "session/load",
            Some(&abs(r#"{"cwd":"/b","sessionId":"b"}"#)),
        );
        s.on_request(
            RequestId::new(5),
            "session/delete",
            Some(&abs(r#"{"sessionId":"b"}"#)),
        );
        assert_eq!(cwd(&s, "b"), None);
        for i in 0..=MAX_SESSIONS {
            let params = format!(r#"{{"cwd":"/p","sessionId":"s{i}"}}"#);
            s.on_request(RequestId::new(10), "session/resume", Some(&abs(&params)));
        }
        assert_eq!(lock(&s.known).map.len(), MAX_SESSIONS);
        assert_eq!(cwd(&s, "s0"), None, "the oldest is forgotten");
        assert!(cwd(&s, &format!("s{MAX_SESSIONS}")).is_some());
    }

    #[test]
    fn additional_directories_widen_the_workspace_when_absolute() {
        let s = Sessions::default();
        // Not a list of strings: nothing is learnt rather than half of it.
        s.on_request(
            RequestId::new(1),
            "session/resume",
            Some(&abs(
                r#"{"cwd":"/p","sessionId":"s","additionalDirectories":["/lib",7]}"#,
            )),
        );
        assert_eq!(s.workspace("s"), None);
        s.on_request(
            RequestId::new(2),
            "session/resume",
            Some(&abs(
                r#"{"cwd":"/p","sessionId":"s","additionalDirectories":["/lib","rel"]}"#,
            )),
        );
        assert_eq!(s.workspace("s").unwrap().additional, [path("/lib")]);
        s.on_request(
            RequestId::new(3),
            "session/new",
            Some(&abs(r#"{"cwd":"/n","additionalDirectories":null}"#)),
        );
        s.on_response(RequestId::new(3), Some(&abs(r#"{"sessionId":"n"}"#)));
        assert!(s.workspace("n").unwrap().additional.is_empty());
    }
}
