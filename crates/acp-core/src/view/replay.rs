//! Fold a recording offline: NDJSON trace records (what `acp-native
//! record` and `client.saveHistory()` write) in wire order, every session
//! in it, by the same rules as a live view. Used by `acp-native export`
//! and by the property test against the JS reference fold.

use std::collections::{BTreeMap, HashMap};

use serde::{Serialize, Serializer};
use serde_json::Value;

use super::state::{SessionState, ViewOptions};

#[derive(Default)]
struct Replay {
    options: ViewOptions,
    sessions: BTreeMap<String, SessionState>,
    /// Our requests by wire id.
    ours: HashMap<String, Ours>,
    /// Agent requests waiting for us, by wire id: their session.
    theirs: HashMap<String, String>,
}

/// One of our requests: method, session, and the `modeId` it asks for.
struct Ours {
    method: String,
    sid: Option<String>,
    mode_id: Option<String>,
}

fn session_of(params: Option<&Value>) -> Option<String> {
    params?.get("sessionId")?.as_str().map(str::to_owned)
}

impl Replay {
    fn state(&mut self, id: &str) -> &mut SessionState {
        let options = self.options;
        self.sessions
            .entry(id.to_owned())
            .or_insert_with(|| SessionState::new(id, options))
    }

    fn message(&mut self, sent: bool, msg: Value) {
        let Value::Object(mut msg) = msg else { return };
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = msg.get("id").map(|id| id.to_string());
        let params = msg.remove("params");
        match (sent, method, id) {
            (false, Some(method), None) if method == "session/update" => {
                let Some(sid) = session_of(params.as_ref()) else {
                    return;
                };
                // As text, like a live view gets it (its fast path included).
                let update = params.and_then(|p| p.get("update").map(Value::to_string));
                self.state(&sid).apply_update_json(update.as_deref());
            }
            (false, Some(method), Some(key)) => {
                let Some(sid) = session_of(params.as_ref()) else {
                    return;
                };
                let wire_id = msg.remove("id").unwrap_or(Value::Null);
                self.state(&sid).request_waiting(
                    key.clone(),
                    wire_id,
                    &method,
                    params.unwrap_or(Value::Null),
                );
                self.theirs.insert(key, sid);
            }
            (false, None, Some(key)) => {
                let Some(Ours {
                    method,
                    sid,
                    mode_id,
                }) = self.ours.remove(&key)
                else {
                    return;
                };
                let result = msg.get("result").filter(|_| msg.get("error").is_none());
                match (method.as_str(), sid) {
                    ("session/prompt", Some(sid)) => self.state(&sid).prompt_ended(result),
                    ("session/new", _) => {
                        if let Some(sid) = result.and_then(|r| r.get("sessionId")?.as_str()) {
                            let sid = sid.to_owned();
                            let result = result.expect("checked").clone();
                            self.state(&sid).apply_setup(&result);
                        }
                    }
                    ("session/load" | "session/resume", Some(sid)) => {
                        if let Some(result) = result.cloned() {
                            self.state(&sid).apply_setup(&result);
                        }
                    }
                    // The client's own changes, as a live view folds them.
                    ("session/set_mode", Some(sid)) => {
                        if let (Some(_), Some(mode_id)) = (result, mode_id) {
                            self.state(&sid).apply_update(serde_json::json!({
                                "sessionUpdate": "current_mode_update",
                                "currentModeId": mode_id,
                            }));
                        }
                    }
                    ("session/set_config_option", Some(sid)) => {
                        if let Some(options) = result
                            .and_then(|r| r.get("configOptions"))
                            .filter(|o| o.is_array())
                        {
                            let update = serde_json::json!({
                                "sessionUpdate": "config_option_update",
                                "configOptions": options,
                            });
                            self.state(&sid).apply_update(update);
                        }
                    }
                    _ => {}
                }
            }
            (true, Some(method), Some(key)) => {
                let sid = session_of(params.as_ref());
                if method == "session/prompt" {
                    if let Some(sid) = &sid {
                        self.state(sid).prompt_started();
                    }
                }
                let mode_id = params
                    .as_ref()
                    .and_then(|p| p.get("modeId")?.as_str())
                    .map(str::to_owned);
                self.ours.insert(
                    key,
                    Ours {
                        method,
                        sid,
                        mode_id,
                    },
                );
            }
            (true, None, Some(key)) => {
                if let Some(sid) = self.theirs.remove(&key) {
                    self.state(&sid).request_settled(&key);
                }
            }
            _ => {}
        }
    }
}

/// Fold the NDJSON trace records in `text`; returns
/// `{"sessions":{sessionId: state}}` as JSON text. Lines that are not
/// trace records (a recording's header, blank lines) are skipped; so are
/// payloads that are not JSON.
pub fn fold_recording(text: &str, options: ViewOptions) -> String {
    let mut replay = Replay {
        options,
        ..Default::default()
    };
    for line in text.lines() {
        let Ok(Value::Object(record)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let sent = match record.get("direction").and_then(Value::as_str) {
            Some("send") => true,
            Some("receive") => false,
            _ => continue,
        };
        let Some(payload) = record.get("payload").and_then(Value::as_str) else {
            continue;
        };
        if let Ok(msg) = serde_json::from_str::<Value>(payload) {
            replay.message(sent, msg);
        }
    }
    // Serialized from the states where they are: a copy as JSON values
    // first held every session twice (up to `maxTotalBytes` each).
    #[derive(Serialize)]
    struct Out<'a> {
        #[serde(serialize_with = "whole_states")]
        sessions: &'a BTreeMap<String, SessionState>,
    }
    fn whole_states<S: Serializer>(
        sessions: &&BTreeMap<String, SessionState>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(sessions.iter().map(|(id, state)| (id, state.whole())))
    }
    serde_json::to_string(&Out {
        sessions: &replay.sessions,
    })
    .expect("a state always serializes")
}
