//! A stored view brought back into a live one: its entries and
//! session-wide fields folded in again as the updates that made them,
//! skipping what the live view already has (an agent's `session/load`
//! replays history the store also kept: no entry twice).

use serde_json::{json, Map, Value};

use super::state::SessionState;

/// What identifies an entry across a store and a replay: its kind and
/// text, or its tool call id.
fn entry_key(kind: &str, entry: &Value) -> String {
    if let Some(id) = entry.get("toolCallId").and_then(Value::as_str) {
        return format!("tool_call\u{0}{id}");
    }
    let mut key = format!("{kind}\u{0}");
    if let Some(blocks) = entry.get("content").and_then(Value::as_array) {
        for b in blocks {
            match b.get("text").and_then(Value::as_str) {
                Some(t) => key.push_str(t),
                None => key.push_str(&b.to_string()),
            }
        }
    }
    if let Some(body) = entry.get("notice").or_else(|| entry.get("update")) {
        key.push_str(&body.to_string());
    }
    key
}

fn chunk_variant(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "user" => "user_message_chunk",
        "agent" => "agent_message_chunk",
        "thought" => "agent_thought_chunk",
        _ => return None,
    })
}

/// The updates that fold an entry of a stored view again.
fn entry_updates(entry: &Value, stored: &Value, out: &mut Vec<Value>) {
    let kind = entry.get("kind").and_then(Value::as_str).unwrap_or("");
    if let Some(variant) = chunk_variant(kind) {
        let blocks = entry.get("content").and_then(Value::as_array);
        for (i, block) in blocks.into_iter().flatten().enumerate() {
            let mut u = match entry.get("extra") {
                Some(Value::Object(extra)) if i == 0 => extra.clone(),
                _ => Map::new(),
            };
            u.insert("sessionUpdate".into(), variant.into());
            u.insert("content".into(), block.clone());
            if let Some(id) = entry.get("messageId") {
                u.insert("messageId".into(), id.clone());
            }
            out.push(Value::Object(u));
        }
        return;
    }
    match kind {
        "tool_call" => {
            let Some(id) = entry.get("toolCallId").and_then(Value::as_str) else {
                return;
            };
            let mut u = stored
                .pointer(&format!(
                    "/toolCalls/{}",
                    id.replace('~', "~0").replace('/', "~1")
                ))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            u.insert("sessionUpdate".into(), "tool_call".into());
            u.insert("toolCallId".into(), id.into());
            out.push(Value::Object(u));
        }
        "notice" => {
            if let Some(Value::Object(n)) = entry.get("notice") {
                let mut u = n.clone();
                u.insert("sessionUpdate".into(), "notice".into());
                out.push(Value::Object(u));
            }
        }
        "unknown" => {
            if let Some(u) = entry.get("update") {
                out.push(u.clone());
            }
        }
        // A compaction's summary is the agent's: not ours to replay.
        _ => {}
    }
}

/// The session-wide fields of a stored view as updates.
fn field_updates(stored: &Value, out: &mut Vec<Value>) {
    let merge = |variant: &str, key: &str, out: &mut Vec<Value>| {
        if let Some(Value::Object(fields)) = stored.get(key) {
            if !fields.is_empty() {
                let mut u = fields.clone();
                u.insert("sessionUpdate".into(), variant.into());
                out.push(Value::Object(u));
            }
        }
    };
    if let Some(Value::Object(plan)) = stored.get("plan") {
        let mut u = plan.clone();
        u.insert("sessionUpdate".into(), "plan".into());
        out.push(Value::Object(u));
    }
    merge("current_mode_update", "modes", out);
    merge("config_option_update", "config", out);
    merge("available_commands_update", "commands", out);
    merge("session_info_update", "info", out);
    merge("usage_update", "usage", out);
}

/// Consecutive entries of one kind, their text joined: a live view
/// without the prompts merges a session's agent messages that a replay
/// (with the prompts between them) keeps apart, so entries are compared
/// run by run, prompts left out.
struct Run {
    key: String,
    text: String,
    kind: String,
    /// Indexes of the stored entries in it.
    members: Vec<usize>,
}

fn text_of(entry: &Value) -> String {
    let mut t = String::new();
    if let Some(blocks) = entry.get("content").and_then(Value::as_array) {
        for b in blocks {
            match b.get("text").and_then(Value::as_str) {
                Some(s) => t.push_str(s),
                None => t.push_str(&b.to_string()),
            }
        }
    }
    t
}

fn runs<'a>(entries: impl Iterator<Item = &'a Value>) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    for (i, e) in entries.enumerate() {
        let kind = e
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if kind == "user" {
            continue;
        }
        let mergeable = chunk_variant(&kind).is_some();
        match out.last_mut() {
            Some(last) if mergeable && last.kind == kind => {
                last.text.push_str(&text_of(e));
                last.members.push(i);
            }
            _ => out.push(Run {
                key: if mergeable {
                    String::new()
                } else {
                    entry_key(&kind, e)
                },
                text: if mergeable { text_of(e) } else { String::new() },
                kind,
                members: vec![i],
            }),
        }
    }
    out
}

impl SessionState {
    /// Fold the stored view `stored` (a snapshot's JSON) into this one,
    /// after what this one holds, skipping what it already has (a
    /// replayed history matches the stored one run by run, in order; a
    /// run the replay has only the start of gets the rest). With
    /// `interrupted`, a notice says the stored last turn was cut. Returns
    /// how many entries (or rests of one) were restored.
    pub fn restore(&mut self, stored: &Value, interrupted: Option<&str>) -> usize {
        let live: Vec<Value> = self
            .entries
            .iter()
            .map(|e| {
                serde_json::to_value(super::json::EntryJson(
                    e,
                    None,
                    super::json::Texts::Inline,
                    None,
                ))
                .unwrap_or(Value::Null)
            })
            .collect();
        let live_users: Vec<String> = live
            .iter()
            .filter(|e| e.get("kind").and_then(Value::as_str) == Some("user"))
            .map(text_of)
            .collect();
        let live_runs = runs(live.iter());
        let none = Vec::new();
        let entries = stored
            .get("entries")
            .and_then(Value::as_array)
            .unwrap_or(&none);
        let mut skip = vec![false; entries.len()];
        let mut tails: Vec<(usize, String)> = Vec::new();
        let mut next = 0;
        for run in runs(entries.iter()) {
            let found = live_runs[next..].iter().position(|l| {
                l.kind == run.kind
                    && l.key == run.key
                    && (l.text.starts_with(&run.text)
                        || (!l.text.is_empty() && run.text.starts_with(&l.text)))
            });
            if let Some(at) = found {
                let l = &live_runs[next + at];
                next += at + 1;
                for &m in &run.members {
                    skip[m] = true;
                }
                if l.text.len() < run.text.len() {
                    let last = *run.members.last().expect("a run has members");
                    tails.push((last, run.text[l.text.len()..].to_string()));
                }
            }
        }
        // Prompts: a live view that has some (a replay) keeps its own.
        let mut users = live_users.into_iter();
        for (i, e) in entries.iter().enumerate() {
            if e.get("kind").and_then(Value::as_str) == Some("user") {
                let t = text_of(e);
                skip[i] = users.any(|u| u == t);
            }
        }
        let mut updates = Vec::new();
        let mut restored = 0;
        for (i, entry) in entries.iter().enumerate() {
            if let Some((_, rest)) = tails.iter().find(|(at, _)| *at == i) {
                let kind = entry.get("kind").and_then(Value::as_str).unwrap_or("");
                if let Some(variant) = chunk_variant(kind) {
                    updates.push(json!({"sessionUpdate": variant, "content": {"type": "text", "text": rest}}));
                    restored += 1;
                }
                continue;
            }
            if skip[i] {
                continue;
            }
            let before = updates.len();
            entry_updates(entry, stored, &mut updates);
            restored += usize::from(updates.len() > before);
        }
        field_updates(stored, &mut updates);
        if let Some(why) = interrupted {
            updates.push(json!({
                "sessionUpdate": "notice",
                "severity": "warning",
                "title": "Turn interrupted",
                "message": why,
            }));
        }
        for u in updates {
            self.apply_update(u);
        }
        if let Some(reason) = stored.get("stopReason").filter(|r| !r.is_null()) {
            self.stop_reason = reason.clone();
            self.changes.stop_reason = true;
        }
        restored
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::ViewOptions;

    fn folded(updates: &[Value]) -> SessionState {
        let mut s = SessionState::new("s", ViewOptions::default());
        for u in updates {
            s.apply_update(u.clone());
        }
        s
    }

    fn texts(s: &SessionState) -> Vec<(String, String)> {
        let v = s.snapshot_value();
        v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let kind = e["kind"].as_str().unwrap().to_string();
                let text = e["content"][0]["text"].as_str().unwrap_or("").to_string();
                (kind, text)
            })
            .collect()
    }

    fn history() -> Vec<Value> {
        vec![
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}),
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "one"}}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read", "status": "completed"}),
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "m2", "content": {"type": "text", "text": "two"}}),
            json!({"sessionUpdate": "plan", "entries": [{"content": "x", "status": "pending", "priority": "low"}]}),
        ]
    }

    #[test]
    fn a_restored_view_is_the_stored_one() {
        let stored = folded(&history()).snapshot_value();
        let mut fresh = SessionState::new("s2", ViewOptions::default());
        assert_eq!(fresh.restore(&stored, None), 4);
        let v = fresh.snapshot_value();
        assert_eq!(v["entries"], stored["entries"]);
        assert_eq!(v["toolCalls"], stored["toolCalls"]);
        assert_eq!(v["plan"], stored["plan"]);
    }

    #[test]
    fn a_replayed_history_is_not_restored_twice() {
        // The store has the whole history; the agent replays its first
        // part (it lost the rest): the rest is restored after it, once.
        let stored = folded(&history()).snapshot_value();
        let mut live = folded(&history()[..2]);
        assert_eq!(live.restore(&stored, None), 2);
        assert_eq!(
            texts(&live),
            [
                ("user", "hi"),
                ("agent", "one"),
                ("tool_call", ""),
                ("agent", "two")
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        // Everything replayed: nothing restored.
        let mut live = folded(&history());
        assert_eq!(live.restore(&stored, None), 0);
        assert_eq!(live.snapshot_value()["entries"], stored["entries"]);
    }

    #[test]
    fn a_replay_with_prompts_matches_a_live_view_without_them() {
        // Live: two turns' agent text merged in one entry (no prompts
        // between them); the replay has the prompts and the first turn and
        // the start of the second.
        let say = |t: &str| json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}});
        let ask = |t: &str| json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": t}});
        let stored = folded(&[say("before"), say("partial turn")]).snapshot_value();
        let mut live = folded(&[ask("q1"), say("before"), ask("q2"), say("partial")]);
        assert_eq!(live.restore(&stored, None), 1);
        let t = texts(&live);
        let agent: String = t
            .iter()
            .filter(|(k, _)| k == "agent")
            .map(|(_, t)| t.as_str())
            .collect();
        assert_eq!(agent, "beforepartial turn");
    }

    #[test]
    fn a_replay_longer_than_the_store_adds_nothing() {
        // The agent kept more than the host read before it died.
        let say = |t: &str| json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}});
        let ask = |t: &str| json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": t}});
        let stored = folded(&[say("before"), say("part")]).snapshot_value();
        let mut live = folded(&[ask("q1"), say("before"), ask("q2"), say("partial and more")]);
        assert_eq!(live.restore(&stored, None), 0);
    }

    #[test]
    fn an_interrupted_turn_is_marked() {
        let stored = folded(&history()).snapshot_value();
        let mut fresh = SessionState::new("s2", ViewOptions::default());
        fresh.restore(&stored, Some("the agent exited (SIGKILL)"));
        let v = fresh.snapshot_value();
        let last = v["entries"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["kind"], "notice");
        assert_eq!(last["notice"]["title"], "Turn interrupted");
    }
}
