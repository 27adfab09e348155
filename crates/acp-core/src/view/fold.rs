//! The fold: how each `session/update` changes a [`SessionState`].
//!
//! The rules (mirrored by `lib/session-fold.js`, compared by a property test):
//! - `user_message_chunk` / `agent_message_chunk` / `agent_thought_chunk`
//!   continue the last entry when it is of the same kind with the same
//!   `messageId` (both absent counts as the same), else start a new entry.
//!   A text-only block (`{type:"text",text}`) is appended to a text-only
//!   last block; any other block is pushed as it came. Fields of the update
//!   other than `content`/`messageId` are merged into the entry's `extra`.
//! - `tool_call` / `tool_call_update` merge into the tool call with that
//!   `toolCallId` (created, with an entry, the first time the id is seen);
//!   `tool_call_update` leaves a field unchanged when it is `null`.
//! - `plan` replaces the plan; `current_mode_update`, `config_option_update`,
//!   `available_commands_update`, `session_info_update` and `usage_update`
//!   merge their fields into `modes`, `config`, `commands`, `info`, `usage`.
//! - `notice` is an entry; `compaction_update` merges into the compaction
//!   with that id (an entry the first time), `compaction_summary_chunk`
//!   appends to that compaction entry's content like a message chunk.
//! - Anything else (unknown variant, missing or mistyped key fields) is
//!   kept whole as an `unknown` entry. Unknown fields are merged like known
//!   ones: nothing is dropped except by the limits of [`super::state`].

use std::collections::{BTreeSet, VecDeque};

use serde_json::{Map, Value};

use super::size;
use super::state::{
    text_fits, text_only, text_only_mut, Entry, EntryKind, Keyed, Pending, SessionState,
    ViewOptions,
};

/// A session-wide object that updates merge into.
#[derive(Clone, Copy)]
enum Field {
    Modes,
    Config,
    Commands,
    Info,
    Usage,
}

/// What a merge may add: keys to the object, bytes to its entry.
#[derive(Clone, Copy)]
struct Room {
    keys: usize,
    /// The most `bytes` (see [`merge`]) may become by growing.
    bytes: usize,
}

impl Room {
    /// A session-wide object (not an entry): `max_keys` keys and
    /// `max_total_bytes` of its own.
    fn field(options: &ViewOptions) -> Self {
        Self {
            keys: options.max_keys,
            bytes: options.max_total_bytes,
        }
    }

    /// Into `entry` (its `other_bytes`): keys, and the entry's bytes
    /// within `max_total_bytes`.
    fn entry(entry: &Entry, options: &ViewOptions) -> Self {
        Self {
            keys: options.max_keys,
            bytes: options.max_total_bytes.saturating_sub(entry.text_bytes),
        }
    }
}

/// Merge `from` into `into` (except `skip` keys); `keep_null`: a `null`
/// value is assigned rather than meaning "unchanged". When the new keys
/// would not all fit under `room.keys`, none of them is added (so the
/// outcome does not depend on key order) and they are counted in `dropped`.
/// `bytes` (what `into` counts, see [`size`]) follows what is added and
/// replaced; a merge that would grow it past `room.bytes` changes nothing
/// (all its keys are counted in `dropped`). True when `into` changed: a
/// key added, or a value replaced by a different one (the drain sends what
/// changed, so an update that changes nothing must not make it resend a
/// tool call or an entry of megabytes). `changed_keys` gets the keys
/// added or replaced.
#[allow(clippy::too_many_arguments)]
fn merge(
    into: &mut Map<String, Value>,
    from: Map<String, Value>,
    skip: &[&str],
    keep_null: bool,
    room: Room,
    dropped: &mut u64,
    bytes: &mut usize,
    changed_keys: &mut BTreeSet<String>,
) -> bool {
    let wanted = |k: &String, v: &Value| !skip.contains(&k.as_str()) && (keep_null || !v.is_null());
    let new = from
        .iter()
        .filter(|(k, v)| wanted(k, v) && !into.contains_key(*k))
        .count();
    let keys_fit = into.len() + new <= room.keys;
    // What the merge would add and take away.
    let (mut count, mut grown, mut shrunk) = (0, 0, 0);
    for (k, v) in from.iter().filter(|(k, v)| wanted(k, v)) {
        count += 1;
        match into.get(k) {
            Some(old) => {
                grown += size::value(v);
                shrunk += size::value(old);
            }
            None if keys_fit => grown += size::member(k, v),
            None => {}
        }
    }
    if grown > shrunk && *bytes + (grown - shrunk) > room.bytes {
        *dropped += count;
        return false;
    }
    if !keys_fit {
        *dropped += new as u64;
    }
    *bytes = (*bytes + grown).saturating_sub(shrunk);
    let mut changed = false;
    for (k, v) in from {
        if !wanted(&k, &v) {
            continue;
        }
        let replaced = match into.get_mut(&k) {
            Some(slot) if *slot != v => {
                *slot = v;
                true
            }
            Some(_) => false,
            None if keys_fit => {
                into.insert(k.clone(), v);
                true
            }
            None => false,
        };
        if replaced {
            changed = true;
            changed_keys.insert(k);
        }
    }
    changed
}

impl SessionState {
    /// Fold one `session/update`'s `update` value.
    pub fn apply_update(&mut self, update: Value) {
        self.changes.dirty = true;
        let Value::Object(mut obj) = update else {
            return self.push_unknown(update);
        };
        let Some(variant) = obj.get("sessionUpdate").and_then(Value::as_str) else {
            return self.push_unknown(Value::Object(obj));
        };
        match variant {
            "user_message_chunk" => self.chunk(EntryKind::User, obj),
            "agent_message_chunk" => self.chunk(EntryKind::Agent, obj),
            "agent_thought_chunk" => self.chunk(EntryKind::Thought, obj),
            "tool_call" => self.keyed(obj, "toolCallId", true),
            "tool_call_update" => self.keyed(obj, "toolCallId", false),
            "compaction_update" => self.keyed(obj, "compactionId", false),
            "compaction_summary_chunk" => self.summary_chunk(obj),
            "plan" => {
                obj.remove("sessionUpdate");
                self.plan = Value::Object(obj);
                self.changes.plan = true;
            }
            "current_mode_update" => self.merge_field(Field::Modes, obj, &["sessionUpdate"]),
            "config_option_update" => self.merge_field(Field::Config, obj, &["sessionUpdate"]),
            "available_commands_update" => {
                self.merge_field(Field::Commands, obj, &["sessionUpdate"]);
            }
            "session_info_update" => self.merge_field(Field::Info, obj, &["sessionUpdate"]),
            "usage_update" => {
                if self.usage.is_none() {
                    // From null to {}: a change even if the merge adds nothing.
                    self.usage = Some(Map::new());
                    self.changes.usage.whole = true;
                }
                self.merge_field(Field::Usage, obj, &["sessionUpdate"]);
            }
            "notice" => {
                obj.remove("sessionUpdate");
                self.push_whole(EntryKind::Notice, Value::Object(obj));
            }
            _ => self.push_unknown(Value::Object(obj)),
        }
    }

    /// Merge into a session-wide object, within its keys and bytes.
    fn merge_field(&mut self, field: Field, obj: Map<String, Value>, skip: &[&str]) {
        let room = Room::field(&self.options);
        let (into, bytes, changed) = match field {
            Field::Modes => (
                &mut self.modes,
                &mut self.field_bytes.modes,
                &mut self.changes.modes,
            ),
            Field::Config => (
                &mut self.config,
                &mut self.field_bytes.config,
                &mut self.changes.config,
            ),
            Field::Commands => (
                &mut self.commands,
                &mut self.field_bytes.commands,
                &mut self.changes.commands,
            ),
            Field::Info => (
                &mut self.info,
                &mut self.field_bytes.info,
                &mut self.changes.info,
            ),
            Field::Usage => (
                self.usage.get_or_insert_with(Map::new),
                &mut self.field_bytes.usage,
                &mut self.changes.usage,
            ),
        };
        merge(
            into,
            obj,
            skip,
            true,
            room,
            &mut self.dropped_keys,
            bytes,
            &mut changed.keys,
        );
    }

    fn push_unknown(&mut self, update: Value) {
        self.push_whole(EntryKind::Unknown, update);
    }

    /// A notice or unknown entry: `body` is all it holds.
    fn push_whole(&mut self, kind: EntryKind, body: Value) {
        let bytes = size::value(&body);
        let entry = self.push_entry(kind);
        entry.body = Some(body);
        entry.other_bytes = bytes;
        let index = entry.index;
        self.total_bytes += bytes;
        self.fit(index);
    }

    /// The entry a message chunk goes into: the last one when the chunk
    /// `continues` it (marked changed), else a new one with the id
    /// `message_id` makes (only then: the hot path allocates nothing).
    /// The caller [`fit`](Self::fit)s the entries after adding to it.
    pub(crate) fn message_entry(
        &mut self,
        kind: EntryKind,
        continues: bool,
        message_id: impl FnOnce() -> Option<Value>,
    ) -> &mut Entry {
        if continues && !self.new_turn {
            let entry = self.entries.back_mut().expect("continues: an entry exists");
            self.changes.entries.insert(entry.index);
            entry
        } else {
            let id = message_id();
            let bytes = id.as_ref().map_or(0, size::value);
            self.total_bytes += bytes;
            let entry = self.push_entry(kind);
            entry.message_id = id;
            entry.other_bytes = bytes;
            entry
        }
    }

    /// A new entry at the end; the caller [`fit`](Self::fit)s the entries
    /// once the update is in it.
    pub(crate) fn push_entry(&mut self, kind: EntryKind) -> &mut Entry {
        let index = self.next_index;
        self.next_index += 1;
        self.new_turn = false;
        self.changes.entries.insert(index);
        self.entries.push_back(Entry::new(index, kind));
        self.entries.back_mut().expect("just pushed")
    }

    /// The entry `index` went from `before` to `after` bytes: count it, and
    /// [`fit`](Self::fit).
    fn resized(&mut self, index: u64, before: usize, after: usize) {
        self.total_bytes = (self.total_bytes + after).saturating_sub(before);
        self.fit(index);
    }

    /// The oldest entries go while there are more than `max_entries` or
    /// they hold more than `max_total_bytes`, with the tool call or
    /// compaction they introduced; never the entry `keep` (the one the
    /// update went into), so the loop stops at it.
    #[inline]
    pub(crate) fn fit(&mut self, keep: u64) {
        while self.entries.len() > self.options.max_entries
            || self.total_bytes > self.options.max_total_bytes
        {
            if self.entries.front().map(|e| e.index) == Some(keep) {
                break;
            }
            let Some(old) = self.entries.pop_front() else {
                break;
            };
            self.total_bytes = self.total_bytes.saturating_sub(old.bytes());
            self.dropped_entries += 1;
            self.changes.removed = true;
            // The change set never outgrows the state, drained or not.
            self.changes.entries.remove(&old.index);
            if let Some(key) = old.key {
                let (map, changed) = match old.kind {
                    EntryKind::ToolCall => (&mut self.tool_calls, &mut self.changes.tool_calls),
                    _ => (&mut self.compactions, &mut self.changes.compactions),
                };
                if map.get(&key).is_some_and(|k| k.index == old.index) {
                    map.remove(&key);
                    changed.remove(&(old.index, key));
                }
            }
        }
    }

    fn chunk(&mut self, kind: EntryKind, mut obj: Map<String, Value>) {
        let Some(content) = obj.remove("content") else {
            obj.insert("sessionUpdate".into(), kind_variant(kind).into());
            return self.push_unknown(Value::Object(obj));
        };
        let message_id = obj.remove("messageId").filter(|v| !v.is_null());
        let continues = self
            .entries
            .back()
            .is_some_and(|last| last.kind == kind && last.message_id == message_id);
        let options = self.options;
        let mut dropped = 0;
        let entry = self.message_entry(kind, continues, || message_id);
        let before = entry.bytes();
        let room = Room::entry(entry, &options);
        merge(
            &mut entry.extra,
            obj,
            &["sessionUpdate"],
            true,
            room,
            &mut dropped,
            &mut entry.other_bytes,
            &mut entry.extra_changed,
        );
        append_block(entry, content, &options);
        let (index, after) = (entry.index, entry.bytes());
        self.dropped_keys += dropped;
        self.resized(index, before, after);
    }

    /// `tool_call`, `tool_call_update` and `compaction_update`.
    fn keyed(&mut self, obj: Map<String, Value>, id_key: &str, keep_null: bool) {
        let Some(id) = obj.get(id_key).and_then(Value::as_str).map(str::to_owned) else {
            return self.push_unknown(Value::Object(obj));
        };
        let is_tool = id_key == "toolCallId";
        let exists = if is_tool {
            self.tool_calls.contains_key(&id)
        } else {
            self.compactions.contains_key(&id)
        };
        if !exists {
            self.introduce(&id, is_tool);
        }
        let options = self.options;
        let mut dropped = 0;
        let (map, changed) = if is_tool {
            (&mut self.tool_calls, &mut self.changes.tool_calls)
        } else {
            (&mut self.compactions, &mut self.changes.compactions)
        };
        let target = map.get_mut(&id).expect("introduced");
        // Its fields count toward the entry that introduced it.
        let entry = entry_at(&mut self.entries, target.index).expect("a kept id has its entry");
        let (index, before) = (entry.index, entry.other_bytes);
        let room = Room::entry(entry, &options);
        let merged = merge(
            &mut target.fields,
            obj,
            &["sessionUpdate"],
            keep_null,
            room,
            &mut dropped,
            &mut entry.other_bytes,
            &mut target.changed,
        );
        let after = entry.other_bytes;
        // A new one is sent even when the update added nothing to its id.
        if merged || !exists {
            changed.insert((index, id));
        }
        self.dropped_keys += dropped;
        self.resized(index, before, after);
    }

    /// A tool call or compaction seen for the first time: its entry.
    fn introduce(&mut self, id: &str, is_tool: bool) {
        let kind = if is_tool {
            EntryKind::ToolCall
        } else {
            EntryKind::Compaction
        };
        let id_key = if is_tool {
            "toolCallId"
        } else {
            "compactionId"
        };
        let mut fields = Map::new();
        fields.insert(id_key.into(), id.into());
        let bytes = size::member(id_key, &fields[id_key]);
        let entry = self.push_entry(kind);
        entry.key = Some(id.to_owned());
        entry.other_bytes = bytes;
        let index = entry.index;
        self.total_bytes += bytes;
        let keyed = Keyed {
            index,
            fields,
            sent: false,
            changed: BTreeSet::new(),
        };
        if is_tool {
            self.tool_calls.insert(id.to_owned(), keyed);
            self.changes.tool_calls.insert((index, id.to_owned()));
        } else {
            self.compactions.insert(id.to_owned(), keyed);
            self.changes.compactions.insert((index, id.to_owned()));
        }
    }

    fn summary_chunk(&mut self, mut obj: Map<String, Value>) {
        let id = obj
            .get("compactionId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let (Some(id), true) = (id, obj.contains_key("content")) else {
            return self.push_unknown(Value::Object(obj));
        };
        if !self.compactions.contains_key(&id) {
            self.introduce(&id, false);
        }
        let index = self.compactions[&id].index;
        let content = obj.remove("content").expect("checked");
        let options = self.options;
        let mut dropped = 0;
        self.changes.entries.insert(index);
        let entry = entry_at(&mut self.entries, index).expect("a kept compaction has its entry");
        let before = entry.bytes();
        let room = Room::entry(entry, &options);
        merge(
            &mut entry.extra,
            obj,
            &["sessionUpdate", "compactionId"],
            true,
            room,
            &mut dropped,
            &mut entry.other_bytes,
            &mut entry.extra_changed,
        );
        append_block(entry, content, &options);
        let after = entry.bytes();
        self.dropped_keys += dropped;
        self.resized(index, before, after);
    }

    /// The result of `session/new`, `session/load` or `session/resume`:
    /// its modes and config options.
    pub fn apply_setup(&mut self, result: &Value) {
        if let Some(modes) = result.get("modes").and_then(Value::as_object) {
            self.merge_field(Field::Modes, modes.clone(), &[]);
        }
        if let Some(options) = result.get("configOptions") {
            let mut obj = Map::new();
            obj.insert("configOptions".into(), options.clone());
            self.merge_field(Field::Config, obj, &[]);
        }
        self.changes.dirty = true;
    }

    /// A `session/prompt` of this session was sent: a turn is running.
    pub fn prompt_started(&mut self) {
        self.running = true;
        self.new_turn = true;
        self.changes.running = true;
        self.changes.dirty = true;
    }

    /// The answer to a `session/prompt` (its result, or `None` for an
    /// error): no turn is running; the stop reason is the result's.
    pub fn prompt_ended(&mut self, result: Option<&Value>) {
        self.running = false;
        self.changes.running = true;
        if let Some(reason) = result.and_then(|r| r.get("stopReason")) {
            self.stop_reason = reason.clone();
            self.changes.stop_reason = true;
        }
        self.changes.dirty = true;
    }

    /// An agent request of this session now waits for the host; `key`
    /// identifies it for [`SessionState::request_settled`].
    pub fn request_waiting(&mut self, key: String, id: Value, method: &str, params: Value) {
        if self.pending.len() >= self.options.max_entries {
            self.pending.pop_front();
        }
        self.next_pending += 1;
        self.pending.push_back(Pending {
            seq: self.next_pending,
            key,
            id,
            method: method.to_string(),
            params,
        });
        self.changes.pending = true;
        self.changes.dirty = true;
    }

    /// The request `key` was answered (by the host or for it).
    pub fn request_settled(&mut self, key: &str) -> bool {
        let before = self.pending.len();
        self.pending.retain(|p| p.key != key);
        let changed = self.pending.len() != before;
        if changed {
            self.changes.pending = true;
            self.changes.dirty = true;
        }
        changed
    }
}

fn kind_variant(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::User => "user_message_chunk",
        EntryKind::Agent => "agent_message_chunk",
        _ => "agent_thought_chunk",
    }
}

/// The kept entry `index`, found in `entries` (a field borrow, so the
/// caller may hold other fields of the state).
fn entry_at(entries: &mut VecDeque<Entry>, index: u64) -> Option<&mut Entry> {
    let first = entries.front()?.index;
    let at = usize::try_from(index.checked_sub(first)?).ok()?;
    entries.get_mut(at)
}

/// Append one content block to an entry, within its limits.
fn append_block(entry: &mut Entry, block: Value, options: &ViewOptions) {
    if let Some(text) = text_only(&block) {
        let text = text.to_owned();
        append_text(entry, &text, Some(block), options);
        return;
    }
    let bytes = size::value(&block);
    if entry.content.len() >= options.max_blocks || entry.bytes() + bytes > options.max_total_bytes
    {
        entry.dropped_blocks += 1;
        return;
    }
    entry.other_bytes += bytes;
    entry.content.push(block);
}

/// Append a text-only block (`block`, when the caller has it as a value):
/// concatenated to a text-only last block, else pushed. Returns the bytes
/// kept (the text's, or 0).
pub(crate) fn append_text(
    entry: &mut Entry,
    text: &str,
    block: Option<Value>,
    options: &ViewOptions,
) -> usize {
    let bytes = text.len();
    if !text_fits(entry, bytes, options) {
        entry.dropped_bytes += bytes as u64;
        return 0;
    }
    if let Some(s) = entry.content.last_mut().and_then(text_only_mut) {
        s.push_str(text);
        entry.text_bytes += bytes;
        return bytes;
    }
    if entry.content.len() >= options.max_blocks {
        entry.dropped_blocks += 1;
        return 0;
    }
    entry.text_bytes += bytes;
    entry.content.push(block.unwrap_or_else(|| {
        let mut obj = Map::new();
        obj.insert("type".into(), "text".into());
        obj.insert("text".into(), text.into());
        Value::Object(obj)
    }));
    bytes
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::{json, Value};

    use super::{size, EntryKind, SessionState, ViewOptions};

    fn capped(max_total_bytes: usize) -> SessionState {
        SessionState::new(
            "s",
            ViewOptions {
                max_total_bytes,
                ..ViewOptions::default()
            },
        )
    }

    pub(crate) fn text(state: &mut SessionState, text: &str) {
        let u = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}});
        state.apply_update_json(Some(&u.to_string()));
    }

    pub(crate) fn unknown(state: &mut SessionState, data: &str) {
        state.apply_update(json!({"sessionUpdate": "x_custom", "data": data}));
    }

    /// `long` in every kind of place a view keeps a string other than
    /// message text: a tool call's input and output, a compaction, the
    /// plan, a notice, an image, usage, an unknown update, pending params.
    pub(crate) fn long_everywhere(s: &mut SessionState, long: &str) {
        s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "rawInput": {"cmd": long}, "content": [{"type": "content", "content": {"type": "text", "text": long}}]}));
        s.apply_update(
            json!({"sessionUpdate": "compaction_update", "compactionId": "c", "summary": long}),
        );
        s.apply_update(json!({"sessionUpdate": "plan", "entries": [{"content": long, "priority": "high", "status": "pending"}]}));
        s.apply_update(json!({"sessionUpdate": "notice", "text": long}));
        s.apply_update(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": long, "mimeType": "image/png"}}));
        s.apply_update(
            json!({"sessionUpdate": "usage_update", "used": 1, "size": 2, "note": long}),
        );
        unknown(s, long);
        s.request_waiting(
            "1".into(),
            json!(1),
            "session/request_permission",
            json!({"toolCall": {"rawInput": long}}),
        );
    }

    fn kinds(state: &SessionState) -> Vec<(u64, EntryKind)> {
        state.entries.iter().map(|e| (e.index, e.kind)).collect()
    }

    /// The bytes of the kept entries, recounted from what they hold.
    fn recount(state: &SessionState) -> usize {
        state
            .entries
            .iter()
            .map(|e| {
                let keyed = match (e.kind, &e.key) {
                    (EntryKind::ToolCall, Some(k)) => state.tool_calls.get(k),
                    (EntryKind::Compaction, Some(k)) => state.compactions.get(k),
                    _ => None,
                };
                let fields = keyed.map_or(0, |k| size::value(&Value::Object(k.fields.clone())));
                let blocks: usize = e
                    .content
                    .iter()
                    .map(|b| match super::text_only(b) {
                        Some(t) => t.len(),
                        None => size::value(b),
                    })
                    .sum();
                fields
                    + blocks
                    + size::value(&Value::Object(e.extra.clone()))
                    + e.message_id.as_ref().map_or(0, size::value)
                    + e.body.as_ref().map_or(0, size::value)
            })
            .sum()
    }

    #[test]
    fn the_oldest_go_over_the_byte_cap_never_the_current_entry() {
        let body = |d: &str| size::value(&json!({"sessionUpdate": "x_custom", "data": d}));
        let mut s = capped(body("aaaa") * 2);
        unknown(&mut s, "aaaa");
        unknown(&mut s, "bbbb");
        assert_eq!(s.total_bytes, body("aaaa") * 2);
        assert_eq!(s.dropped_entries, 0, "at the cap is within it");
        // Over: the oldest goes, only it.
        unknown(&mut s, "cccc");
        assert_eq!(
            kinds(&s),
            [(1, EntryKind::Unknown), (2, EntryKind::Unknown)]
        );
        assert_eq!(s.dropped_entries, 1);
        assert!(s.changes.removed);

        // A message growing to the cap: all else goes, it stays (through
        // both paths); a chunk that would take it past the cap is dropped
        // and counted, like one past max_text_bytes.
        let cap = s.options.max_total_bytes;
        text(&mut s, &"x".repeat(cap - 1));
        text(&mut s, "ab");
        s.apply_update(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "!"}}));
        s.apply_update(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": ""}}));
        assert_eq!(kinds(&s), [(3, EntryKind::Agent)]);
        assert_eq!(s.total_bytes, cap);
        assert_eq!(s.dropped_entries, 3);
        let entry = &s.entries[0];
        assert_eq!((entry.dropped_bytes, entry.dropped_blocks), (2, 1));
        // The next entry takes its place.
        unknown(&mut s, "d");
        assert_eq!(kinds(&s), [(4, EntryKind::Unknown)]);
        assert_eq!(s.total_bytes, body("d"));
        // An unknown update is one line, kept whole even over the cap.
        unknown(&mut s, &"e".repeat(cap));
        assert_eq!(kinds(&s), [(5, EntryKind::Unknown)]);
        assert_eq!(s.total_bytes, body(&"e".repeat(cap)));
    }

    #[test]
    fn a_tool_call_counts_toward_its_entry_and_growing_it_never_evicts_it() {
        let mut s = capped(400);
        unknown(&mut s, "first");
        s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Run"}));
        unknown(&mut s, "after");
        let before = s.total_bytes;
        assert_eq!(before, recount(&s));
        // The tool call's output takes the total past the cap: the entry
        // before it goes; the one after it stays (oldest first only).
        let out = "o".repeat(300);
        s.apply_update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "rawOutput": out}),
        );
        assert_eq!(
            kinds(&s),
            [(1, EntryKind::ToolCall), (2, EntryKind::Unknown)]
        );
        assert!(s.tool_calls.contains_key("t1"));
        assert_eq!(s.total_bytes, recount(&s));
        // Re-sending the whole output counts the difference, not it again.
        let total = s.total_bytes;
        let out = "o".repeat(310);
        s.apply_update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "rawOutput": out}),
        );
        assert_eq!(s.total_bytes, total + 10);
        // An update that would take the entry alone past the cap changes
        // nothing; its keys are counted.
        let out = "o".repeat(400);
        s.apply_update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "rawOutput": out, "status": "failed"}));
        assert_eq!(s.total_bytes, total + 10);
        assert_eq!(
            s.tool_calls["t1"].fields["rawOutput"]
                .as_str()
                .unwrap()
                .len(),
            310
        );
        assert!(!s.tool_calls["t1"].fields.contains_key("status"));
        assert_eq!(s.dropped_keys, 3);
        // The next update elsewhere takes the tool call along.
        unknown(&mut s, "later");
        assert_eq!(
            kinds(&s),
            [(2, EntryKind::Unknown), (3, EntryKind::Unknown)]
        );
        assert!(s.tool_calls.is_empty());
        assert_eq!(s.dropped_entries, 2);
        assert_eq!(s.total_bytes, recount(&s));
    }

    #[test]
    fn the_count_follows_every_kind_of_update() {
        let mut s = capped(usize::MAX);
        let updates = [
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "héllo"}, "x": [1, null]}),
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "image", "data": "aGk="}, "x": {"y": true}}),
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "漢字"}}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "a", "rawInput": {"path": "/x"}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": null, "status": "completed"}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": null}),
            json!({"sessionUpdate": "compaction_update", "compactionId": "c", "status": "started"}),
            json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c", "content": {"type": "text", "text": "sum"}, "k": 1}),
            json!({"sessionUpdate": "notice", "severity": "info", "title": "n"}),
            json!({"sessionUpdate": "plan", "entries": []}),
            json!({"sessionUpdate": "usage_update", "used": 1}),
            json!({"sessionUpdate": "agent_message_chunk"}),
            json!(["not", "an", "object"]),
        ];
        for u in updates {
            s.apply_update_json(Some(&u.to_string()));
            assert_eq!(s.total_bytes, recount(&s), "after {u}");
        }
        assert_eq!(s.entries.len(), 6);
    }

    #[test]
    fn session_wide_objects_are_bounded_in_bytes_not_only_in_keys() {
        let mut s = capped(10_000);
        let info = |k: &str, v: &str| json!({"sessionUpdate": "session_info_update", k: v});
        for i in 0..300 {
            s.apply_update(info(&format!("k{i}"), &"v".repeat(3000)));
        }
        // Three keys fit in 10,000 bytes; every later one was refused.
        assert_eq!(s.info.len(), 3);
        assert_eq!(s.dropped_keys, 297);
        assert_eq!(
            s.field_bytes.info,
            size::value(&Value::Object(s.info.clone()))
        );
        // Replacing a value with a smaller one fits; a bigger one past the
        // cap does not, and leaves the old value.
        s.apply_update(info("k0", "small"));
        assert_eq!(s.info["k0"], "small");
        s.apply_update(info("k1", &"w".repeat(9000)));
        assert_eq!(s.info["k1"], "v".repeat(3000));
        assert_eq!(s.dropped_keys, 298);
        assert_eq!(
            s.field_bytes.info,
            size::value(&Value::Object(s.info.clone()))
        );
        // Each object has its own budget, the setup's merges too.
        s.apply_setup(&json!({"modes": {"currentModeId": "m".repeat(9000)}}));
        assert_eq!(s.modes["currentModeId"], "m".repeat(9000));
        s.apply_setup(&json!({"modes": {"availableModes": "a".repeat(2000)}}));
        assert!(s.modes.get("availableModes").is_none());
        assert_eq!(s.dropped_keys, 299);
    }
}
