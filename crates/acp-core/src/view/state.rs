//! The folded state of one session and the fold itself.
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
//!   ones: nothing is dropped except by the documented limits below.
//!
//! Limits ([`ViewOptions`]): at most `max_entries` entries (the oldest go,
//! with the tool call or compaction they introduced), per entry at most
//! `max_text_bytes` of text (a chunk that does not fit is dropped whole and
//! counted) and `max_blocks` blocks, at most `max_keys` keys per merged
//! object (an update whose new keys do not all fit adds none of them; they
//! are counted), and at most
//! `max_entries` pending agent requests.

use std::collections::{HashMap, VecDeque};

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{Map, Value};

use super::changes::ChangeSet;

/// Bounds on what one view keeps. `Default` gives the documented defaults.
#[derive(Debug, Clone, Copy)]
pub struct ViewOptions {
    pub max_entries: usize,
    pub max_text_bytes: usize,
    pub max_blocks: usize,
    pub max_keys: usize,
}

impl Default for ViewOptions {
    fn default() -> Self {
        Self {
            max_entries: 5000,
            max_text_bytes: 4 * 1024 * 1024,
            max_blocks: 1024,
            max_keys: 256,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    User,
    Agent,
    Thought,
    ToolCall,
    Notice,
    Compaction,
    Unknown,
}

impl EntryKind {
    fn as_str(self) -> &'static str {
        match self {
            EntryKind::User => "user",
            EntryKind::Agent => "agent",
            EntryKind::Thought => "thought",
            EntryKind::ToolCall => "tool_call",
            EntryKind::Notice => "notice",
            EntryKind::Compaction => "compaction",
            EntryKind::Unknown => "unknown",
        }
    }
}

/// One item of the transcript, in arrival order.
#[derive(Debug)]
pub(crate) struct Entry {
    pub index: u64,
    pub kind: EntryKind,
    pub message_id: Option<Value>,
    pub content: Vec<Value>,
    pub extra: Map<String, Value>,
    pub text_bytes: usize,
    pub dropped_bytes: u64,
    pub dropped_blocks: u64,
    /// `toolCallId` / `compactionId` of the object this entry introduced.
    pub key: Option<String>,
    /// The notice, or the whole unknown update.
    pub body: Option<Value>,
    /// What the host had seen at the last drain (see `changes`).
    pub seen_blocks: usize,
    pub seen_text: usize,
    pub seen_dropped: u64,
    /// Fields other than content changed since the last drain.
    pub seen_other: bool,
}

impl Entry {
    fn new(index: u64, kind: EntryKind) -> Self {
        Self {
            index,
            kind,
            message_id: None,
            content: Vec::new(),
            extra: Map::new(),
            text_bytes: 0,
            dropped_bytes: 0,
            dropped_blocks: 0,
            key: None,
            body: None,
            seen_blocks: 0,
            seen_text: 0,
            seen_dropped: 0,
            seen_other: false,
        }
    }
}

/// A tool call or compaction, and the entry that introduced it.
#[derive(Debug)]
pub(crate) struct Keyed {
    pub index: u64,
    pub fields: Map<String, Value>,
}

/// An agent request of this session that waits for the host.
#[derive(Debug)]
pub(crate) struct Pending {
    pub key: String,
    pub id: Value,
    pub method: String,
    pub params: Value,
}

/// Everything a UI needs about one session (see the module docs).
#[derive(Debug)]
pub struct SessionState {
    pub(crate) session_id: String,
    pub(crate) options: ViewOptions,
    pub(crate) entries: VecDeque<Entry>,
    pub(crate) next_index: u64,
    pub(crate) dropped_entries: u64,
    pub(crate) dropped_keys: u64,
    pub(crate) tool_calls: HashMap<String, Keyed>,
    pub(crate) compactions: HashMap<String, Keyed>,
    pub(crate) plan: Value,
    pub(crate) modes: Map<String, Value>,
    pub(crate) config: Map<String, Value>,
    pub(crate) commands: Map<String, Value>,
    pub(crate) info: Map<String, Value>,
    pub(crate) usage: Option<Map<String, Value>>,
    pub(crate) stop_reason: Value,
    pub(crate) running: bool,
    pub(crate) pending: VecDeque<Pending>,
    pub(crate) changes: ChangeSet,
}

/// `{type:"text",text}` and nothing else: the blocks that are concatenated.
fn text_only(block: &Value) -> Option<&str> {
    let obj = block.as_object()?;
    if obj.len() != 2 || obj.get("type")?.as_str()? != "text" {
        return None;
    }
    obj.get("text")?.as_str()
}

/// Merge `from` into `into` (except `skip` keys); `keep_null`: a `null`
/// value is assigned rather than meaning "unchanged". When the new keys
/// would not all fit under `max_keys`, none of them is added (so the
/// outcome does not depend on key order) and they are counted in `dropped`.
fn merge(
    into: &mut Map<String, Value>,
    from: Map<String, Value>,
    skip: &[&str],
    keep_null: bool,
    max_keys: usize,
    dropped: &mut u64,
) {
    let wanted = |k: &String, v: &Value| !skip.contains(&k.as_str()) && (keep_null || !v.is_null());
    let new = from
        .iter()
        .filter(|(k, v)| wanted(k, v) && !into.contains_key(*k))
        .count();
    let room = into.len() + new <= max_keys;
    if !room {
        *dropped += new as u64;
    }
    for (k, v) in from {
        if !wanted(&k, &v) {
            continue;
        }
        if let Some(slot) = into.get_mut(&k) {
            *slot = v;
        } else if room {
            into.insert(k, v);
        }
    }
}

impl SessionState {
    pub fn new(session_id: &str, options: ViewOptions) -> Self {
        Self {
            session_id: session_id.to_string(),
            options: ViewOptions {
                max_entries: options.max_entries.max(1),
                ..options
            },
            entries: VecDeque::new(),
            next_index: 0,
            dropped_entries: 0,
            dropped_keys: 0,
            tool_calls: HashMap::new(),
            compactions: HashMap::new(),
            plan: Value::Null,
            modes: Map::new(),
            config: Map::new(),
            commands: Map::new(),
            info: Map::new(),
            usage: None,
            stop_reason: Value::Null,
            running: false,
            pending: VecDeque::new(),
            changes: ChangeSet::default(),
        }
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Something changed since the last drain.
    pub fn is_dirty(&self) -> bool {
        self.changes.dirty
    }

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
            "current_mode_update" => self.merge_field(obj, |s| &mut s.modes, |c| &mut c.modes),
            "config_option_update" => self.merge_field(obj, |s| &mut s.config, |c| &mut c.config),
            "available_commands_update" => {
                self.merge_field(obj, |s| &mut s.commands, |c| &mut c.commands)
            }
            "session_info_update" => self.merge_field(obj, |s| &mut s.info, |c| &mut c.info),
            "usage_update" => {
                self.usage.get_or_insert_with(Map::new);
                self.merge_field(
                    obj,
                    |s| s.usage.as_mut().expect("just set"),
                    |c| &mut c.usage,
                )
            }
            "notice" => {
                obj.remove("sessionUpdate");
                let entry = self.push_entry(EntryKind::Notice);
                entry.body = Some(Value::Object(obj));
            }
            _ => self.push_unknown(Value::Object(obj)),
        }
    }

    fn merge_field(
        &mut self,
        obj: Map<String, Value>,
        target: impl FnOnce(&mut Self) -> &mut Map<String, Value>,
        flag: impl FnOnce(&mut ChangeSet) -> &mut bool,
    ) {
        let max_keys = self.options.max_keys;
        let mut dropped = 0;
        merge(
            target(self),
            obj,
            &["sessionUpdate"],
            true,
            max_keys,
            &mut dropped,
        );
        self.dropped_keys += dropped;
        *flag(&mut self.changes) = true;
    }

    fn push_unknown(&mut self, update: Value) {
        let entry = self.push_entry(EntryKind::Unknown);
        entry.body = Some(update);
    }

    /// A new entry at the end (the oldest go beyond `max_entries`).
    /// The entry a message chunk goes into: the last one when the chunk
    /// `continues` it (marked changed), else a new one with the id
    /// `message_id` makes (only then: the hot path allocates nothing).
    pub(crate) fn message_entry(
        &mut self,
        kind: EntryKind,
        continues: bool,
        message_id: impl FnOnce() -> Option<Value>,
    ) -> &mut Entry {
        if continues {
            let entry = self.entries.back_mut().expect("continues: an entry exists");
            self.changes.entries.insert(entry.index);
            entry
        } else {
            let entry = self.push_entry(kind);
            entry.message_id = message_id();
            entry
        }
    }

    pub(crate) fn push_entry(&mut self, kind: EntryKind) -> &mut Entry {
        let index = self.next_index;
        self.next_index += 1;
        self.changes.entries.insert(index);
        while self.entries.len() >= self.options.max_entries {
            let Some(old) = self.entries.pop_front() else {
                break;
            };
            self.dropped_entries += 1;
            self.changes.removed = true;
            // The change set never outgrows the state, drained or not.
            self.changes.entries.remove(&old.index);
            if let Some(key) = &old.key {
                let (map, changed) = match old.kind {
                    EntryKind::ToolCall => (&mut self.tool_calls, &mut self.changes.tool_calls),
                    _ => (&mut self.compactions, &mut self.changes.compactions),
                };
                if map.get(key).is_some_and(|k| k.index == old.index) {
                    map.remove(key);
                    changed.remove(key);
                }
            }
        }
        self.entries.push_back(Entry::new(index, kind));
        self.entries.back_mut().expect("just pushed")
    }

    fn entry_mut(&mut self, index: u64) -> Option<&mut Entry> {
        let first = self.entries.front()?.index;
        let at = usize::try_from(index.checked_sub(first)?).ok()?;
        self.entries.get_mut(at)
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
        entry.seen_other |= obj.keys().any(|k| k != "sessionUpdate");
        merge(
            &mut entry.extra,
            obj,
            &["sessionUpdate"],
            true,
            options.max_keys,
            &mut dropped,
        );
        append_block(entry, content, &options);
        self.dropped_keys += dropped;
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
        let max_keys = self.options.max_keys;
        let mut dropped = 0;
        let (map, changed) = if is_tool {
            (&mut self.tool_calls, &mut self.changes.tool_calls)
        } else {
            (&mut self.compactions, &mut self.changes.compactions)
        };
        let target = map.get_mut(&id).expect("introduced");
        merge(
            &mut target.fields,
            obj,
            &["sessionUpdate"],
            keep_null,
            max_keys,
            &mut dropped,
        );
        changed.insert(id);
        self.dropped_keys += dropped;
    }

    /// A tool call or compaction seen for the first time: its entry.
    fn introduce(&mut self, id: &str, is_tool: bool) {
        let kind = if is_tool {
            EntryKind::ToolCall
        } else {
            EntryKind::Compaction
        };
        let entry = self.push_entry(kind);
        entry.key = Some(id.to_owned());
        let index = entry.index;
        let mut fields = Map::new();
        let id_key = if is_tool {
            "toolCallId"
        } else {
            "compactionId"
        };
        fields.insert(id_key.into(), id.into());
        let keyed = Keyed { index, fields };
        if is_tool {
            self.tool_calls.insert(id.to_owned(), keyed);
            self.changes.tool_calls.insert(id.to_owned());
        } else {
            self.compactions.insert(id.to_owned(), keyed);
            self.changes.compactions.insert(id.to_owned());
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
        let entry = self
            .entry_mut(index)
            .expect("a kept compaction has its entry");
        entry.seen_other |= obj
            .keys()
            .any(|k| k != "sessionUpdate" && k != "compactionId");
        merge(
            &mut entry.extra,
            obj,
            &["sessionUpdate", "compactionId"],
            true,
            options.max_keys,
            &mut dropped,
        );
        append_block(entry, content, &options);
        self.dropped_keys += dropped;
    }

    /// The result of `session/new`, `session/load` or `session/resume`:
    /// its modes and config options.
    pub fn apply_setup(&mut self, result: &Value) {
        let max_keys = self.options.max_keys;
        let mut dropped = 0;
        if let Some(modes) = result.get("modes").and_then(Value::as_object) {
            merge(
                &mut self.modes,
                modes.clone(),
                &[],
                true,
                max_keys,
                &mut dropped,
            );
            self.changes.modes = true;
        }
        if let Some(options) = result.get("configOptions") {
            let mut obj = Map::new();
            obj.insert("configOptions".into(), options.clone());
            merge(&mut self.config, obj, &[], true, max_keys, &mut dropped);
            self.changes.config = true;
        }
        self.dropped_keys += dropped;
        self.changes.dirty = true;
    }

    /// A `session/prompt` of this session was sent: a turn is running.
    pub fn prompt_started(&mut self) {
        self.running = true;
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
        self.pending.push_back(Pending {
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

    /// The whole state as JSON text.
    pub fn snapshot_json(&self) -> String {
        serde_json::to_string(&Snapshot(self)).expect("a state always serializes")
    }

    /// The whole state as a JSON value.
    pub fn snapshot_value(&self) -> Value {
        serde_json::to_value(Snapshot(self)).expect("a state always serializes")
    }
}

fn kind_variant(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::User => "user_message_chunk",
        EntryKind::Agent => "agent_message_chunk",
        _ => "agent_thought_chunk",
    }
}

/// Append one content block to an entry, within its limits.
fn append_block(entry: &mut Entry, block: Value, options: &ViewOptions) {
    if let Some(text) = text_only(&block) {
        let text = text.to_owned();
        return append_text(entry, &text, Some(block), options);
    }
    if entry.content.len() >= options.max_blocks {
        entry.dropped_blocks += 1;
        return;
    }
    entry.content.push(block);
}

/// Append a text-only block (`block`, when the caller has it as a value):
/// concatenated to a text-only last block, else pushed.
pub(crate) fn append_text(
    entry: &mut Entry,
    text: &str,
    block: Option<Value>,
    options: &ViewOptions,
) {
    let bytes = text.len();
    if entry.text_bytes + bytes > options.max_text_bytes {
        entry.dropped_bytes += bytes as u64;
        return;
    }
    if let Some(Value::Object(last)) = entry.content.last_mut() {
        if last.len() == 2 && last.get("type").and_then(Value::as_str) == Some("text") {
            if let Some(Value::String(s)) = last.get_mut("text") {
                s.push_str(text);
                entry.text_bytes += bytes;
                return;
            }
        }
    }
    if entry.content.len() >= options.max_blocks {
        entry.dropped_blocks += 1;
        return;
    }
    entry.text_bytes += bytes;
    entry.content.push(block.unwrap_or_else(|| {
        let mut obj = Map::new();
        obj.insert("type".into(), "text".into());
        obj.insert("text".into(), text.into());
        Value::Object(obj)
    }));
}

/// Serializes the state without copying it.
struct Snapshot<'a>(&'a SessionState);

/// An entry; with `Some(text)`, its last block (text-only) carries `text`
/// instead of its own (a drain's cut, see `changes`).
pub(crate) struct EntryJson<'a>(pub &'a Entry, pub Option<&'a str>);

impl Serialize for EntryJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("index", &e.index)?;
        m.serialize_entry("kind", e.kind.as_str())?;
        match e.kind {
            EntryKind::ToolCall => m.serialize_entry("toolCallId", &e.key)?,
            EntryKind::Notice => m.serialize_entry("notice", &e.body)?,
            EntryKind::Unknown => m.serialize_entry("update", &e.body)?,
            _ => {}
        }
        if e.kind == EntryKind::Compaction {
            m.serialize_entry("compactionId", &e.key)?;
        }
        if matches!(
            e.kind,
            EntryKind::User | EntryKind::Agent | EntryKind::Thought | EntryKind::Compaction
        ) {
            if let Some(id) = &e.message_id {
                m.serialize_entry("messageId", id)?;
            }
            match self.1 {
                Some(text) => m.serialize_entry("content", &CutContent(&e.content, text))?,
                None => m.serialize_entry("content", &e.content)?,
            }
            if !e.extra.is_empty() {
                m.serialize_entry("extra", &e.extra)?;
            }
            if e.dropped_bytes > 0 {
                m.serialize_entry("droppedBytes", &e.dropped_bytes)?;
            }
            if e.dropped_blocks > 0 {
                m.serialize_entry("droppedBlocks", &e.dropped_blocks)?;
            }
        }
        m.end()
    }
}

/// Content blocks, the last (text-only) one with `text` as its text.
struct CutContent<'a>(&'a [Value], &'a str);

impl Serialize for CutContent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (blocks, text) = (self.0, self.1);
        let mut seq = s.serialize_seq(Some(blocks.len()))?;
        for block in &blocks[..blocks.len().saturating_sub(1)] {
            seq.serialize_element(block)?;
        }
        seq.serialize_element(&TextBlock(text))?;
        seq.end()
    }
}

struct TextBlock<'a>(&'a str);

impl Serialize for TextBlock<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("text", self.0)?;
        m.serialize_entry("type", "text")?;
        m.end()
    }
}

pub(crate) struct KeyedJson<'a>(pub &'a HashMap<String, Keyed>);

impl Serialize for KeyedJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, &v.fields)?;
        }
        m.end()
    }
}

pub(crate) struct PendingJson<'a>(pub &'a VecDeque<Pending>);

impl Serialize for PendingJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(PendingItem))
    }
}

struct PendingItem<'a>(&'a Pending);

impl Serialize for PendingItem<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("id", &self.0.id)?;
        m.serialize_entry("method", &self.0.method)?;
        m.serialize_entry("params", &self.0.params)?;
        m.end()
    }
}

impl Serialize for Snapshot<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let st = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("sessionId", &st.session_id)?;
        m.serialize_entry(
            "entries",
            &st.entries
                .iter()
                .map(|e| EntryJson(e, None))
                .collect::<Vec<_>>(),
        )?;
        m.serialize_entry("droppedEntries", &st.dropped_entries)?;
        m.serialize_entry("toolCalls", &KeyedJson(&st.tool_calls))?;
        m.serialize_entry("compactions", &KeyedJson(&st.compactions))?;
        m.serialize_entry("plan", &st.plan)?;
        m.serialize_entry("modes", &st.modes)?;
        m.serialize_entry("config", &st.config)?;
        m.serialize_entry("commands", &st.commands)?;
        m.serialize_entry("info", &st.info)?;
        m.serialize_entry("usage", &st.usage)?;
        m.serialize_entry("stopReason", &st.stop_reason)?;
        m.serialize_entry("running", &st.running)?;
        m.serialize_entry("pending", &PendingJson(&st.pending))?;
        m.serialize_entry("droppedKeys", &st.dropped_keys)?;
        m.end()
    }
}
