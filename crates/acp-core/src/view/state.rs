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
//! Limits ([`ViewOptions`]): at most `max_entries` entries and about
//! `max_total_bytes` bytes of entries (the oldest go, with the tool call or
//! compaction they introduced; never the entry the update went into), per
//! entry at most `max_text_bytes` of text (a chunk that does not fit is
//! dropped whole and counted) and `max_blocks` blocks, at most `max_keys`
//! keys per merged object (an update whose new keys do not all fit adds
//! none of them; they are counted), and at most `max_entries` pending
//! agent requests.
//!
//! An entry's bytes ([`super::size`]): its message text, plus the size of
//! what updates added to it: its `messageId`, non-text blocks, `extra`
//! keys, the notice or unknown update, and the fields of the tool call or
//! compaction it introduced (a merged key that replaces another counts the
//! difference, so a tool call re-sending its growing output counts once).
//! Nor does an update grow one entry past `max_total_bytes`: a text chunk
//! or block that would is dropped and counted (`droppedBytes`,
//! `droppedBlocks`), a merge that would adds none of its keys (counted in
//! `droppedKeys`). A notice or unknown update is one line, kept whole.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{Map, Value};

use super::changes::ChangeSet;
use super::lent::{DrainText, Lent, LentBlock};
use super::size;

/// Bounds on what one view keeps. `Default` gives the documented defaults.
#[derive(Debug, Clone, Copy)]
pub struct ViewOptions {
    pub max_entries: usize,
    pub max_text_bytes: usize,
    pub max_blocks: usize,
    pub max_keys: usize,
    /// Bytes of all entries together (see the module docs).
    pub max_total_bytes: usize,
}

impl Default for ViewOptions {
    fn default() -> Self {
        Self {
            max_entries: 50_000,
            max_text_bytes: 4 * 1024 * 1024,
            max_blocks: 1024,
            max_keys: 256,
            max_total_bytes: 64 * 1024 * 1024,
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
    pub(crate) fn as_str(self) -> &'static str {
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
    /// Bytes of everything else this entry holds (module docs).
    pub other_bytes: usize,
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
    /// `extra` keys merged to a new value since the last drain (bounded
    /// by its keys, `max_keys`).
    pub extra_changed: BTreeSet<String>,
    /// The start of a text block's text, shared with the host (`lent`).
    pub lent: Lent,
}

impl Entry {
    /// What this entry counts toward `max_total_bytes`.
    pub(crate) fn bytes(&self) -> usize {
        self.text_bytes + self.other_bytes
    }

    fn new(index: u64, kind: EntryKind) -> Self {
        Self {
            index,
            kind,
            message_id: None,
            content: Vec::new(),
            extra: Map::new(),
            text_bytes: 0,
            other_bytes: 0,
            dropped_bytes: 0,
            dropped_blocks: 0,
            key: None,
            body: None,
            seen_blocks: 0,
            seen_text: 0,
            seen_dropped: 0,
            extra_changed: BTreeSet::new(),
            lent: Lent::default(),
        }
    }

    /// Bytes of the last block's text when it is text-only (its shared
    /// segments included).
    pub(crate) fn last_text_len(&self) -> Option<usize> {
        let last = self.content.len().checked_sub(1)?;
        let open = text_only(&self.content[last])?;
        Some(self.lent.len_of(last) + open.len())
    }
}

/// A tool call or compaction, and the entry that introduced it.
#[derive(Debug)]
pub(crate) struct Keyed {
    pub index: u64,
    pub fields: Map<String, Value>,
    /// The host has it (a drain sent it whole): later drains send only
    /// the keys in `changed`, not megabytes of `rawInput` per status.
    pub sent: bool,
    /// Keys merged to a new value since the last drain that sent it
    /// (bounded by its keys, `max_keys`).
    pub changed: BTreeSet<String>,
}

/// An agent request of this session that waits for the host.
#[derive(Debug)]
pub(crate) struct Pending {
    /// Which one, for drains (view-local, never reused: a key may be).
    pub seq: u64,
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
    /// The bytes of the kept entries, for `max_total_bytes`.
    pub(crate) total_bytes: usize,
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
    /// What `modes`, `config`, `commands`, `info` and `usage` each count
    /// (see [`size`]): each stays within `max_total_bytes`.
    pub(crate) field_bytes: FieldBytes,
    pub(crate) stop_reason: Value,
    pub(crate) running: bool,
    /// A prompt was sent since the last entry was pushed: the next message
    /// chunk starts a new entry even without a `messageId` (agents that
    /// send none would otherwise run one turn's reply into the last).
    pub(crate) new_turn: bool,
    pub(crate) pending: VecDeque<Pending>,
    /// The `seq`s of `pending` as the host last had them (drains send the
    /// difference, not the list: see `changes`), and the next `seq`.
    pub(crate) seen_pending: Vec<u64>,
    pub(crate) next_pending: u64,
    pub(crate) changes: ChangeSet,
    /// Drains so far: each change description carries its number as
    /// `seq`, and a view's snapshot the number of the last one it holds,
    /// so a copy started from a snapshot skips the changes it already has.
    pub(crate) drains: u64,
}

/// A session-wide object that updates merge into.
#[derive(Clone, Copy)]
enum Field {
    Modes,
    Config,
    Commands,
    Info,
    Usage,
}

/// The sizes of the session-wide objects that updates merge into. Their
/// keys were bounded (`max_keys`) but not their values: 256 updates of a
/// 64 MiB line, each under a new key, held 16 GiB.
#[derive(Debug, Default)]
pub(crate) struct FieldBytes {
    modes: usize,
    config: usize,
    commands: usize,
    info: usize,
    usage: usize,
}

/// `{type:"text",text}` and nothing else: the blocks that are concatenated.
pub(crate) fn text_only(block: &Value) -> Option<&str> {
    let obj = block.as_object().filter(|o| is_text_only(o))?;
    obj.get("text")?.as_str()
}

/// The text of a [`text_only`] block, to append to (or share from).
pub(crate) fn text_only_mut(block: &mut Value) -> Option<&mut String> {
    let obj = block.as_object_mut().filter(|o| is_text_only(o))?;
    match obj.get_mut("text")? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

fn is_text_only(obj: &Map<String, Value>) -> bool {
    obj.len() == 2 && obj.get("type").and_then(Value::as_str) == Some("text")
}

/// Whether `bytes` more text fit in `entry` (its text and total caps).
pub(crate) fn text_fits(entry: &Entry, bytes: usize, options: &ViewOptions) -> bool {
    entry.text_bytes + bytes <= options.max_text_bytes
        && entry.bytes() + bytes <= options.max_total_bytes
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
    pub fn new(session_id: &str, options: ViewOptions) -> Self {
        Self {
            session_id: session_id.to_string(),
            options: ViewOptions {
                max_entries: options.max_entries.max(1),
                ..options
            },
            entries: VecDeque::new(),
            next_index: 0,
            total_bytes: 0,
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
            field_bytes: FieldBytes::default(),
            stop_reason: Value::Null,
            running: false,
            new_turn: false,
            pending: VecDeque::new(),
            seen_pending: Vec::new(),
            next_pending: 0,
            changes: ChangeSet::default(),
            drains: 0,
        }
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    pub fn options(&self) -> &ViewOptions {
        &self.options
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

    /// The whole state as JSON texts that each fit in a JS string. V8
    /// caps a string at about 512 MiB, and escaping can make text six
    /// times longer in JSON than the bytes it counts for (a hostile agent
    /// streaming control characters), so one JSON text of a view holding
    /// 2 × 64 MiB could not be handed over.
    ///
    /// `[head, plan, modes, config, commands, info, usage, pending,
    /// ...entry parts, ...tool call parts, ...compaction parts]`: the head
    /// is the snapshot's other fields, with `"$parts": [entry parts, tool
    /// call parts, compaction parts]`; the session-wide fields are one JSON
    /// value each (each bounded on its own); an entry part is a JSON array
    /// of entries, the others arrays of `[id, fields]` pairs, each about
    /// `part_bytes` long (an element longer than that is a part of its
    /// own).
    pub fn snapshot_parts(&self, part_bytes: usize) -> Vec<String> {
        let mut parts = self.session_wide_parts();
        let entries = self.entries.iter().map(|e| EntryJson(e, None, None));
        let entries = pack(entries, part_bytes, &mut parts);
        let keyed = |map: &HashMap<String, Keyed>, parts: &mut Vec<String>| {
            pack(map.iter().map(|(id, k)| (id, &k.fields)), part_bytes, parts)
        };
        let tools = keyed(&self.tool_calls, &mut parts);
        let compactions = keyed(&self.compactions, &mut parts);
        parts[0] = json(Snapshot(self, Some([entries, tools, compactions])));
        parts
    }

    /// [`Self::snapshot_parts`] with the message texts apart, as drains
    /// carry them: each text-only block's text is `""` in the JSON, and
    /// its entry says where its pieces go, `"$texts": [[block, pieces],
    /// ...]` (last, after the entry's own keys), the pieces taken from
    /// the texts in order. Texts are never escaped (a control character
    /// would take six bytes) nor copied when long: a growing text of at
    /// least [`super::LEND_MIN_BYTES`] is frozen into a segment first
    /// (when every change was drained, as a host's snapshot does), and
    /// segments are shared with the host. What is left to serialize is
    /// the state's other content, so the views' lock is held for that,
    /// not for the text the agent streamed.
    pub fn snapshot_apart(&mut self, part_bytes: usize) -> (Vec<String>, Vec<DrainText>) {
        // Only text the host has seen all of: drains carry unseen text
        // from where they left it, which a freeze would move.
        if !self.is_dirty() {
            for e in &mut self.entries {
                freeze_texts(e);
            }
        }
        let mut texts = Vec::new();
        let places: Vec<Vec<(usize, usize)>> = self
            .entries
            .iter()
            .map(|e| texts_of(e, &mut texts))
            .collect();
        let mut parts = self.session_wide_parts();
        let entries = self
            .entries
            .iter()
            .zip(&places)
            .map(|(e, at)| EntryJson(e, None, (!at.is_empty()).then_some(at.as_slice())));
        let entries = pack(entries, part_bytes, &mut parts);
        let keyed = |map: &HashMap<String, Keyed>, parts: &mut Vec<String>| {
            pack(map.iter().map(|(id, k)| (id, &k.fields)), part_bytes, parts)
        };
        let tools = keyed(&self.tool_calls, &mut parts);
        let compactions = keyed(&self.compactions, &mut parts);
        parts[0] = json(Snapshot(self, Some([entries, tools, compactions])));
        (parts, texts)
    }

    /// The head's place and the session-wide fields (see
    /// [`Self::snapshot_parts`]).
    fn session_wide_parts(&self) -> Vec<String> {
        vec![
            String::new(),
            json(&self.plan),
            json(&self.modes),
            json(&self.config),
            json(&self.commands),
            json(&self.info),
            json(&self.usage),
            json(pending_json(self.pending.iter())),
        ]
    }

    /// The whole state as a JSON value.
    pub fn snapshot_value(&self) -> Value {
        serde_json::to_value(self.whole()).expect("a state always serializes")
    }

    /// The whole state, serialized from where it is (no copy).
    pub(crate) fn whole(&self) -> impl Serialize + '_ {
        Snapshot(self, None)
    }
}

fn json<T: Serialize>(value: T) -> String {
    serde_json::to_string(&value).expect("a state always serializes")
}

/// Freeze each long growing text of `e`'s text-only blocks into a shared
/// segment (where the entry's segments may go: one block holds them).
fn freeze_texts(e: &mut Entry) {
    for (i, block) in e.content.iter_mut().enumerate() {
        let Some(open) = text_only_mut(block) else {
            continue;
        };
        let lent = e.lent.len_of(i);
        let len = open.len();
        // Declined (short, or another block holds segments): copied.
        let _ = e.lent.share(i, open, lent, lent + len);
    }
}

/// The texts of `e`'s text-only blocks, appended to `texts` in order:
/// `(block, pieces)` for each block with text.
fn texts_of(e: &Entry, texts: &mut Vec<DrainText>) -> Vec<(usize, usize)> {
    let mut places = Vec::new();
    if !matches!(
        e.kind,
        EntryKind::User | EntryKind::Agent | EntryKind::Thought | EntryKind::Compaction
    ) {
        return places;
    }
    for (i, block) in e.content.iter().enumerate() {
        let Some(open) = text_only(block) else {
            continue;
        };
        let before = texts.len();
        if e.lent.len_of(i) > 0 {
            texts.extend(e.lent.segments.iter().map(|segment| DrainText::Shared {
                text: Arc::clone(segment),
                start: 0,
                end: segment.len(),
            }));
        }
        if !open.is_empty() {
            texts.push(DrainText::Owned(open.to_string()));
        }
        if texts.len() > before {
            places.push((i, texts.len() - before));
        }
    }
    places
}

/// `items` as JSON arrays of about `part_bytes` each, appended to `parts`;
/// how many.
fn pack<T: Serialize>(
    items: impl Iterator<Item = T>,
    part_bytes: usize,
    parts: &mut Vec<String>,
) -> usize {
    let before = parts.len();
    let mut part = Vec::new();
    let mut close = |part: &mut Vec<u8>| {
        part.push(b']');
        let json = String::from_utf8(std::mem::take(part)).expect("serde_json writes UTF-8");
        parts.push(json);
    };
    for item in items {
        part.push(if part.is_empty() { b'[' } else { b',' });
        serde_json::to_writer(&mut part, &item).expect("a state always serializes");
        if part.len() >= part_bytes {
            close(&mut part);
        }
    }
    if !part.is_empty() {
        close(&mut part);
    }
    parts.len() - before
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

/// Serializes the state without copying it; with `Some(parts)`, only the
/// head of [`SessionState::snapshot_parts`].
struct Snapshot<'a>(&'a SessionState, Option<[usize; 3]>);

/// An entry; with `Some(text)`, its last block (text-only) carries `text`
/// instead of its own (a drain's cut, see `changes`); with `Some(places)`,
/// its text-only blocks' texts are apart (see
/// [`SessionState::snapshot_apart`]).
pub(crate) struct EntryJson<'a>(
    pub &'a Entry,
    pub Option<&'a str>,
    pub Option<&'a [(usize, usize)]>,
);

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
            match (self.1, self.2) {
                (_, Some(_)) => m.serialize_entry("content", &ApartContent(&e.content))?,
                (Some(text), _) => m.serialize_entry("content", &CutContent(&e.content, text))?,
                _ if e.lent.len > 0 => m.serialize_entry("content", &LentContent(e))?,
                _ => m.serialize_entry("content", &e.content)?,
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
            if let Some(places) = self.2 {
                m.serialize_entry("$texts", places)?;
            }
        }
        m.end()
    }
}

/// An entry's content blocks, one of them with text shared with the host.
struct LentContent<'a>(&'a Entry);

impl Serialize for LentContent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.0;
        let mut seq = s.serialize_seq(Some(e.content.len()))?;
        for (i, block) in e.content.iter().enumerate() {
            match text_only(block) {
                // Only a text-only block is ever lent, and it stays one.
                Some(open) if i == e.lent.block => {
                    seq.serialize_element(&LentBlock(&e.lent.segments, open))?
                }
                _ => seq.serialize_element(block)?,
            }
        }
        seq.end()
    }
}

/// Content blocks, the text-only ones' texts left out (`""`).
struct ApartContent<'a>(&'a [Value]);

impl Serialize for ApartContent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for block in self.0 {
            match text_only(block) {
                Some(_) => seq.serialize_element(&TextBlock(""))?,
                None => seq.serialize_element(block)?,
            }
        }
        seq.end()
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

/// Tool calls (or compactions) as `{id: fields}`.
pub(crate) struct FieldsById<I>(pub I);

impl<'a, I: Iterator<Item = (&'a String, &'a Keyed)> + Clone> Serialize for FieldsById<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.clone().map(|(id, k)| (id, &k.fields)))
    }
}

/// Tool calls or compactions the host has, by id: only their keys that
/// changed since the last drain sent them.
pub(crate) struct ChangedFieldsById<I>(pub I);

impl<'a, I: Iterator<Item = (&'a String, &'a Keyed)> + Clone> Serialize for ChangedFieldsById<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.clone().map(|(id, k)| (id, ChangedFields(k))))
    }
}

struct ChangedFields<'a>(&'a Keyed);

impl Serialize for ChangedFields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let k = self.0;
        s.collect_map(
            k.changed
                .iter()
                .filter_map(|key| k.fields.get_key_value(key)),
        )
    }
}

/// Pending requests (all of them, or the ones a drain adds) as JSON.
pub(crate) fn pending_json<'a>(
    pending: impl Iterator<Item = &'a Pending> + Clone,
) -> Seq<impl Iterator<Item = PendingItem<'a>> + Clone> {
    Seq(pending.map(PendingItem))
}

#[derive(Clone, Copy)]
pub(crate) struct PendingItem<'a>(&'a Pending);

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
        let whole = self.1.is_none();
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("sessionId", &st.session_id)?;
        if whole {
            let entries = st.entries.iter().map(|e| EntryJson(e, None, None));
            m.serialize_entry("entries", &Seq(entries))?;
        }
        m.serialize_entry("droppedEntries", &st.dropped_entries)?;
        if whole {
            m.serialize_entry("toolCalls", &FieldsById(st.tool_calls.iter()))?;
            m.serialize_entry("compactions", &FieldsById(st.compactions.iter()))?;
            m.serialize_entry("plan", &st.plan)?;
            m.serialize_entry("modes", &st.modes)?;
            m.serialize_entry("config", &st.config)?;
            m.serialize_entry("commands", &st.commands)?;
            m.serialize_entry("info", &st.info)?;
            m.serialize_entry("usage", &st.usage)?;
        }
        m.serialize_entry("stopReason", &st.stop_reason)?;
        m.serialize_entry("running", &st.running)?;
        if whole {
            m.serialize_entry("pending", &pending_json(st.pending.iter()))?;
        }
        m.serialize_entry("droppedKeys", &st.dropped_keys)?;
        if let Some(parts) = self.1 {
            m.serialize_entry("$parts", &parts)?;
            m.serialize_entry("$seq", &st.drains)?;
        }
        m.end()
    }
}

/// An iterator serialized as a JSON array.
pub(crate) struct Seq<I>(I);

impl<I: Iterator<Item = T> + Clone, T: Serialize> Serialize for Seq<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.clone())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::{json, Value};

    use super::{size, Arc, DrainText, EntryKind, SessionState, ViewOptions};

    fn capped(max_total_bytes: usize) -> SessionState {
        SessionState::new(
            "s",
            ViewOptions {
                max_total_bytes,
                ..ViewOptions::default()
            },
        )
    }

    fn text(state: &mut SessionState, text: &str) {
        let u = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}});
        state.apply_update_json(Some(&u.to_string()));
    }

    fn unknown(state: &mut SessionState, data: &str) {
        state.apply_update(json!({"sessionUpdate": "x_custom", "data": data}));
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

    /// `joinSnapshot` of lib/session-view.js, ported.
    /// [`join`] of a snapshot whose texts are apart (as
    /// lib/session-view.js joins it).
    pub(crate) fn join_apart(parts: &[String], texts: &[DrainText]) -> Value {
        let mut whole = join(parts);
        let mut texts = texts.iter();
        for entry in whole["entries"].as_array_mut().unwrap() {
            let Some(places) = entry.as_object_mut().unwrap().remove("$texts") else {
                continue;
            };
            for place in places.as_array().unwrap() {
                let (block, pieces) = (place[0].as_u64().unwrap(), place[1].as_u64().unwrap());
                let text: String = texts
                    .by_ref()
                    .take(pieces as usize)
                    .map(DrainText::as_str)
                    .collect();
                entry["content"][block as usize]["text"] = text.into();
            }
        }
        assert!(texts.next().is_none(), "every text is placed");
        whole
    }

    #[test]
    fn a_snapshot_holds_its_texts_apart_unescaped_and_shared() {
        let mut s = SessionState::new("s", ViewOptions::default());
        // A long message of control characters, a short one, and text
        // blocks around a non-text block.
        text(&mut s, &"\u{1}".repeat(300_000));
        s.apply_update(json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}));
        s.apply_update(json!({"sessionUpdate": "user_message_chunk", "content": {"type": "image", "data": "x"}}));
        s.apply_update(json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "\u{1}after"}}));
        s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x"}));
        let whole = s.snapshot_value();
        while s.drain_parts(1 << 20).is_some() {}
        let (parts, texts) = s.snapshot_apart(1 << 20);
        assert_eq!(join_apart(&parts, &texts), whole);
        // The JSON holds no text: not six bytes per control character.
        let json_bytes: usize = parts.iter().map(String::len).sum();
        assert!(json_bytes < 4096, "{json_bytes} bytes of JSON");
        // The long text is frozen and shared with the entry, not copied.
        assert!(matches!(&texts[0], DrainText::Shared { end: 300_000, .. }));
        let DrainText::Shared { text: shared, .. } = &texts[0] else {
            unreachable!()
        };
        assert!(Arc::ptr_eq(shared, &s.entries[0].lent.segments[0]));
        // Later chunks and drains go on from there; a second snapshot agrees.
        text(&mut s, "more");
        while s.drain_parts(1000).is_some() {}
        let (parts, texts) = s.snapshot_apart(1 << 20);
        assert_eq!(join_apart(&parts, &texts), s.snapshot_value());
    }

    fn join(parts: &[String]) -> Value {
        let mut head: Value = serde_json::from_str(&parts[0]).unwrap();
        let counts = head.as_object_mut().unwrap().remove("$parts").unwrap();
        head.as_object_mut()
            .unwrap()
            .remove("$seq")
            .expect("a view's drains so far");
        let counts: Vec<usize> = serde_json::from_value(counts).unwrap();
        let fields = [
            "plan", "modes", "config", "commands", "info", "usage", "pending",
        ];
        for (name, part) in fields.iter().zip(&parts[1..]) {
            head[*name] = serde_json::from_str(part).unwrap();
        }
        let mut rest = parts[1 + fields.len()..]
            .iter()
            .map(|p| serde_json::from_str::<Vec<Value>>(p).unwrap());
        let entries: Vec<Value> = rest.by_ref().take(counts[0]).flatten().collect();
        let mut keyed = |n| {
            let pairs = rest.by_ref().take(n).flatten();
            let by_id = pairs.map(|p| (p[0].as_str().unwrap().to_owned(), p[1].clone()));
            Value::Object(by_id.collect())
        };
        let (tools, compactions) = (keyed(counts[1]), keyed(counts[2]));
        assert!(rest.next().is_none(), "every part is counted");
        head["entries"] = entries.into();
        head["toolCalls"] = tools;
        head["compactions"] = compactions;
        head
    }

    #[test]
    fn a_snapshot_in_parts_is_the_snapshot() {
        let mut s = SessionState::new("s", ViewOptions::default());
        for i in 0..300 {
            text(&mut s, &format!("message {i} {}", "\u{1}".repeat(i)));
            s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{i}"), "title": "t".repeat(i)}));
            s.apply_update(json!({"sessionUpdate": "compaction_update", "compactionId": format!("c{i}"), "status": "started"}));
            unknown(&mut s, &"u".repeat(i * 10));
        }
        let whole = s.snapshot_value();
        assert_eq!(whole["entries"].as_array().unwrap().len(), 1200);
        for part_bytes in [1, 700, 64 * 1024, 1 << 30] {
            let parts = s.snapshot_parts(part_bytes);
            assert_eq!(join(&parts), whole, "parts of {part_bytes} bytes");
            let biggest = parts[1..].iter().map(String::len).max().unwrap();
            let one_element = part_bytes <= 700;
            assert!(
                biggest < part_bytes.max(1) * 2 || one_element,
                "{part_bytes}: {biggest}"
            );
        }
        let count = |k: &str| whole[k].as_object().unwrap().len();
        let (tools, compactions) = (count("toolCalls"), count("compactions"));
        assert_eq!((tools, compactions), (300, 300));
        let elements = 1200 + tools + compactions;
        assert_eq!(
            s.snapshot_parts(1).len(),
            8 + elements,
            "one element a part"
        );
        assert_eq!(s.snapshot_parts(1 << 30).len(), 11, "one part of each");
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

    #[test]
    fn an_empty_view_has_no_entry_parts() {
        let s = SessionState::new("s", ViewOptions::default());
        let parts = s.snapshot_parts(1 << 20);
        assert_eq!(parts.len(), 8, "the head and the session-wide fields");
        assert_eq!(join(&parts), s.snapshot_value());
    }
}
