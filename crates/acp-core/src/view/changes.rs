//! What changed since the host last drained a view, coalesced: many chunks
//! appended to one message become one `appended` text, many updates of one
//! tool call one set of `toolCallFields` keys. Applying a drain to the state the host
//! had gives the current state (`applyChanges` in `lib/session-fold.js`;
//! a property test checks it).
//!
//! A drain is a JSON object with only the keys that changed:
//! - `newEntries`: entries created since the last drain, whole;
//! - `appended`: `[{index, text, blocks?, extra?}]`, what an entry the
//!   host already has gained: text at the end of its last block, blocks
//!   after it, `extra` keys that changed (entries only grow, so one is
//!   never sent twice);
//! - `firstIndex`, `droppedEntries`: entries before `firstIndex` are gone;
//! - `toolCalls`, `compactions`: new ones by id, whole;
//!   `toolCallFields`, `compactionFields`: of the ones the host has, the
//!   keys that changed;
//! - `pendingRemoved`, `pendingAdded`: the agent requests awaiting the
//!   host that went (their positions in the host's list, ascending) and
//!   came (appended, in order): an agent adding and cancelling requests
//!   would otherwise have the whole list (up to the connection's 32 MiB of
//!   waiting requests) sent, and parsed, once a frame;
//! - `modes`, `config`, `commands`, `info`: the keys that changed (the
//!   host assigns them); `usage` too, whole when it first appears;
//! - `plan`, `stopReason`, `running`, `droppedKeys`: the new value.
//!
//! Deltas apply once, in order, to a copy taken from `snapshot()` when the
//! view opened or right after a drain.

use std::collections::BTreeSet;

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{Map, Value};

use super::apart::{Apart, Seg, Walk, WalkFields};
use super::json::{pending_json, ChangedFieldsById, EntryJson, FieldsById, Texts};
use super::lent::DrainText;
use super::size;
use super::state::{text_only, text_only_mut, Entry, Keyed, Pending, SessionState};
use crate::rpc::floor_char_boundary;

#[derive(Debug, Default)]
pub(crate) struct ChangeSet {
    pub dirty: bool,
    /// Entries created or changed.
    pub entries: BTreeSet<u64>,
    /// Old entries were dropped by `max_entries` or `max_total_bytes`.
    pub removed: bool,
    /// Tool calls and compactions changed: their entry's index and id,
    /// in entry order (a drain that puts off new entries from one on
    /// puts off their keyed values by one split, not one by one).
    pub tool_calls: BTreeSet<(u64, String)>,
    pub compactions: BTreeSet<(u64, String)>,
    pub plan: bool,
    pub modes: FieldChange,
    pub config: FieldChange,
    pub commands: FieldChange,
    pub info: FieldChange,
    pub usage: FieldChange,
    pub stop_reason: bool,
    pub running: bool,
    pub pending: bool,
    /// Entries from this index on are new to the host.
    pub first_new: u64,
    pub dropped_keys_seen: u64,
}

/// What changed in a session-wide object (`modes`, `config`, …): drains
/// send those keys, not the object (which may be `max_total_bytes`).
#[derive(Debug, Default)]
pub(crate) struct FieldChange {
    /// All of it: it appeared (`usage`, from null).
    pub whole: bool,
    /// Keys merged to a new value (bounded by its keys, `max_keys`).
    pub keys: BTreeSet<String>,
}

/// What a new entry costs a drain's budget besides what it holds: about
/// its JSON around the content (`{"index":…,"kind":…,"content":[…]}`).
const NEW_ENTRY_COST: usize = 96;

/// The last block's text still growing, when it is text-only: all of it
/// for an entry the host has not seen (only seen text is ever shared).
fn last_text(entry: &Entry) -> Option<&str> {
    entry.content.last().and_then(text_only)
}

/// The longest start of `text` within `budget` bytes that ends on a char
/// boundary; at least one char when `must_move` (so a drain always makes
/// progress, whatever the budget).
fn cut(text: &str, budget: usize, must_move: bool) -> usize {
    match floor_char_boundary(text, budget) {
        0 if must_move => text.chars().next().map_or(0, char::len_utf8),
        at => at,
    }
}

enum EntryChange<'a> {
    /// A new entry; `cut`: bytes of its text-only last block carried.
    New(&'a Entry, Option<usize>),
    /// What an entry the host has gained (entries only grow).
    Appended(Grown<'a>),
}

/// What an entry the host has gained since the host saw it: text at the
/// end of the block that was its last, blocks after it, `extra` keys
/// merged to new values, and its drop counters when they changed (a chunk
/// refused by a limit changes only them). Never the entry again: an
/// agent alternating `_meta` on the chunks of a long message resent it
/// whole every frame.
struct Grown<'a> {
    index: u64,
    /// The block `text` ends, and where in its text (shared segments
    /// included) `text` starts.
    block: usize,
    from: usize,
    text: &'a str,
    blocks: &'a [Value],
    extra: Option<&'a Entry>,
    dropped: Option<(u64, u64)>,
}

/// One drain: the change description and, when the texts travel apart
/// ([`SessionState::drain_parts`]), the texts it leaves out.
#[derive(Debug)]
pub struct Drained {
    /// The change description (JSON text).
    pub json: String,
    /// In `drain_parts`: the text of each `appended` item, then the text
    /// of the last block of each new entry listed in `$cut`, then the
    /// long strings listed in `$apart` (see [`super::apart`]), in order.
    pub texts: Vec<DrainText>,
    /// Text is left for the next drain (the budget was reached).
    pub more: bool,
}

impl SessionState {
    /// What changed since the last drain, as JSON text (see the module
    /// docs); `None` when nothing did. Resets the change set.
    #[cfg(test)]
    pub fn drain_json(&mut self) -> Option<String> {
        self.drain(usize::MAX, false).map(|d| d.json)
    }

    /// Like `drain_json` (tests), but at most about `max_text`
    /// bytes of message text (appended, and new entries' last text block)
    /// per drain: the rest stays for the next (`more`). And the texts
    /// travel apart from the JSON, so the host need not parse them: each
    /// `appended` item has no `text`, and each new entry listed (by
    /// position in `newEntries`) in `$cut` has its last block's text empty.
    pub fn drain_parts(&mut self, max_text: usize) -> Option<Drained> {
        self.drain(max_text, true)
    }

    fn drain(&mut self, max_text: usize, split: bool) -> Option<Drained> {
        if !self.changes.dirty {
            return None;
        }
        self.drains += 1;
        let DrainPlan {
            changes,
            carried,
            left: carried_left,
            deferred,
            first_deferred_new,
            keyed,
        } = self.entry_changes(max_text);
        let keyed_left = keyed[0].len() < self.changes.tool_calls.len()
            || keyed[1].len() < self.changes.compactions.len();
        let more = first_deferred_new.is_some() || !carried_left.is_empty() || keyed_left;
        let pending = self.changes.pending.then(|| self.pending_delta());
        let drain = Drain {
            st: self,
            changes,
            keyed,
            pending,
            split,
            more,
            apart: Apart::default(),
        };
        let json = serde_json::to_string(&drain).expect("a drain always serializes");
        let text_spans = if split { drain.texts() } else { Vec::new() };
        let apart: Vec<DrainText> = (drain.apart.strings().into_iter())
            .map(|s| DrainText::Owned(s.to_owned()))
            .collect();
        let sent = drain.keyed.map(|ids| {
            ids.into_iter()
                .map(|(index, id)| (index, id.to_owned()))
                .collect::<Vec<_>>()
        });
        let mut texts: Vec<DrainText> = text_spans
            .into_iter()
            .map(|span| self.drain_text(span))
            .collect();
        texts.extend(apart);
        let mut touched = std::mem::take(&mut self.changes.entries);
        // The new entries put off, from the first on: all still to send.
        let mut left = match first_deferred_new {
            Some(from) => touched.split_off(&from),
            None => BTreeSet::new(),
        };
        left.extend(carried_left);
        if let Some(first) = self.entries.front().map(|e| e.index) {
            // What the host now has (not the entries put off whole).
            for index in touched.range(first..) {
                if deferred.contains(index) {
                    continue;
                }
                if let Some(entry) = self.entries.get_mut((index - first) as usize) {
                    entry.seen_blocks = entry.content.len();
                    entry.seen_text = entry.last_text_len().unwrap_or(0);
                    entry.seen_dropped = entry.dropped_bytes + entry.dropped_blocks;
                    entry.extra_changed.clear();
                }
            }
            for seen in &carried {
                if let Some(entry) = self.entries.get_mut((seen.index - first) as usize) {
                    entry.seen_blocks = seen.blocks;
                    entry.seen_text = seen.text;
                }
            }
        }
        // New entries put off are still new to the host next time.
        if self.changes.pending {
            self.seen_pending = self.pending.iter().map(|p| p.seq).collect();
        }
        let first_new = first_deferred_new.unwrap_or(self.next_index);
        let dropped_keys_seen = self.dropped_keys;
        // The tool calls and compactions sent leave the change set; the
        // rest wait there.
        let mut tools_left = std::mem::take(&mut self.changes.tool_calls);
        let mut compactions_left = std::mem::take(&mut self.changes.compactions);
        let [sent_tools, sent_compactions] = sent;
        for (left, sent, map) in [
            (&mut tools_left, sent_tools, &mut self.tool_calls),
            (
                &mut compactions_left,
                sent_compactions,
                &mut self.compactions,
            ),
        ] {
            for key in &sent {
                left.remove(key);
                if let Some(k) = map.get_mut(&key.1) {
                    k.sent = true;
                    k.changed.clear();
                }
            }
        }
        self.changes = Default::default();
        self.changes.first_new = first_new;
        self.changes.dropped_keys_seen = dropped_keys_seen;
        self.changes.entries = left;
        self.changes.tool_calls = tools_left;
        self.changes.compactions = compactions_left;
        self.changes.dirty = more;
        Some(Drained { json, texts, more })
    }

    /// The pending requests the host's list lost (positions in it,
    /// ascending) and gained (in order) since the last drain. The list is
    /// a queue (new ones at the end, any may go), so this rebuilds it.
    fn pending_delta(&self) -> (Vec<usize>, Vec<&Pending>) {
        let now: std::collections::HashSet<u64> = self.pending.iter().map(|p| p.seq).collect();
        let removed = (self.seen_pending.iter().enumerate())
            .filter(|(_, seq)| !now.contains(seq))
            .map(|(i, _)| i)
            .collect();
        // Both lists are in `seq` order: what the host has is a prefix in
        // `seq` terms of what came since, so anything newer is new.
        let newest_seen = self.seen_pending.last().copied().unwrap_or(0);
        let added = (self.pending.iter())
            .filter(|p| p.seq > newest_seen)
            .collect();
        (removed, added)
    }

    /// The entry changes of one drain, carrying about `max_text` bytes at
    /// most: message text, whole entries by their size, tool calls and
    /// compactions by theirs (an unknown update or a tool call can be
    /// megabytes: a drain of all of them was one JSON text of up to the
    /// view's whole state for JS to parse). At least one thing moves per
    /// drain, so every drain makes progress.
    fn entry_changes(&self, max_text: usize) -> DrainPlan<'_> {
        let mut picked = DrainPlan {
            changes: Vec::new(),
            carried: Vec::new(),
            left: BTreeSet::new(),
            deferred: BTreeSet::new(),
            first_deferred_new: None,
            keyed: [Vec::new(), Vec::new()],
        };
        let mut budget = max_text;
        let mut moved = false;
        let Some(first) = self.entries.front().map(|e| e.index) else {
            // No entries: no tool call or compaction either.
            return picked;
        };
        for &index in self.changes.entries.range(first..) {
            let Some(entry) = self.entries.get((index - first) as usize) else {
                continue;
            };
            if index >= self.changes.first_new {
                // New entries come last (highest indices): once one is put
                // off, so are the rest, and the next drain starts there.
                // What it carries inline: all but its last text block's
                // text (which may be cut).
                // Its JSON counts too: a backlog of text-only entries
                // (nothing inline but their text) once went out as
                // thousands of empty ones when the budget was spent, and
                // every later drain walked them.
                let inline = NEW_ENTRY_COST
                    + entry
                        .bytes()
                        .saturating_sub(entry.last_text_len().unwrap_or(0));
                if moved && inline > budget {
                    // This one and the rest, next time: a split, not a
                    // walk (a backlog of thousands made each drain
                    // milliseconds long).
                    picked.first_deferred_new = Some(index);
                    break;
                }
                budget = budget.saturating_sub(inline);
                let taken = last_text(entry).map(|text| {
                    let n = cut(text, budget, !moved);
                    if n < text.len() {
                        picked.carried.push(Seen {
                            index,
                            blocks: entry.content.len(),
                            text: n,
                        });
                        picked.left.insert(index);
                    }
                    n
                });
                budget = budget.saturating_sub(taken.unwrap_or(0));
                moved = true;
                picked.changes.push(EntryChange::New(entry, taken));
                continue;
            }
            // The host's last block, which only text-only blocks outgrow:
            // its text from where the host is, to the end of the piece
            // that holds it (`lent`); `more_text`: another piece follows.
            let block = entry.seen_blocks.saturating_sub(1);
            let (grown_text, more_text) = entry
                .content
                .get(block)
                .filter(|_| entry.seen_blocks > 0)
                .and_then(text_only)
                .and_then(|open| entry.lent.piece_from(block, open, entry.seen_text))
                .unwrap_or(("", false));
            let blocks = entry.content.get(entry.seen_blocks..).unwrap_or(&[]);
            let dropped = (entry.seen_dropped != entry.dropped_bytes + entry.dropped_blocks)
                .then_some((entry.dropped_bytes, entry.dropped_blocks));
            let mut grown = Grown {
                index,
                block,
                from: entry.seen_text,
                text: "",
                blocks: &[],
                extra: (!entry.extra_changed.is_empty()).then_some(entry),
                dropped,
            };
            // The changed `extra` keys, whole or not at all.
            let extra_cost = grown
                .extra
                .map_or(0, |e| changed_bytes(&e.extra, &e.extra_changed));
            if moved && extra_cost > budget {
                // All of it, next time.
                picked.left.insert(index);
                picked.deferred.insert(index);
                continue;
            }
            budget = budget.saturating_sub(extra_cost);
            moved |= grown.extra.is_some();
            // Then the text, cut to the budget; the new blocks only once
            // it is all through (they come after it), and if they fit.
            let n = cut(grown_text, budget, !moved);
            grown.text = &grown_text[..n];
            budget = budget.saturating_sub(n);
            moved |= n > 0;
            let blocks_cost = blocks.iter().map(size::value).sum::<usize>();
            if n == grown_text.len() && !more_text && (!moved || blocks_cost <= budget) {
                grown.blocks = blocks;
                budget = budget.saturating_sub(blocks_cost);
                moved |= !blocks.is_empty();
            } else {
                picked.carried.push(Seen {
                    index,
                    blocks: entry.seen_blocks,
                    text: entry.seen_text + n,
                });
                picked.left.insert(index);
            }
            let sends = !grown.text.is_empty() || !grown.blocks.is_empty();
            if sends || grown.extra.is_some() || dropped.is_some() {
                moved = true;
                picked.changes.push(EntryChange::Appended(grown));
            }
        }
        // Changed tool calls and compactions: whole when new to the host,
        // else their changed keys. One whose entry was
        // put off waits for it (a host copy given the fields without the
        // entry would keep them after the entry went unsent); one whose
        // entry goes out new now was counted with it; the others count
        // their size, and once the budget is spent wait unvisited.
        let keyed = [
            (&self.tool_calls, &self.changes.tool_calls),
            (&self.compactions, &self.changes.compactions),
        ];
        let new_from = (self.changes.first_new, String::new());
        let put_off_from = (picked.first_deferred_new.unwrap_or(u64::MAX), String::new());
        for (i, (map, changed)) in keyed.into_iter().enumerate() {
            for (index, id) in changed.range(..&new_from) {
                if picked.deferred.contains(index) {
                    continue;
                }
                // One the host has: the keys that changed. Else what its
                // entry counts besides text: its fields, kept up to date
                // by every merge (none for one gone from the map, which
                // is sent as nothing and forgotten).
                let entry = (index.checked_sub(first)).and_then(|at| self.entries.get(at as usize));
                let cost = match (map.get(id), entry) {
                    (Some(k), _) if k.sent => changed_bytes(&k.fields, &k.changed),
                    (Some(_), Some(e)) => e.other_bytes,
                    _ => 0,
                };
                if moved && cost > budget {
                    // It and the rest wait (unvisited) for the next drain.
                    break;
                }
                budget = budget.saturating_sub(cost);
                moved = true;
                picked.keyed[i].push((*index, id.as_str()));
            }
            for (index, id) in changed.range(&new_from..&put_off_from) {
                moved = true;
                picked.keyed[i].push((*index, id.as_str()));
            }
        }
        picked
    }
}

/// What the keys `changed` of `fields` count (see [`size`]).
fn changed_bytes(fields: &Map<String, Value>, changed: &BTreeSet<String>) -> usize {
    (changed.iter())
        .filter_map(|key| fields.get_key_value(key))
        .map(|(key, v)| size::member(key, v))
        .sum()
}

/// What one drain carries ([`SessionState::entry_changes`]).
struct DrainPlan<'a> {
    changes: Vec<EntryChange<'a>>,
    /// Entries whose text was cut (or new blocks put off): what the host
    /// has of each.
    carried: Vec<Seen>,
    /// Entries before `first_deferred_new` with something left for the
    /// next drain.
    left: BTreeSet<u64>,
    /// Entries before `first_deferred_new` not sent at all (a subset of
    /// `left`).
    deferred: BTreeSet<u64>,
    /// The first new entry not sent: it and every later one wait for the
    /// next drain, with their tool calls and compactions.
    first_deferred_new: Option<u64>,
    /// The tool calls and compactions sent: their entry's index and id
    /// (the others stay in the change set for the next drain).
    keyed: [Vec<(u64, &'a str)>; 2],
}

/// How much of an entry the host has: its first `blocks` blocks, `text`
/// bytes of the last of them.
struct Seen {
    index: u64,
    blocks: usize,
    text: usize,
}

struct Drain<'a> {
    st: &'a SessionState,
    changes: Vec<EntryChange<'a>>,
    /// Tool calls, compactions: the ids sent.
    keyed: [Vec<(u64, &'a str)>; 2],
    /// When the pending requests changed: positions gone, requests added.
    pending: Option<(Vec<usize>, Vec<&'a Pending>)>,
    /// Texts apart from the JSON (see [`Drained`]).
    split: bool,
    more: bool,
    /// When `split`: the long strings of tool calls and blocks left out.
    apart: Apart<'a>,
}

/// Where a text a drain leaves out of its JSON is: entry `index`, block
/// `block`, bytes `from..upto` of its text (shared segments included).
struct TextSpan {
    index: u64,
    block: usize,
    from: usize,
    upto: usize,
}

impl Drain<'_> {
    /// The texts left out of the JSON, in the order [`Drained`] says.
    fn texts(&self) -> Vec<TextSpan> {
        let mut texts = Vec::new();
        for change in &self.changes {
            if let EntryChange::Appended(g) = change {
                texts.push(TextSpan {
                    index: g.index,
                    block: g.block,
                    from: g.from,
                    upto: g.from + g.text.len(),
                });
            }
        }
        for change in &self.changes {
            if let EntryChange::New(entry, Some(n)) = change {
                texts.push(TextSpan {
                    index: entry.index,
                    block: entry.content.len().saturating_sub(1),
                    from: 0,
                    upto: *n,
                });
            }
        }
        texts
    }
}

impl SessionState {
    /// A drain's text: shared with the entry when long (see `lent`),
    /// else a copy.
    fn drain_text(&mut self, span: TextSpan) -> DrainText {
        let first = self.entries.front().map_or(0, |e| e.index);
        let entry = span
            .index
            .checked_sub(first)
            .and_then(|at| self.entries.get_mut(at as usize));
        // The drain just read this text from this block: it is there.
        let Some(entry) = entry else {
            return DrainText::Owned(String::new());
        };
        let Some(open) = entry.content.get_mut(span.block).and_then(text_only_mut) else {
            return DrainText::Owned(String::new());
        };
        if let Some(shared) = entry.lent.share(span.block, open, span.from, span.upto) {
            return shared;
        }
        let lent = entry.lent.len_of(span.block);
        let text = open.get(span.from.saturating_sub(lent)..span.upto.saturating_sub(lent));
        DrainText::Owned(text.unwrap_or_default().to_owned())
    }
}

/// An `appended` item, the `at`-th; with `apart` (texts travel apart):
/// its text and its blocks' long strings left out.
struct Appended<'c, 'a> {
    grown: &'c Grown<'a>,
    at: usize,
    apart: Option<&'c Apart<'a>>,
}

impl Serialize for Appended<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let g = self.grown;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("index", &g.index)?;
        if self.apart.is_none() {
            m.serialize_entry("text", g.text)?;
        }
        if !g.blocks.is_empty() {
            match self.apart {
                Some(a) => {
                    let path = [
                        Seg::Key("appended"),
                        Seg::Index(self.at),
                        Seg::Key("blocks"),
                    ];
                    a.under_all(&path, || m.serialize_entry("blocks", &Items(a, g.blocks)))?
                }
                None => m.serialize_entry("blocks", g.blocks)?,
            }
        }
        if let Some(e) = g.extra {
            let changed = (e.extra_changed.iter()).filter_map(|key| e.extra.get_key_value(key));
            m.serialize_entry("extra", &Fields(changed))?;
        }
        // Like an entry's own JSON: only the counters above zero.
        if let Some((bytes, blocks)) = g.dropped {
            if bytes > 0 {
                m.serialize_entry("droppedBytes", &bytes)?;
            }
            if blocks > 0 {
                m.serialize_entry("droppedBlocks", &blocks)?;
            }
        }
        m.end()
    }
}

/// Key-value pairs as a JSON object.
struct Fields<I>(I);

impl<'a, I: Iterator<Item = (&'a String, &'a Value)> + Clone> Serialize for Fields<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.clone())
    }
}

impl Serialize for Drain<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let st = self.st;
        let c = &st.changes;
        let mut m = s.serialize_map(None)?;
        let mut new = Vec::new();
        let mut cut_new = Vec::new();
        let mut appended = Vec::new();
        m.serialize_entry("seq", &st.drains)?;
        for change in &self.changes {
            match change {
                EntryChange::New(e, taken) => {
                    let carried = match (self.split, taken) {
                        (_, None) => None,
                        (true, Some(_)) => {
                            cut_new.push(new.len());
                            Some("")
                        }
                        (false, Some(n)) => last_text(e).map(|t| &t[..*n]),
                    };
                    let apart = self.split.then_some((&self.apart, new.len()));
                    new.push(EntryJson(e, carried, Texts::Inline, apart));
                }
                EntryChange::Appended(grown) => appended.push(Appended {
                    grown,
                    at: appended.len(),
                    apart: self.split.then_some(&self.apart),
                }),
            }
        }
        if !new.is_empty() {
            m.serialize_entry("newEntries", &new)?;
        }
        if !cut_new.is_empty() {
            m.serialize_entry("$cut", &cut_new)?;
        }
        if !appended.is_empty() {
            m.serialize_entry("appended", &appended)?;
        }
        if c.removed {
            let first = st.entries.front().map_or(st.next_index, |e| e.index);
            m.serialize_entry("firstIndex", &first)?;
            m.serialize_entry("droppedEntries", &st.dropped_entries)?;
        }
        let keyed = [
            ("toolCalls", "toolCallFields", &st.tool_calls),
            ("compactions", "compactionFields", &st.compactions),
        ];
        for ((whole_key, fields_key, map), ids) in keyed.into_iter().zip(&self.keyed) {
            let sent = ids.iter().filter_map(|(_, id)| map.get_key_value(*id));
            let whole = sent.clone().filter(|(_, k)| !k.sent);
            let fields = sent.filter(|(_, k)| k.sent);
            if whole.clone().next().is_some() {
                if self.split {
                    let value = ById(&self.apart, whole_key, whole, false);
                    m.serialize_entry(whole_key, &value)?;
                } else {
                    m.serialize_entry(whole_key, &FieldsById(whole, None))?;
                }
            }
            if fields.clone().next().is_some() {
                if self.split {
                    let value = ById(&self.apart, fields_key, fields, true);
                    m.serialize_entry(fields_key, &value)?;
                } else {
                    m.serialize_entry(fields_key, &ChangedFieldsById(fields))?;
                }
            }
        }
        // Serialized in place (each may be megabytes: no copy per drain).
        put(&mut m, c.plan, "plan", &st.plan)?;
        put_keys(&mut m, &c.modes, "modes", Some(&st.modes))?;
        put_keys(&mut m, &c.config, "config", Some(&st.config))?;
        put_keys(&mut m, &c.commands, "commands", Some(&st.commands))?;
        put_keys(&mut m, &c.info, "info", Some(&st.info))?;
        put_keys(&mut m, &c.usage, "usage", st.usage.as_ref())?;
        put(&mut m, c.stop_reason, "stopReason", &st.stop_reason)?;
        put(&mut m, c.running, "running", &st.running)?;
        if let Some((removed, added)) = &self.pending {
            if !removed.is_empty() {
                m.serialize_entry("pendingRemoved", removed)?;
            }
            if !added.is_empty() {
                m.serialize_entry("pendingAdded", &pending_json(added.iter().copied()))?;
            }
        }
        if st.dropped_keys != c.dropped_keys_seen {
            m.serialize_entry("droppedKeys", &st.dropped_keys)?;
        }
        if !self.apart.is_empty() {
            m.serialize_entry("$apart", &self.apart.paths())?;
        }
        if self.split && self.more {
            m.serialize_entry("$more", &true)?;
        }
        m.end()
    }
}

/// Blocks as a JSON array, their long strings left out into `apart`.
struct Items<'c, 'a>(&'c Apart<'a>, &'a [Value]);

impl Serialize for Items<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Items(apart, items) = *self;
        let mut seq = s.serialize_seq(Some(items.len()))?;
        for (i, item) in items.iter().enumerate() {
            apart.under(Seg::Index(i), || {
                seq.serialize_element(&Walk(Some(apart), item))
            })?;
        }
        seq.end()
    }
}

/// Tool calls or compactions by id (`root`: their key in the drain):
/// whole, or (`changed`) only their keys that changed since the last
/// drain sent them; their long strings left out into the [`Apart`].
struct ById<'c, 'a, I>(&'c Apart<'a>, &'static str, I, bool);

impl<'a, I: Iterator<Item = (&'a String, &'a Keyed)> + Clone> Serialize for ById<'_, 'a, I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ById(apart, root, ids, changed) = self;
        let mut m = s.serialize_map(None)?;
        for (id, k) in ids.clone() {
            apart.under_all(&[Seg::Key(root), Seg::Key(id)], || {
                if *changed {
                    let keys = k.changed.iter();
                    let fields = keys.filter_map(|key| k.fields.get_key_value(key));
                    m.serialize_entry(id, &WalkFields(apart, fields))
                } else {
                    m.serialize_entry(id, &WalkFields(apart, k.fields.iter()))
                }
            })?;
        }
        m.end()
    }
}

/// `key: {the keys of `value` that changed}` into `m`, or all of it.
fn put_keys<M: SerializeMap>(
    m: &mut M,
    change: &FieldChange,
    key: &str,
    value: Option<&Map<String, Value>>,
) -> Result<(), M::Error> {
    let Some(value) = value else {
        return Ok(());
    };
    if change.whole {
        m.serialize_entry(key, value)
    } else if !change.keys.is_empty() {
        m.serialize_entry(
            key,
            &Fields(change.keys.iter().filter_map(|k| value.get_key_value(k))),
        )
    } else {
        Ok(())
    }
}

/// The state's fields have a few different types; serialize any of them.
/// `key: value` into `m` when `changed`.
fn put<M: SerializeMap, T: Serialize>(
    m: &mut M,
    changed: bool,
    key: &str,
    value: &T,
) -> Result<(), M::Error> {
    if changed {
        m.serialize_entry(key, value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::view::{SessionState, ViewOptions};

    fn chunk(text: &str) -> String {
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
            .to_string()
    }

    /// The next drain, without its `seq` (checked: one more each time).
    fn drain(s: &mut SessionState) -> Value {
        let mut d: Value = serde_json::from_str(&s.drain_json().expect("changed")).unwrap();
        let seq = d.as_object_mut().unwrap().remove("seq");
        assert_eq!(seq, Some(json!(s.drains)));
        d
    }

    /// `applyChanges` of `lib/session-fold.js`, ported: apply a drain
    /// (texts apart, put back as `lib/session-view.js` does) to the host's
    /// copy of the state.
    fn apply(host: &mut Value, d: &crate::view::changes::Drained) {
        let mut c: Value = serde_json::from_str(&d.json).unwrap();
        let mut texts = d.texts.iter();
        for a in c["appended"].as_array_mut().into_iter().flatten() {
            a["text"] = texts.next().unwrap().as_str().into();
        }
        let cut = c.get("$cut").cloned().unwrap_or(json!([]));
        for j in cut.as_array().unwrap() {
            let e = &mut c["newEntries"][j.as_u64().unwrap() as usize];
            let last = e["content"].as_array_mut().unwrap().last_mut().unwrap();
            last["text"] = texts.next().unwrap().as_str().into();
        }
        let paths = c.as_object_mut().unwrap().remove("$apart");
        for path in paths
            .as_ref()
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mut at = &mut c;
            for step in path.as_array().unwrap() {
                at = match step {
                    Value::String(key) => &mut at[key.as_str()],
                    n => &mut at[n.as_u64().unwrap() as usize],
                };
            }
            assert!(at.is_null(), "a string apart leaves null in its place");
            *at = texts.next().unwrap().as_str().into();
        }
        assert!(texts.next().is_none(), "every text has its place");
        if let Some(first) = c.get("firstIndex").and_then(Value::as_u64) {
            let entries = std::mem::take(host["entries"].as_array_mut().unwrap());
            let mut keep = Vec::new();
            for e in entries {
                if e["index"].as_u64().unwrap() >= first {
                    keep.push(e);
                } else if e["kind"] == "tool_call" {
                    let id = e["toolCallId"].as_str().unwrap();
                    host["toolCalls"].as_object_mut().unwrap().remove(id);
                } else if e["kind"] == "compaction" {
                    let id = e["compactionId"].as_str().unwrap();
                    host["compactions"].as_object_mut().unwrap().remove(id);
                }
            }
            host["entries"] = Value::Array(keep);
            host["droppedEntries"] = c["droppedEntries"].clone();
        }
        let entries = host["entries"].as_array_mut().unwrap();
        let first = entries.first().map_or(0, |e| e["index"].as_u64().unwrap());
        for a in c["appended"].as_array().cloned().unwrap_or_default() {
            let entry = &mut entries[(a["index"].as_u64().unwrap() - first) as usize];
            let content = entry["content"].as_array_mut().unwrap();
            let more = a["text"].as_str().unwrap();
            if !more.is_empty() {
                let last = content.last_mut().unwrap();
                last["text"] = (last["text"].as_str().unwrap().to_owned() + more).into();
            }
            content.extend(a["blocks"].as_array().cloned().unwrap_or_default());
            for (k, v) in a["extra"].as_object().into_iter().flatten() {
                if entry.get("extra").is_none() {
                    entry["extra"] = json!({});
                }
                entry["extra"][k] = v.clone();
            }
            for k in ["droppedBytes", "droppedBlocks"] {
                if let Some(n) = a.get(k) {
                    entry[k] = n.clone();
                }
            }
        }
        assert!(c.get("updatedEntries").is_none(), "entries only grow");
        entries.extend(c["newEntries"].as_array().cloned().unwrap_or_default());
        for (key, fields) in [
            ("toolCalls", "toolCallFields"),
            ("compactions", "compactionFields"),
        ] {
            for (k, v) in c[key].as_object().into_iter().flatten() {
                host[key][k] = v.clone();
            }
            for (k, changed) in c[fields].as_object().into_iter().flatten() {
                let into = host[key][k].as_object_mut().expect("the host has it");
                for (f, v) in changed.as_object().unwrap() {
                    into.insert(f.clone(), v.clone());
                }
            }
        }
        if let Some(gone) = c["pendingRemoved"].as_array() {
            let gone: Vec<u64> = gone.iter().map(|i| i.as_u64().unwrap()).collect();
            let list = host["pending"].as_array_mut().unwrap();
            let mut i = 0;
            list.retain(|_| {
                i += 1;
                !gone.contains(&(i - 1))
            });
        }
        for p in c["pendingAdded"].as_array().cloned().unwrap_or_default() {
            host["pending"].as_array_mut().unwrap().push(p);
        }
        for k in ["plan", "stopReason", "running", "droppedKeys"] {
            if let Some(v) = c.get(k) {
                host[k] = v.clone();
            }
        }
        // Session-wide objects: the keys that changed.
        for k in ["modes", "config", "commands", "info", "usage"] {
            let Some(changed) = c.get(k).and_then(Value::as_object) else {
                continue;
            };
            if host[k].is_null() {
                host[k] = json!({});
            }
            for (key, v) in changed {
                host[k][key] = v.clone();
            }
        }
    }

    /// Drain all with a budget of `cap`: the host's copy after each, and
    /// the most one drain carried (JSON and texts).
    fn drain_into(s: &mut SessionState, host: &mut Value, cap: usize) -> usize {
        let mut most = 0;
        while let Some(d) = s.drain_parts(cap) {
            most = most.max(d.json.len() + d.texts.iter().map(|t| t.as_str().len()).sum::<usize>());
            apply(host, &d);
        }
        most
    }

    /// One step of a host's life with a streaming agent (`lent_text_*`).
    #[derive(Debug, Clone)]
    enum Step {
        /// A chunk of message `m` (0..3), `len` bytes, non-ASCII if `wide`.
        Chunk {
            m: u8,
            len: usize,
            wide: bool,
        },
        Image,
        /// Drain everything with this text budget, and apply it.
        Drain(usize),
        /// One drain with this budget (the rest waits while text grows).
        DrainOnce(usize),
        Snapshot,
    }

    fn steps() -> impl proptest::strategy::Strategy<Value = Vec<Step>> {
        use proptest::prelude::*;
        let step = prop_oneof![
            6 => (0u8..3, 0usize..150_000, proptest::bool::weighted(0.1))
                .prop_map(|(m, len, wide)| Step::Chunk { m, len, wide }),
            1 => Just(Step::Image),
            3 => prop_oneof![Just(1000usize), Just(64 * 1024), Just(256 * 1024), Just(usize::MAX)]
                .prop_map(Step::Drain),
            2 => prop_oneof![Just(70 * 1024usize), Just(200 * 1024)].prop_map(Step::DrainOnce),
            1 => Just(Step::Snapshot),
        ];
        proptest::collection::vec(step, 1..24)
    }

    /// Run `steps` on a view that drains (and so shares texts) and one that
    /// never does; the host's copy, the drained view's snapshot and the
    /// undrained one's must all agree. Returns how many texts were shared.
    fn run_lent(steps: &[Step], options: ViewOptions) -> usize {
        use crate::view::DrainText;
        let mut s = SessionState::new("s", options);
        let mut plain = SessionState::new("s", options);
        let mut host = s.snapshot_value();
        let mut shared = 0;
        for (n, step) in steps.iter().enumerate() {
            let update = match step {
                Step::Chunk { m, len, wide } => {
                    let unit = if *wide { "é" } else { "x" };
                    let text: String = format!("{n}{}", unit.repeat(*len / unit.len()));
                    Some(
                        json!({"sessionUpdate": "agent_message_chunk", "messageId": format!("m{m}"),
                        "content": {"type": "text", "text": text}}),
                    )
                }
                Step::Image => Some(
                    json!({"sessionUpdate": "agent_message_chunk", "messageId": "m0",
                    "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}}),
                ),
                Step::Drain(cap) | Step::DrainOnce(cap) => {
                    let once = matches!(step, Step::DrainOnce(_));
                    while let Some(d) = s.drain_parts(*cap) {
                        shared += d
                            .texts
                            .iter()
                            .filter(|t| matches!(t, DrainText::Shared { .. }))
                            .count();
                        apply(&mut host, &d);
                        if once {
                            break;
                        }
                    }
                    if !once {
                        assert!(host == s.snapshot_value(), "the host's copy after draining");
                    }
                    None
                }
                Step::Snapshot => {
                    assert!(
                        s.snapshot_value() == plain.snapshot_value(),
                        "snapshots differ"
                    );
                    // A host's snapshot(), its texts apart: it drains,
                    // then freezes growing texts, which the drains after
                    // it go on from. (Undrained, nothing is frozen.)
                    if n % 2 == 0 {
                        while let Some(d) = s.drain_parts(64 * 1024) {
                            apply(&mut host, &d);
                        }
                    }
                    let (parts, texts) = s.snapshot_apart(1 << 16);
                    let apart = crate::view::json::tests::join_apart(&parts, &texts);
                    assert!(
                        apart == plain.snapshot_value(),
                        "the apart snapshot differs"
                    );
                    None
                }
            };
            if let Some(u) = update {
                s.apply_update_json(Some(&u.to_string()));
                plain.apply_update_json(Some(&u.to_string()));
            }
        }
        while let Some(d) = s.drain_parts(64 * 1024) {
            apply(&mut host, &d);
        }
        assert!(host == s.snapshot_value(), "the host's copy at the end");
        assert!(
            s.snapshot_value() == plain.snapshot_value(),
            "snapshots differ at the end"
        );
        // The snapshot's text form too (the parts a host's snapshot() reads;
        // the head's `$seq` counts drains, which only one of them had).
        let (a, b) = (s.snapshot_parts(1 << 16), plain.snapshot_parts(1 << 16));
        assert!(a[1..] == b[1..], "the snapshots' parts differ");
        shared
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Texts shared with the host change nothing anyone sees: drains,
        /// snapshots and caps (small ones drop chunks and entries) agree
        /// with a view that never shared a byte.
        #[test]
        fn lent_text_changes_nothing_seen(steps in steps(), small in proptest::bool::ANY) {
            let options = if small {
                ViewOptions { max_entries: 3, max_text_bytes: 300_000, max_blocks: 3, max_total_bytes: 500_000, ..ViewOptions::default() }
            } else {
                ViewOptions::default()
            };
            run_lent(&steps, options);
        }
    }

    #[test]
    fn the_rest_of_a_shared_text_is_the_last_drain() {
        // A drain cut inside a long text shares all of it (frozen, the
        // growing string left empty); the next takes the rest, and there
        // is nothing after it: no empty change.
        let mut s = SessionState::new("s", ViewOptions::default());
        let u = json!({"sessionUpdate": "agent_message_chunk", "messageId": "m",
            "content": {"type": "text", "text": "x".repeat(300 * 1024)}});
        s.apply_update_json(Some(&u.to_string()));
        let first = s.drain_parts(200 * 1024).unwrap();
        assert!(first.more);
        let rest = s.drain_parts(usize::MAX).unwrap();
        let len = |d: &super::Drained| d.texts.iter().map(|t| t.as_str().len()).sum::<usize>();
        assert_eq!(len(&first) + len(&rest), 300 * 1024);
        assert!(!rest.more, "{}", rest.json);
        assert!(s.drain_parts(usize::MAX).is_none());
    }

    #[test]
    fn a_streamed_message_is_shared_with_the_host_not_copied() {
        use Step::*;
        let chunk = |len| Chunk {
            m: 0,
            len,
            wide: false,
        };
        // Drained whole, cut by a budget (the rest stays growing), then
        // grown further; a second block after an image; a new entry.
        let steps = [
            chunk(100_000),
            Drain(usize::MAX),
            chunk(200_000),
            Drain(64 * 1024),
            chunk(70_000),
            // Cut inside what it froze, then more text: the segment's
            // rest goes first, then the growing text.
            DrainOnce(70 * 1024),
            chunk(90_000),
            DrainOnce(200 * 1024),
            chunk(10),
            Drain(usize::MAX),
            Snapshot,
            Image,
            chunk(90_000),
            Drain(usize::MAX),
            Chunk {
                m: 1,
                len: 80_000,
                wide: false,
            },
            Drain(usize::MAX),
            Snapshot,
        ];
        let shared = run_lent(&steps, ViewOptions::default());
        assert!(shared >= 4, "{shared} texts shared");
    }

    #[test]
    fn a_drain_carries_about_its_budget_of_whole_entries_too() {
        // Unknown updates of 10 KiB between text chunks; drains of 16 KiB.
        let mut s = SessionState::new("s", ViewOptions::default());
        let mut host = s.snapshot_value();
        let mut most = 0;
        for round in 0..5 {
            for i in 0..20 {
                s.apply_update(
                    json!({"sessionUpdate": "x_big", "n": i, "blob": "b".repeat(10_000)}),
                );
                s.apply_update(serde_json::from_str(&chunk(&"t".repeat(3_000 + i))).unwrap());
            }
            s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": format!("c{round}"), "rawOutput": "o".repeat(30_000)}));
            most = most.max(drain_into(&mut s, &mut host, 16 * 1024));
            assert_eq!(host, s.snapshot_value(), "round {round}");
        }
        // The budget and one entry that did not fit (with its tool call).
        assert!(most < 16 * 1024 + 40_000, "a drain carried {most} bytes");
    }

    #[test]
    fn a_backlog_of_small_text_only_entries_goes_out_a_budget_at_a_time() {
        // Turns of user and agent text without messageIds: entries that
        // hold nothing but their text. With the budget spent, the rest
        // went out as thousands of empty entries in one drain.
        let mut s = SessionState::new("s", ViewOptions::default());
        let mut host = s.snapshot_value();
        for i in 0..5000 {
            let kind = if i % 2 == 0 {
                "user_message_chunk"
            } else {
                "agent_message_chunk"
            };
            let update = json!({"sessionUpdate": kind, "content": {"type": "text", "text": format!("turn {i}")}});
            s.apply_update_json(Some(&update.to_string()));
        }
        let budget = 16 * 1024;
        let (mut drains, mut most) = (0, 0);
        while let Some(d) = s.drain_parts(budget) {
            drains += 1;
            most = most.max(d.json.len() + d.texts.iter().map(|t| t.as_str().len()).sum::<usize>());
            apply(&mut host, &d);
        }
        assert_eq!(host, s.snapshot_value());
        assert!(most <= budget + 200, "a drain carried {most} bytes");
        assert!(drains > 5000 * 70 / budget, "{drains} drains");
    }

    #[test]
    fn big_tool_calls_new_or_updated_and_mixed_messages_keep_to_the_budget() {
        const BUDGET: usize = 256 * 1024;
        let mut s = SessionState::new("s", ViewOptions::default());
        let mut host = s.snapshot_value();
        // 200 new tool calls of 256 KiB (the flood of the attack bench).
        for i in 0..200 {
            s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{i}"), "rawOutput": "o".repeat(BUDGET)}));
        }
        let most = drain_into(&mut s, &mut host, BUDGET);
        assert!(most < 2 * BUDGET + 1024, "new tool calls: {most}");
        // Then each sends a 1 MB output: one per drain.
        for i in 0..40 {
            s.apply_update(json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("t{}", 160 + i), "rawOutput": "p".repeat(1_000_000)}));
        }
        let most = drain_into(&mut s, &mut host, BUDGET);
        assert!(
            most < 1_000_000 + BUDGET + 1024,
            "updated tool calls: {most}"
        );
        // Messages of [text, image, text]: the first text travels inline.
        for i in 0..40 {
            for b in [
                json!({"type": "text", "text": "A".repeat(100_000)}),
                json!({"type": "image", "data": ""}),
                json!({"type": "text", "text": "z"}),
            ] {
                s.apply_update(json!({"sessionUpdate": "agent_message_chunk", "messageId": format!("m{i}"), "content": b}));
            }
        }
        let most = drain_into(&mut s, &mut host, BUDGET);
        assert!(most < BUDGET + 110_000, "messages: {most}");
        assert_eq!(host, s.snapshot_value());
    }

    #[test]
    fn long_strings_of_tool_calls_and_blocks_travel_apart_unescaped() {
        let mut s = SessionState::new("s", ViewOptions::default());
        let mut host = s.snapshot_value();
        let out = "\u{1b}[32mok\u{1b}[0m \"é\"\n".repeat(200);
        let old = "let v = 1;\n".repeat(300);
        let image = "QUJD".repeat(1000);
        s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "run", "rawInput": {"command": out}}));
        s.apply_update(json!({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": "hi"}}));
        drain_into(&mut s, &mut host, 1 << 20);
        s.apply_update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": out}},
                        {"type": "diff", "path": "/a", "oldText": old, "newText": "short"}]}),
        );
        s.apply_update(json!({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "image", "mimeType": "image/png", "data": image}}));
        let d = s.drain_parts(1 << 20).expect("changed");
        assert!(
            d.json.len() < 1024,
            "the long strings are not in the JSON: {}",
            d.json
        );
        let texts: Vec<&str> = d.texts.iter().map(|t| t.as_str()).collect();
        assert!(texts.contains(&out.as_str()) && texts.contains(&old.as_str()));
        assert!(texts.contains(&image.as_str()), "a block's too");
        let c: Value = serde_json::from_str(&d.json).unwrap();
        assert!(c["toolCallFields"]["t"]["content"][1]["newText"] == "short");
        apply(&mut host, &d);
        assert_eq!(host, s.snapshot_value());
        // A tool call new to the host: whole, its long strings apart too.
        s.apply_update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "u", "rawOutput": {"output": out}}),
        );
        let d = s.drain_parts(1 << 20).expect("changed");
        assert!(
            d.json
                .contains(r#""$apart":[["toolCalls","u","rawOutput","output"]]"#),
            "{}",
            d.json
        );
        apply(&mut host, &d);
        assert_eq!(host, s.snapshot_value());
        // Drained whole (not apart), nothing is left out.
        let mut whole = SessionState::new("s", ViewOptions::default());
        whole.apply_update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "u", "rawOutput": {"output": out}}),
        );
        assert!(drain(&mut whole).get("$apart").is_none());
    }

    /// A new message entry's blocks too (an image an agent sends as the
    /// first block of a message, between a text's chunks): their long
    /// strings travel apart, the cut text as before, and the host ends
    /// with the state.
    #[test]
    fn long_strings_of_new_entries_blocks_travel_apart() {
        let mut s = SessionState::new("s", ViewOptions::default());
        let mut host = s.snapshot_value();
        let image = "iVBO".repeat(4096);
        let text = "word ".repeat(400);
        s.apply_update(json!({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "image", "mimeType": "image/png", "data": image}}));
        s.apply_update(json!({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": text}}));
        s.apply_update(json!({"sessionUpdate": "agent_message_chunk", "messageId": "n", "content": {"type": "image", "mimeType": "image/png", "data": image}}));
        let d = s.drain_parts(1 << 20).expect("changed");
        assert!(
            d.json.len() < 1024,
            "the images are not in the JSON ({} bytes)",
            d.json.len()
        );
        assert!(
            d.json.contains(
                r#""$apart":[["newEntries",0,"content",0,"data"],["newEntries",1,"content",0,"data"]]"#
            ),
            "{}",
            d.json
        );
        let texts: Vec<&str> = d.texts.iter().map(|t| t.as_str()).collect();
        assert_eq!(
            texts,
            [text.as_str(), image.as_str(), image.as_str()],
            "the cut text first, then the strings apart"
        );
        apply(&mut host, &d);
        assert_eq!(host, s.snapshot_value());
    }

    #[test]
    fn a_tool_call_put_off_with_its_entry_is_not_sent_before_it() {
        // Its entry is put off, then evicted unsent: the host must never
        // have had the tool call (it would keep it forever).
        let options = ViewOptions {
            max_entries: 2,
            ..Default::default()
        };
        let mut s = SessionState::new("s", options);
        let mut host = s.snapshot_value();
        s.apply_update(json!({"sessionUpdate": "x_big", "blob": "b".repeat(10_000)}));
        s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "rawOutput": "o".repeat(10_000)}));
        let d = s.drain_parts(4096).unwrap();
        let v: Value = serde_json::from_str(&d.json).unwrap();
        assert_eq!(v["newEntries"].as_array().unwrap().len(), 1);
        assert!(v.get("toolCalls").is_none(), "{}", d.json);
        assert!(d.more);
        apply(&mut host, &d);
        s.apply_update(json!({"sessionUpdate": "x_small", "n": 1}));
        s.apply_update(json!({"sessionUpdate": "x_small", "n": 2}));
        drain_into(&mut s, &mut host, 4096);
        assert_eq!(host, s.snapshot_value());
        assert!(host["toolCalls"].as_object().unwrap().is_empty());
    }

    #[test]
    fn a_refused_chunk_sends_the_counters_not_the_entry() {
        let mut s = SessionState::new("s", ViewOptions::default());
        let mut host = s.snapshot_value();
        // One message at max_text_bytes (4 MiB), then 1-byte chunks refused.
        for _ in 0..4 {
            s.apply_update_json(Some(&chunk(&"x".repeat(1 << 20))));
        }
        drain_into(&mut s, &mut host, 256 * 1024);
        let mut total = 0;
        for _ in 0..10 {
            s.apply_update_json(Some(&chunk("y")));
            while let Some(d) = s.drain_parts(256 * 1024) {
                total += d.json.len();
                apply(&mut host, &d);
            }
        }
        assert!(total < 1000, "10 refused chunks: {total} bytes of JSON");
        assert_eq!(host, s.snapshot_value());
        assert_eq!(host["entries"][0]["droppedBytes"], 10);
    }

    #[test]
    fn an_update_that_changes_nothing_resends_nothing_big() {
        let mut s = SessionState::new("s", ViewOptions::default());
        let mut host = s.snapshot_value();
        let big = "o".repeat(1 << 20);
        s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": "t", "rawOutput": big}));
        let meta = json!({"k": "v"});
        s.apply_update(json!({"sessionUpdate": "agent_message_chunk", "_meta": meta, "content": {"type": "text", "text": "x".repeat(1 << 20)}}));
        drain_into(&mut s, &mut host, 256 * 1024);
        // The same output again, and a chunk with the same `_meta`.
        s.apply_update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "rawOutput": big}),
        );
        s.apply_update(json!({"sessionUpdate": "agent_message_chunk", "_meta": meta, "content": {"type": "text", "text": "y"}}));
        let most = drain_into(&mut s, &mut host, 256 * 1024);
        assert!(
            most < 100,
            "{most} bytes for a tool call that did not change and one char"
        );
        assert_eq!(host, s.snapshot_value());
        // A real change is still sent.
        s.apply_update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"}),
        );
        let d = s.drain_parts(usize::MAX).unwrap();
        assert!(
            d.json.contains("completed"),
            "{}",
            &d.json[..200.min(d.json.len())]
        );
    }

    #[test]
    fn a_tool_call_the_host_has_is_sent_as_its_changed_keys() {
        let mut s = SessionState::new("s", ViewOptions::default());
        let mut host = s.snapshot_value();
        let big = "i".repeat(1 << 20);
        s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": "t", "rawInput": big, "status": "pending"}));
        s.apply_update(json!({"sessionUpdate": "compaction_update", "compactionId": "c", "status": "running", "note": big}));
        drain_into(&mut s, &mut host, usize::MAX);
        // A status flood: each drain carries the status, not the input.
        for status in ["in_progress", "completed", "failed"] {
            s.apply_update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": status}),
            );
            s.apply_update(json!({"sessionUpdate": "compaction_update", "compactionId": "c", "status": status}));
            let d = s.drain_parts(usize::MAX).unwrap();
            assert!(d.json.len() < 200, "{}", &d.json[..200.min(d.json.len())]);
            let c: Value = serde_json::from_str(&d.json).unwrap();
            assert_eq!(c["toolCallFields"]["t"], json!({"status": status}));
            assert_eq!(c["compactionFields"]["c"], json!({"status": status}));
            assert!(c.get("toolCalls").is_none() && c.get("compactions").is_none());
            apply(&mut host, &d);
        }
        assert_eq!(host, s.snapshot_value());
        // A new one beside it goes whole; a changed key of megabytes is
        // sent (and counted against the budget like the rest).
        s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": "u", "title": "new"}));
        s.apply_update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "rawInput": "j".repeat(1 << 20)}));
        let d = s.drain_parts(usize::MAX).unwrap();
        let c: Value = serde_json::from_str(&d.json).unwrap();
        assert_eq!(c["toolCalls"]["u"]["title"], "new");
        assert_eq!(c["toolCallFields"]["t"].as_object().unwrap().len(), 1);
        apply(&mut host, &d);
        assert_eq!(host, s.snapshot_value());
    }

    #[test]
    fn a_session_object_is_sent_as_its_changed_keys() {
        let mut s = SessionState::new("s", ViewOptions::default());
        let mut host = s.snapshot_value();
        let big = "t".repeat(1 << 20);
        s.apply_update(
            json!({"sessionUpdate": "session_info_update", "title": big, "updatedAt": "0"}),
        );
        s.apply_update(json!({"sessionUpdate": "usage_update", "used": 0, "size": 9, "blob": big}));
        drain_into(&mut s, &mut host, usize::MAX);
        for i in 1..20 {
            s.apply_update(
                json!({"sessionUpdate": "session_info_update", "updatedAt": i.to_string()}),
            );
            s.apply_update(json!({"sessionUpdate": "usage_update", "used": i, "size": 9}));
            let d = s.drain_parts(usize::MAX).unwrap();
            let c: Value = serde_json::from_str(&d.json).unwrap();
            assert_eq!(c["info"], json!({"updatedAt": i.to_string()}));
            assert_eq!(c["usage"], json!({"used": i}), "size did not change");
            apply(&mut host, &d);
        }
        assert_eq!(host, s.snapshot_value());
    }

    #[test]
    fn a_session_field_that_appears_empty_is_sent() {
        // `usage` is null until a usage_update; one with no fields makes it
        // {}: the merge adds nothing, yet the field changed.
        let mut s = SessionState::new("s", ViewOptions::default());
        let mut host = s.snapshot_value();
        s.apply_update(json!({"sessionUpdate": "usage_update"}));
        drain_into(&mut s, &mut host, 1024);
        assert_eq!(host["usage"], json!({}));
        assert_eq!(host, s.snapshot_value());
    }

    #[test]
    fn random_streams_and_budgets_rebuild_the_snapshot() {
        // Small limits (eviction, refused chunks and blocks) and drains of
        // 1..400 bytes at random moments: the host's copy always ends
        // equal to the snapshot.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut deferrals = 0;
        for case in 0..300 {
            let options = ViewOptions {
                max_entries: 1 + rnd(8) as usize,
                max_text_bytes: 50 + rnd(400) as usize,
                max_blocks: 1 + rnd(4) as usize,
                max_keys: 1 + rnd(5) as usize,
                max_total_bytes: 100 + rnd(1500) as usize,
            };
            let mut s = SessionState::new("s", options);
            let mut host = s.snapshot_value();
            for _ in 0..200 {
                let tool = format!("t{}", rnd(4));
                let compaction = format!("c{}", rnd(2));
                let n = rnd(300) as usize;
                let u = match rnd(10) {
                    // A session field that exists only once updated (null, then {}).
                    9 if rnd(2) == 0 => json!({"sessionUpdate": "usage_update"}),
                    9 => json!({"sessionUpdate": "usage_update", "used": n % 3}),
                    0 | 1 => {
                        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a".repeat(n)}})
                    }
                    2 => {
                        json!({"sessionUpdate": "agent_message_chunk", "messageId": format!("m{}", rnd(2)), "content": {"type": "image", "data": "i".repeat(n)}})
                    }
                    3 => json!({"sessionUpdate": "x_big", "blob": "b".repeat(n)}),
                    4 => json!({"sessionUpdate": "tool_call", "toolCallId": tool, "title": "t"}),
                    5 => {
                        json!({"sessionUpdate": "tool_call_update", "toolCallId": tool, "rawOutput": "o".repeat(n)})
                    }
                    6 => {
                        json!({"sessionUpdate": "compaction_update", "compactionId": compaction, "status": "x".repeat(n % 50)})
                    }
                    7 => {
                        json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": compaction, "content": {"type": "text", "text": "s".repeat(n)}})
                    }
                    _ => {
                        json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "u".repeat(n)}, "_meta": {"k": n}})
                    }
                };
                s.apply_update(u);
                // Agent requests come and go (some answered before a drain).
                match rnd(6) {
                    0 => {
                        let key = format!("k{}", rnd(12));
                        s.request_settled(&key);
                        s.request_waiting(
                            key,
                            json!(rnd(100)),
                            "session/request_permission",
                            json!({"n": n}),
                        );
                    }
                    1 => {
                        s.request_settled(&format!("k{}", rnd(12)));
                    }
                    _ => {}
                }
                if rnd(3) == 0 {
                    if let Some(d) = s.drain_parts(1 + rnd(400) as usize) {
                        deferrals += usize::from(d.more);
                        apply(&mut host, &d);
                    }
                }
            }
            drain_into(&mut s, &mut host, 1 + rnd(400) as usize);
            assert_eq!(host, s.snapshot_value(), "case {case}");
        }
        assert!(deferrals > 1000, "the budgets put things off ({deferrals})");
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
        // A block that is not text-only: that block, not the entry.
        s.apply_update_json(Some(
            &json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": ""}})
                .to_string(),
        ));
        let third = drain(&mut s);
        assert_eq!(
            third,
            json!({"appended": [{"index": 0, "text": "", "blocks": [{"type": "image", "data": ""}]}]})
        );
    }

    #[test]
    fn a_long_message_whose_chunks_alternate_meta_is_never_resent() {
        let mut s = SessionState::new("s", ViewOptions::default());
        let mut host = s.snapshot_value();
        s.apply_update_json(Some(&chunk(&"x".repeat(1 << 20))));
        drain_into(&mut s, &mut host, usize::MAX);
        for i in 0..50 {
            s.apply_update(
                json!({"sessionUpdate": "agent_message_chunk", "_meta": {"n": i % 2}, "note": i,
                "content": {"type": "text", "text": "y"}}),
            );
            let d = s.drain_parts(usize::MAX).unwrap();
            assert!(d.json.len() < 120, "{}", &d.json[..200.min(d.json.len())]);
            let c: Value = serde_json::from_str(&d.json).unwrap();
            // Both keys change each time: both, and no text but the chunk.
            let keys: Vec<_> = c["appended"][0]["extra"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            assert_eq!(keys, ["_meta", "note"]);
            assert_eq!(
                d.texts.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
                ["y"]
            );
            apply(&mut host, &d);
        }
        // The same `_meta` twice: only the key that changed.
        s.apply_update(
            json!({"sessionUpdate": "agent_message_chunk", "_meta": {"n": 1}, "note": 99,
            "content": {"type": "text", "text": "z"}}),
        );
        let d = s.drain_parts(usize::MAX).unwrap();
        let c: Value = serde_json::from_str(&d.json).unwrap();
        assert_eq!(c["appended"][0]["extra"], json!({"note": 99}));
        apply(&mut host, &d);
        assert_eq!(host, s.snapshot_value());
    }

    #[test]
    fn text_gained_with_new_extra_and_blocks_is_still_cut_to_the_budget() {
        // Between two drains an entry the host has gains 1 MiB of text,
        // a changed `_meta` and an image block after the text: the text
        // goes out a budget at a time, the block only after it.
        let mut s = SessionState::new("s", ViewOptions::default());
        let mut host = s.snapshot_value();
        s.apply_update_json(Some(&chunk("start ")));
        drain_into(&mut s, &mut host, usize::MAX);
        s.apply_update(
            json!({"sessionUpdate": "agent_message_chunk", "_meta": {"k": 1},
            "content": {"type": "text", "text": "é".repeat(1 << 19)}}),
        );
        s.apply_update(json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}}));
        let cap = 16 * 1024;
        let mut drains = 0;
        let mut block_seen_at = None;
        while let Some(d) = s.drain_parts(cap) {
            let text: usize = d.texts.iter().map(|t| t.as_str().len()).sum();
            assert!(text <= cap, "{text} bytes of text in one drain");
            assert!(d.json.len() < 300, "{}", d.json);
            if d.json.contains("image/png") {
                block_seen_at = Some(drains);
            }
            apply(&mut host, &d);
            drains += 1;
        }
        assert_eq!(host, s.snapshot_value());
        assert!(drains >= (1 << 20) / cap, "{drains} drains");
        assert_eq!(block_seen_at, Some(drains - 1), "the block comes last");
    }

    /// Drains of at most `cap` bytes of text, texts apart: rebuild each
    /// entry's text from them, and check every drain kept to the cap.
    fn drain_all(s: &mut SessionState, cap: usize, texts: &mut Vec<String>) -> usize {
        let mut drains = 0;
        while let Some(d) = s.drain_parts(cap) {
            drains += 1;
            let v: Value = serde_json::from_str(&d.json).unwrap();
            let carried: usize = d.texts.iter().map(|t| t.as_str().len()).sum();
            // At least one char moves, whatever the cap.
            assert!(carried <= cap.max(4), "{carried} bytes in one drain");
            let mut parts = d.texts.into_iter();
            for a in v["appended"].as_array().into_iter().flatten() {
                assert!(a.get("text").is_none(), "texts travel apart");
                texts[a["index"].as_u64().unwrap() as usize]
                    .push_str(parts.next().unwrap().as_str());
            }
            let new = v["newEntries"].as_array().cloned().unwrap_or_default();
            for e in &new {
                texts.push(String::new());
                assert_eq!(e["index"].as_u64().unwrap() as usize, texts.len() - 1);
            }
            for j in v["$cut"].as_array().into_iter().flatten() {
                let e = &new[j.as_u64().unwrap() as usize];
                let last = e["content"].as_array().unwrap().last().unwrap();
                assert_eq!(last["text"], "", "the cut block's text travels apart");
                texts[e["index"].as_u64().unwrap() as usize]
                    .push_str(parts.next().unwrap().as_str());
            }
            assert!(parts.next().is_none(), "every text has its place");
            assert_eq!(v.get("$more").is_some(), d.more);
            assert_eq!(s.is_dirty(), d.more);
        }
        drains
    }

    #[test]
    fn drains_carry_at_most_the_cap_of_text_cut_on_char_boundaries() {
        let mut s = SessionState::new("s", ViewOptions::default());
        let mut texts = Vec::new();
        // One message, then a second one (a new entry) in the same drain;
        // multi-byte chars straddle every cut.
        let pieces = ["ab", "é", "中文", "😀", "x"];
        for (round, cap) in [1, 3, 7, 64].into_iter().enumerate() {
            for (i, p) in pieces.iter().cycle().take(40).enumerate() {
                // Each round continues the last message, then starts one.
                let id = if i < 25 { round } else { round + 1 };
                let u = json!({"sessionUpdate": "agent_message_chunk", "messageId": format!("m{id}"), "content": {"type": "text", "text": p}});
                s.apply_update_json(Some(&u.to_string()));
            }
            assert!(
                drain_all(&mut s, cap, &mut texts) > 1,
                "round {round} cap {cap}"
            );
        }
        assert_eq!(texts.len(), 5);
        let snap = s.snapshot_value();
        let entries = snap["entries"].as_array().unwrap();
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(e["content"][0]["text"].as_str().unwrap(), texts[i]);
        }
        // The same state drained whole, texts inline.
        let mut whole = SessionState::new("s", ViewOptions::default());
        let u = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "é".repeat(10)}});
        whole.apply_update_json(Some(&u.to_string()));
        let d = drain(&mut whole);
        assert_eq!(d["newEntries"][0]["content"][0]["text"], "é".repeat(10));
        assert!(d.get("$cut").is_none() && d.get("$more").is_none());
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

#[cfg(test)]
mod drain_cost {
    use crate::view::{SessionState, ViewOptions};
    use serde_json::json;
    use std::time::Instant;

    /// Not a test: `cargo test --release -p acp-core drain_cost -- --ignored --nocapture`
    /// prints what draining a backlog of new entries costs per drain.
    #[test]
    #[ignore]
    fn print_drain_cost_of_a_backlog() {
        for (n, size, tools) in [
            (5000usize, 1000usize, true),
            (20_000, 100, true),
            (20_000, 100, false),
        ] {
            let mut s = SessionState::new("s", ViewOptions::default());
            for i in 0..n {
                let update = if i % 2 == 0 && !tools {
                    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "z".repeat(size)}})
                } else if i % 2 == 0 {
                    json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{i}"), "title": "x".repeat(size)})
                } else {
                    json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "y".repeat(size)}})
                };
                s.apply_update_json(Some(&update.to_string()));
            }
            let (mut drains, mut most, mut biggest, t0) = (0, 0f64, 0, Instant::now());
            loop {
                let t = Instant::now();
                let Some(d) = s.drain_parts(256 * 1024) else {
                    break;
                };
                most = most.max(t.elapsed().as_secs_f64() * 1e6);
                biggest = biggest
                    .max(d.json.len() + d.texts.iter().map(|t| t.as_str().len()).sum::<usize>());
                drains += 1;
            }
            let all = t0.elapsed().as_secs_f64() * 1e6;
            eprintln!("{n} entries of {size} B (tool calls: {tools}): {drains} drains, mean {:.0} µs, worst {most:.0} µs, biggest {} KiB", all / drains as f64, biggest / 1024);
        }
    }
}
