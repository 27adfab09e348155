//! Fold a recording offline: NDJSON trace records (what `acp-native
//! record` and `client.saveHistory()` write) in wire order, every session
//! in it, by the same rules as a live view. Used by `acp-native export`
//! and by the property test against the JS reference fold.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::bounded::{self, Caps};
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

/// A message's members, their values as text: parsed only as far as the
/// fold needs (and then within the view's limits, see [`bounded`]), as a
/// live view does; a whole payload parsed as one tree refused a value
/// nested deeper than 128 and made trees of any size.
type Members<'a> = BTreeMap<String, &'a RawValue>;

/// `params.sessionId`, when `params` is an object with a string there.
fn session_of(params: Option<&RawValue>) -> Option<String> {
    #[derive(Deserialize)]
    struct P {
        #[serde(rename = "sessionId")]
        session_id: Option<Value>,
    }
    let params = params?.get();
    if !params.trim_start().starts_with('{') {
        return None;
    }
    match serde_json::from_str::<P>(params).ok()?.session_id? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// A member of an object's text, if the text is an object that has it.
fn member<'a>(object: Option<&'a RawValue>, key: &str) -> Option<Option<&'a RawValue>> {
    let object = object?.get();
    if !object.trim_start().starts_with('{') {
        return None;
    }
    let members = serde_json::from_str::<Members<'a>>(object).ok()?;
    Some(members.get(key).copied())
}

impl Replay {
    fn state(&mut self, id: &str) -> &mut SessionState {
        let options = self.options;
        self.sessions
            .entry(id.to_owned())
            .or_insert_with(|| SessionState::new(id, options))
    }

    fn parse(&self, raw: &RawValue) -> Value {
        bounded::parse(raw.get(), Caps::of(&self.options))
    }

    fn message(&mut self, sent: bool, msg: &Members<'_>) {
        let method = msg
            .get("method")
            .and_then(|m| serde_json::from_str::<String>(m.get()).ok());
        let id = msg.get("id").map(|id| self.parse(id));
        let key = id.as_ref().map(Value::to_string);
        let params = msg.get("params").copied();
        match (sent, method, key) {
            (false, Some(method), None) if method == "session/update" => {
                let Some(sid) = session_of(params) else {
                    return;
                };
                // As text, like a live view gets it (its fast path included).
                let update = member(params, "update").flatten();
                self.state(&sid)
                    .apply_update_json(update.map(RawValue::get));
            }
            (false, Some(method), Some(key)) => {
                let Some(sid) = session_of(params) else {
                    return;
                };
                let params = params.map_or(Value::Null, |p| self.parse(p));
                let wire_id = id.unwrap_or(Value::Null);
                self.state(&sid)
                    .request_waiting(key.clone(), wire_id, &method, params);
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
                let result = msg
                    .get("result")
                    .filter(|_| !msg.contains_key("error"))
                    .map(|r| self.parse(r));
                match (method.as_str(), sid) {
                    ("session/prompt", Some(sid)) => self.state(&sid).prompt_ended(result.as_ref()),
                    ("session/new", _) => {
                        if let Some(sid) =
                            result.as_ref().and_then(|r| r.get("sessionId")?.as_str())
                        {
                            let sid = sid.to_owned();
                            let result = result.expect("checked");
                            self.state(&sid).apply_setup(&result);
                        }
                    }
                    ("session/load" | "session/resume", Some(sid)) => {
                        if let Some(result) = result {
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
                            .as_ref()
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
                let sid = session_of(params);
                if method == "session/prompt" {
                    if let Some(sid) = &sid {
                        self.state(sid).prompt_started();
                    }
                }
                let mode_id = member(params, "modeId")
                    .flatten()
                    .and_then(|m| serde_json::from_str::<String>(m.get()).ok());
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
        if let Ok(msg) = serde_json::from_str::<Members<'_>>(payload) {
            replay.message(sent, &msg);
        }
    }
    // Serialized from the states where they are: a copy as JSON values
    // would hold every session twice (up to `maxTotalBytes` each).
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
