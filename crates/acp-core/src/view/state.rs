//! The folded state of one session: its entries, tool calls, compactions,
//! session-wide objects and pending requests, and what each counts toward
//! the view's limits. How updates change it is in [`super::fold`], how it
//! is written as JSON in [`super::json`].
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

use serde_json::{Map, Value};

use super::changes::ChangeSet;
use super::lent::Lent;

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

    pub(super) fn new(index: u64, kind: EntryKind) -> Self {
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

/// Everything a UI needs about one session (the rules that fold updates
/// into it are in `fold.rs`).
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
    /// (see [`super::size`]): each stays within `max_total_bytes`.
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

/// The sizes of the session-wide objects that updates merge into: their
/// keys are bounded (`max_keys`), and this bounds their values, which an
/// agent could otherwise grow without limit, one new key at a time.
#[derive(Debug, Default)]
pub(crate) struct FieldBytes {
    pub(super) modes: usize,
    pub(super) config: usize,
    pub(super) commands: usize,
    pub(super) info: usize,
    pub(super) usage: usize,
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
}
