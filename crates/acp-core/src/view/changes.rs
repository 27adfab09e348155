//! What changed since the host last drained a view, coalesced: many chunks
//! appended to one message become one `appended` text, many updates of one
//! tool call one `toolCalls` value. Applying a drain to the state the host
//! had gives the current state (`applyChanges` in `lib/session-fold.js`;
//! a property test checks it).
//!
//! A drain is a JSON object with only the keys that changed:
//! - `newEntries`: entries created since the last drain, whole;
//! - `appended`: `[{index, text}]`, text appended to the last (text) block
//!   of an entry the host already has;
//! - `updatedEntries`: other entries the host has that changed, whole;
//! - `firstIndex`, `droppedEntries`: entries before `firstIndex` are gone;
//! - `toolCalls`, `compactions`: the changed ones by id, whole;
//! - `plan`, `modes`, `config`, `commands`, `info`, `usage`, `stopReason`,
//!   `running`, `pending`, `droppedKeys`: the new value.

use std::collections::BTreeSet;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{Map, Value};

use super::state::{Entry, EntryJson, PendingJson, SessionState};

#[derive(Debug, Default)]
pub(crate) struct ChangeSet {
    pub dirty: bool,
    /// Entries created or changed.
    pub entries: BTreeSet<u64>,
    /// Old entries were dropped by `max_entries`.
    pub removed: bool,
    pub tool_calls: BTreeSet<String>,
    pub compactions: BTreeSet<String>,
    pub plan: bool,
    pub modes: bool,
    pub config: bool,
    pub commands: bool,
    pub info: bool,
    pub usage: bool,
    pub stop_reason: bool,
    pub running: bool,
    pub pending: bool,
    /// Entries from this index on are new to the host.
    pub first_new: u64,
    pub dropped_keys_seen: u64,
}

/// The last block's text, when it is text-only.
fn last_text(entry: &Entry) -> Option<&str> {
    let obj = entry.content.last()?.as_object()?;
    if obj.len() != 2 || obj.get("type")?.as_str()? != "text" {
        return None;
    }
    obj.get("text")?.as_str()
}

enum EntryChange<'a> {
    New(&'a Entry),
    Appended(u64, &'a str),
    Updated(&'a Entry),
}

impl SessionState {
    /// What changed since the last drain, as JSON text (see the module
    /// docs); `None` when nothing did. Resets the change set.
    pub fn drain_json(&mut self) -> Option<String> {
        if !self.changes.dirty {
            return None;
        }
        let text = serde_json::to_string(&Drain(self)).expect("a drain always serializes");
        let touched = std::mem::take(&mut self.changes.entries);
        for index in touched {
            if let Some(first) = self.entries.front().map(|e| e.index) {
                if index >= first {
                    if let Some(entry) = self.entries.get_mut((index - first) as usize) {
                        entry.seen_blocks = entry.content.len();
                        entry.seen_text = last_text(entry).map_or(0, str::len);
                        entry.seen_dropped = entry.dropped_bytes + entry.dropped_blocks;
                        entry.seen_other = false;
                    }
                }
            }
        }
        let first_new = self.next_index;
        let dropped_keys_seen = self.dropped_keys;
        self.changes = Default::default();
        self.changes.first_new = first_new;
        self.changes.dropped_keys_seen = dropped_keys_seen;
        Some(text)
    }

    fn entry_changes(&self) -> Vec<EntryChange<'_>> {
        let Some(first) = self.entries.front().map(|e| e.index) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(self.changes.entries.len());
        for &index in self.changes.entries.range(first..) {
            let Some(entry) = self.entries.get((index - first) as usize) else {
                continue;
            };
            if index >= self.changes.first_new {
                out.push(EntryChange::New(entry));
                continue;
            }
            let unchanged_shape = entry.content.len() == entry.seen_blocks
                && entry.seen_blocks > 0
                && !entry.seen_other
                && entry.seen_dropped == entry.dropped_bytes + entry.dropped_blocks;
            match last_text(entry) {
                Some(text) if unchanged_shape && text.len() >= entry.seen_text => {
                    if text.len() > entry.seen_text {
                        out.push(EntryChange::Appended(index, &text[entry.seen_text..]));
                    }
                }
                _ => out.push(EntryChange::Updated(entry)),
            }
        }
        out
    }
}

struct Drain<'a>(&'a SessionState);

struct Appended<'a>(u64, &'a str);

impl Serialize for Appended<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("index", &self.0)?;
        m.serialize_entry("text", self.1)?;
        m.end()
    }
}

struct Picked<'a>(
    &'a std::collections::HashMap<String, super::state::Keyed>,
    &'a BTreeSet<String>,
);

impl Serialize for Picked<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for id in self.1 {
            if let Some(k) = self.0.get(id) {
                m.serialize_entry(id, &k.fields)?;
            }
        }
        m.end()
    }
}

impl Serialize for Drain<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let st = self.0;
        let c = &st.changes;
        let mut m = s.serialize_map(None)?;
        let changes = st.entry_changes();
        let mut new = Vec::new();
        let mut appended = Vec::new();
        let mut updated = Vec::new();
        for change in changes {
            match change {
                EntryChange::New(e) => new.push(EntryJson(e)),
                EntryChange::Appended(i, t) => appended.push(Appended(i, t)),
                EntryChange::Updated(e) => updated.push(EntryJson(e)),
            }
        }
        if !new.is_empty() {
            m.serialize_entry("newEntries", &new)?;
        }
        if !appended.is_empty() {
            m.serialize_entry("appended", &appended)?;
        }
        if !updated.is_empty() {
            m.serialize_entry("updatedEntries", &updated)?;
        }
        if c.removed {
            let first = st.entries.front().map_or(st.next_index, |e| e.index);
            m.serialize_entry("firstIndex", &first)?;
            m.serialize_entry("droppedEntries", &st.dropped_entries)?;
        }
        let tools: Vec<_> = c
            .tool_calls
            .iter()
            .filter(|id| st.tool_calls.contains_key(*id))
            .collect();
        if !tools.is_empty() {
            m.serialize_entry("toolCalls", &Picked(&st.tool_calls, &c.tool_calls))?;
        }
        if c.compactions
            .iter()
            .any(|id| st.compactions.contains_key(id))
        {
            m.serialize_entry("compactions", &Picked(&st.compactions, &c.compactions))?;
        }
        let fields: [(bool, &str, &dyn ErasedValue); 7] = [
            (c.plan, "plan", &st.plan),
            (c.modes, "modes", &st.modes),
            (c.config, "config", &st.config),
            (c.commands, "commands", &st.commands),
            (c.info, "info", &st.info),
            (c.usage, "usage", &st.usage),
            (c.stop_reason, "stopReason", &st.stop_reason),
        ];
        for (changed, key, value) in fields {
            if changed {
                m.serialize_entry(key, &Erased(value))?;
            }
        }
        if c.running {
            m.serialize_entry("running", &st.running)?;
        }
        if c.pending {
            m.serialize_entry("pending", &PendingJson(&st.pending))?;
        }
        if st.dropped_keys != c.dropped_keys_seen {
            m.serialize_entry("droppedKeys", &st.dropped_keys)?;
        }
        m.end()
    }
}

/// The state's fields have a few different types; serialize any of them.
trait ErasedValue {
    fn to_value(&self) -> Value;
}

impl ErasedValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl ErasedValue for Map<String, Value> {
    fn to_value(&self) -> Value {
        Value::Object(self.clone())
    }
}

impl ErasedValue for Option<Map<String, Value>> {
    fn to_value(&self) -> Value {
        self.clone().map_or(Value::Null, Value::Object)
    }
}

struct Erased<'a>(&'a dyn ErasedValue);

impl Serialize for Erased<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.to_value().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::view::{SessionState, ViewOptions};

    fn chunk(text: &str) -> String {
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
            .to_string()
    }

    fn drain(s: &mut SessionState) -> Value {
        serde_json::from_str(&s.drain_json().expect("changed")).unwrap()
    }

    #[test]
    fn text_is_appended_then_new_entries_whole_then_nothing() {
        let mut s = SessionState::new("s", ViewOptions::default());
        s.apply_update_json(Some(&chunk("Hel")));
        let first = drain(&mut s);
        assert_eq!(first["newEntries"][0]["content"][0]["text"], "Hel");
        s.apply_update_json(Some(&chunk("lo")));
        s.apply_update_json(Some(&chunk(", world")));
        let second = drain(&mut s);
        assert_eq!(
            second,
            json!({"appended": [{"index": 0, "text": "lo, world"}]})
        );
        assert!(s.drain_json().is_none(), "nothing changed since");
        // A block that is not text-only: the whole entry.
        s.apply_update_json(Some(
            &json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": ""}})
                .to_string(),
        ));
        let third = drain(&mut s);
        assert_eq!(third["updatedEntries"][0]["content"][1]["type"], "image");
        assert!(third.get("appended").is_none());
    }

    #[test]
    fn the_change_set_stays_bounded_without_drains() {
        let options = ViewOptions {
            max_entries: 3,
            ..Default::default()
        };
        let mut s = SessionState::new("s", options);
        for i in 0..10_000 {
            let update =
                json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{i}"), "title": "x"});
            s.apply_update_json(Some(&update.to_string()));
        }
        assert_eq!(s.changes.entries.len(), 3);
        assert_eq!(s.changes.tool_calls.len(), 3);
        let d = drain(&mut s);
        assert_eq!(d["firstIndex"], 9997);
        assert_eq!(d["droppedEntries"], 9997);
        assert_eq!(d["newEntries"].as_array().unwrap().len(), 3);
        assert_eq!(d["toolCalls"].as_object().unwrap().len(), 3);
    }

    #[test]
    fn fast_and_general_paths_agree() {
        let updates = [
            chunk("a"),
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": "b"}}).to_string(),
            json!({"sessionUpdate": "agent_message_chunk", "messageId": null, "content": {"type": "text", "text": "c"}}).to_string(),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "d"}, "_meta": {}}).to_string(),
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"e","text":"f"}}"#.to_string(),
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\u00e9\n"}}"#.to_string(),
        ];
        let mut fast = SessionState::new("s", ViewOptions::default());
        let mut general = SessionState::new("s", ViewOptions::default());
        for u in &updates {
            fast.apply_update_json(Some(u));
            general.apply_update(serde_json::from_str(u).unwrap());
        }
        assert_eq!(fast.snapshot_value(), general.snapshot_value());
        assert_eq!(
            fast.snapshot_value()["entries"].as_array().unwrap().len(),
            5
        );
    }
}
