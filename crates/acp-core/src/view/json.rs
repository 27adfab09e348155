//! A [`SessionState`] as JSON: the whole snapshot, the snapshot in parts
//! that each fit in a JS string (its texts apart, shared with the host),
//! and the pieces a drain writes (entries, tool calls by id, pending
//! requests), all serialized from where they are, without a copy.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{Map, Value};

use super::apart::{Apart, Seg, Walk};
use super::copy::{Holes, WholeCopy};
use super::lent::{DrainText, LentBlock};
use super::state::{text_only, text_only_mut, Entry, EntryKind, Keyed, Pending, SessionState};

impl SessionState {
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
    /// own). Tests only: the plain form the product's
    /// [`Self::snapshot_holed`] is checked against.
    #[cfg(test)]
    pub fn snapshot_parts(&self, part_bytes: usize) -> Vec<String> {
        let mut parts = self.session_wide_parts();
        let entries = self
            .entries
            .iter()
            .map(|e| EntryJson(e, None, Texts::Inline, None));
        let entries = pack(entries, part_bytes, &mut parts);
        let keyed = |map: &HashMap<String, Keyed>, parts: &mut Vec<String>| {
            pack(map.iter().map(|(id, k)| (id, &k.fields)), part_bytes, parts)
        };
        let tools = keyed(&self.tool_calls, &mut parts);
        let compactions = keyed(&self.compactions, &mut parts);
        parts[0] = json(Snapshot(self, Some([entries, tools, compactions]), None));
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
    /// segments are shared with the host.
    pub fn snapshot_apart(&mut self, part_bytes: usize) -> (Vec<String>, Vec<DrainText>) {
        let (parts, texts) = self.snapshot_holed(part_bytes);
        (parts.into_iter().map(WholeCopy::into_json).collect(), texts)
    }

    /// [`Self::snapshot_apart`] in the two steps of a store's copy
    /// ([`super::copy`]): under the views' lock, the parts with the other
    /// long strings (tool output, diffs, images, plans) as holes holding
    /// plain copies; after it, [`WholeCopy::into_json`] escapes each part's.
    /// The reader, which folds every update into the views, waits for the
    /// copies, not for escaping what an agent chose to send.
    pub fn snapshot_holed(&mut self, part_bytes: usize) -> (Vec<WholeCopy>, Vec<DrainText>) {
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
        let out = RefCell::new(Vec::new());
        let holes = Holes::new(&out);
        let h = Some(&holes);
        // The head's place, written last.
        let mut parts = vec![holes.cut()];
        holes.write(&Held(&self.plan, h));
        parts.push(holes.cut());
        for map in [&self.modes, &self.config, &self.commands, &self.info] {
            holes.write(&HeldMap(map, h));
            parts.push(holes.cut());
        }
        holes.write(&self.usage.as_ref().map(|u| HeldMap(u, h)));
        parts.push(holes.cut());
        holes.write(&held_pending(self.pending.iter(), h));
        parts.push(holes.cut());
        let entries = (self.entries.iter().zip(&places))
            .map(|(e, at)| EntryJson(e, None, Texts::Apart(at, &holes), None));
        let entries = pack_holed(entries, part_bytes, &holes, &mut parts);
        let keyed = |map: &HashMap<String, Keyed>, parts: &mut Vec<WholeCopy>| {
            let fields = map.iter().map(|(id, k)| (id, HeldMap(&k.fields, h)));
            pack_holed(fields, part_bytes, &holes, parts)
        };
        let tools = keyed(&self.tool_calls, &mut parts);
        let compactions = keyed(&self.compactions, &mut parts);
        holes.write(&Snapshot(self, Some([entries, tools, compactions]), None));
        parts[0] = holes.cut();
        (parts, texts)
    }

    /// The head's place and the session-wide fields (see
    /// [`Self::snapshot_parts`]).
    #[cfg(test)]
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
        Snapshot(self, None, None)
    }

    /// [`Self::whole`], its message texts left as holes ([`Holes`]).
    pub(crate) fn whole_holed<'a>(&'a self, holes: &'a Holes<'a>) -> impl Serialize + 'a {
        Snapshot(self, None, Some(holes))
    }
}

#[cfg(test)]
fn json<T: Serialize>(value: T) -> String {
    serde_json::to_string(&value).expect("a state always serializes")
}

/// Freeze each long growing text of `e`'s text-only blocks into a shared
/// segment (where the entry's segments may go: one block holds them).
pub(crate) fn freeze_texts(e: &mut Entry) {
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
        block_texts(e, i, open, texts);
        if texts.len() > before {
            places.push((i, texts.len() - before));
        }
    }
    places
}

/// The text of `e`'s text-only block `block` (`open`: its growing string),
/// appended to `texts` as its pieces: its shared segments, then a copy of
/// `open` unless empty.
pub(crate) fn block_texts(e: &Entry, block: usize, open: &str, texts: &mut Vec<DrainText>) {
    if e.lent.len_of(block) > 0 {
        texts.extend(e.lent.segments.iter().map(|segment| DrainText::Shared {
            text: Arc::clone(segment),
            start: 0,
            end: segment.len(),
        }));
    }
    if !open.is_empty() {
        texts.push(DrainText::Owned(open.to_string()));
    }
}

/// `items` as JSON arrays of about `part_bytes` each, appended to `parts`;
/// how many. Tests only, as [`SessionState::snapshot_parts`].
#[cfg(test)]
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

/// [`pack`], each part a [`WholeCopy`] whose long strings are holes: a
/// part is closed when its JSON and its holes' texts reach `part_bytes`
/// (escaped, the texts may take up to six times that).
fn pack_holed<T: Serialize>(
    items: impl Iterator<Item = T>,
    part_bytes: usize,
    holes: &Holes<'_>,
    parts: &mut Vec<WholeCopy>,
) -> usize {
    let before = parts.len();
    let mut open = false;
    for item in items {
        holes.write_raw(if open { b"," } else { b"[" });
        open = true;
        holes.write(&item);
        if holes.len() >= part_bytes {
            holes.write_raw(b"]");
            parts.push(holes.cut());
            open = false;
        }
    }
    if open {
        holes.write_raw(b"]");
        parts.push(holes.cut());
    }
    parts.len() - before
}

/// Serializes the state without copying it; with `Some(parts)`, only the
/// head of [`SessionState::snapshot_parts`]; with `Some(holes)`, its
/// message texts left as holes.
struct Snapshot<'a>(&'a SessionState, Option<[usize; 3]>, Option<&'a Holes<'a>>);

/// Where an entry's message texts go.
#[derive(Clone, Copy)]
pub(crate) enum Texts<'a> {
    /// In the JSON, escaped.
    Inline,
    /// Apart, at these places (see [`SessionState::snapshot_apart`]);
    /// the entry's other long strings as holes.
    Apart(&'a [(usize, usize)], &'a Holes<'a>),
    /// In holes, filled in later ([`Holes`]).
    Holes(&'a Holes<'a>),
}

/// An entry; with `Some(text)`, its last block (text-only) carries `text`
/// instead of its own (a drain's cut, see `changes`); its message texts
/// where `Texts` says; with `Some((apart, at))` (a drain's `at`-th new
/// entry, texts apart), its blocks' long strings left out into `apart`
/// (an image's data: escaped by the core, then scanned again by the
/// host's `JSON.parse`, on the host's thread).
pub(crate) struct EntryJson<'c, 'a>(
    pub &'a Entry,
    pub Option<&'a str>,
    pub Texts<'a>,
    pub Option<(&'c Apart<'a>, usize)>,
);

impl Serialize for EntryJson<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("index", &e.index)?;
        m.serialize_entry("kind", e.kind.as_str())?;
        let holes = match self.2 {
            Texts::Holes(holes) | Texts::Apart(_, holes) => Some(holes),
            Texts::Inline => None,
        };
        let body = || e.body.as_ref().map(|b| Held(b, holes));
        match e.kind {
            EntryKind::ToolCall => m.serialize_entry("toolCallId", &e.key)?,
            EntryKind::Notice => m.serialize_entry("notice", &body())?,
            EntryKind::Unknown => m.serialize_entry("update", &body())?,
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
                (cut, Texts::Inline) if self.3.is_some() => {
                    let (apart, at) = self.3.expect("some");
                    let content = DrainContent { e, cut, apart, at };
                    m.serialize_entry("content", &content)?
                }
                (_, Texts::Apart(_, holes)) => {
                    m.serialize_entry("content", &ApartContent(&e.content, holes))?
                }
                (_, Texts::Holes(holes)) => m.serialize_entry("content", &holes.content(e))?,
                (Some(text), _) => m.serialize_entry("content", &CutContent(&e.content, text))?,
                _ if e.lent.len > 0 => m.serialize_entry("content", &LentContent(e))?,
                _ => m.serialize_entry("content", &e.content)?,
            }
            if !e.extra.is_empty() {
                m.serialize_entry("extra", &HeldMap(&e.extra, holes))?;
            }
            if e.dropped_bytes > 0 {
                m.serialize_entry("droppedBytes", &e.dropped_bytes)?;
            }
            if e.dropped_blocks > 0 {
                m.serialize_entry("droppedBlocks", &e.dropped_blocks)?;
            }
            match self.2 {
                Texts::Apart(places, _) if !places.is_empty() => {
                    m.serialize_entry("$texts", places)?
                }
                _ => {}
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

/// A drain's new entry's content blocks ([`EntryJson`]'s fourth field):
/// the last (text-only) one with `cut` as its text when cut, the block
/// with shared text joined, the other blocks' long strings apart.
struct DrainContent<'c, 'a> {
    e: &'a Entry,
    cut: Option<&'a str>,
    apart: &'c Apart<'a>,
    at: usize,
}

impl Serialize for DrainContent<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (e, apart) = (self.e, self.apart);
        let mut seq = s.serialize_seq(Some(e.content.len()))?;
        for (i, block) in e.content.iter().enumerate() {
            match (self.cut, text_only(block)) {
                (Some(text), _) if i + 1 == e.content.len() => {
                    seq.serialize_element(&TextBlock(text))?
                }
                (_, Some(open)) if e.lent.len > 0 && i == e.lent.block => {
                    seq.serialize_element(&LentBlock(&e.lent.segments, open))?
                }
                _ => {
                    let path = [
                        Seg::Key("newEntries"),
                        Seg::Index(self.at),
                        Seg::Key("content"),
                        Seg::Index(i),
                    ];
                    apart.under_all(&path, || seq.serialize_element(&Walk(Some(apart), block)))?
                }
            }
        }
        seq.end()
    }
}

/// Content blocks, the text-only ones' texts left out (`""`), the others'
/// long strings as holes.
struct ApartContent<'a>(&'a [Value], &'a Holes<'a>);

impl Serialize for ApartContent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for block in self.0 {
            match text_only(block) {
                Some(_) => seq.serialize_element(&TextBlock(""))?,
                None => seq.serialize_element(&self.1.value(block))?,
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

/// Tool calls (or compactions) as `{id: fields}`, each [`Held`].
pub(crate) struct FieldsById<'a, I>(pub I, pub Option<&'a Holes<'a>>);

impl<'a, I: Iterator<Item = (&'a String, &'a Keyed)> + Clone> Serialize for FieldsById<'a, I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let holes = self.1;
        s.collect_map(
            self.0
                .clone()
                .map(|(id, k)| (id, HeldMap(&k.fields, holes))),
        )
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
    held_pending(pending, None)
}

/// [`pending_json`], the params [`Held`].
fn held_pending<'a>(
    pending: impl Iterator<Item = &'a Pending> + Clone,
    holes: Option<&'a Holes<'a>>,
) -> Seq<impl Iterator<Item = PendingItem<'a>> + Clone> {
    Seq(pending.map(move |p| PendingItem(p, holes)))
}

#[derive(Clone, Copy)]
pub(crate) struct PendingItem<'a>(&'a Pending, Option<&'a Holes<'a>>);

impl Serialize for PendingItem<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("id", &self.0.id)?;
        m.serialize_entry("method", &self.0.method)?;
        m.serialize_entry("params", &Held(&self.0.params, self.1))?;
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
            let texts = self.2.map_or(Texts::Inline, Texts::Holes);
            let entries = st.entries.iter().map(|e| EntryJson(e, None, texts, None));
            m.serialize_entry("entries", &Seq(entries))?;
        }
        m.serialize_entry("droppedEntries", &st.dropped_entries)?;
        if whole {
            let holes = self.2;
            m.serialize_entry("toolCalls", &FieldsById(st.tool_calls.iter(), holes))?;
            m.serialize_entry("compactions", &FieldsById(st.compactions.iter(), holes))?;
            m.serialize_entry("plan", &Held(&st.plan, holes))?;
            m.serialize_entry("modes", &HeldMap(&st.modes, holes))?;
            m.serialize_entry("config", &HeldMap(&st.config, holes))?;
            m.serialize_entry("commands", &HeldMap(&st.commands, holes))?;
            m.serialize_entry("info", &HeldMap(&st.info, holes))?;
            m.serialize_entry("usage", &st.usage.as_ref().map(|u| HeldMap(u, holes)))?;
        }
        m.serialize_entry("stopReason", &st.stop_reason)?;
        m.serialize_entry("running", &st.running)?;
        if whole {
            m.serialize_entry("pending", &held_pending(st.pending.iter(), self.2))?;
        }
        m.serialize_entry("droppedKeys", &st.dropped_keys)?;
        if let Some(parts) = self.1 {
            m.serialize_entry("$parts", &parts)?;
            m.serialize_entry("$seq", &st.drains)?;
        }
        m.end()
    }
}

/// A value of the state, whole, or its long strings as holes (a store's
/// copy, see [`Holes`]).
struct Held<'a>(&'a Value, Option<&'a Holes<'a>>);

impl Serialize for Held<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.1 {
            Some(holes) => holes.value(self.0).serialize(s),
            None => self.0.serialize(s),
        }
    }
}

/// [`Held`] for an object's fields.
struct HeldMap<'a>(&'a Map<String, Value>, Option<&'a Holes<'a>>);

impl Serialize for HeldMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.1 {
            Some(holes) => s.collect_map(self.0.iter().map(|(k, v)| (k, holes.value(v)))),
            None => self.0.serialize(s),
        }
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

    use super::{Arc, DrainText, SessionState};
    use crate::view::fold::tests::{long_everywhere, text, unknown};
    use crate::view::ViewOptions;

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
    /// The views' lock is held for the JSON of what is short: tool
    /// output, images, plans, notices and pending params of an agent's
    /// choosing are copied then, and escaped later.
    #[test]
    fn a_snapshot_takes_other_long_strings_as_copies_to_escape_later() {
        let mut s = SessionState::new("s", ViewOptions::default());
        let long = "\u{1}".repeat(200_000);
        long_everywhere(&mut s, &long);
        let whole = s.snapshot_value();
        while s.drain_parts(1 << 20).is_some() {}
        let (holed, _) = s.snapshot_holed(1 << 20);
        // Escaped, each string would be 1.2 MB of the JSON taken under the lock.
        let skeleton: usize = holed.iter().map(|p| p.skeleton_len()).sum();
        assert!(skeleton < 8192, "{skeleton} bytes");
        let (parts, texts) = s.snapshot_apart(1 << 20);
        assert_eq!(join_apart(&parts, &texts), whole);
        // A part closes by its texts' bytes too, not only its JSON's.
        for i in 0..8 {
            s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{i}"), "title": "x", "rawOutput": long}));
        }
        let (parts, texts) = s.snapshot_apart(500_000);
        let head: Value = serde_json::from_str(&parts[0]).unwrap();
        let tool_parts = head["$parts"][1].as_u64().unwrap();
        assert!(tool_parts >= 3, "1.8 MB of texts in {tool_parts} parts");
        assert_eq!(join_apart(&parts, &texts), s.snapshot_value());
    }

    /// `joinSnapshot` of lib/session-view.js, ported.
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
    fn an_empty_view_has_no_entry_parts() {
        let s = SessionState::new("s", ViewOptions::default());
        let parts = s.snapshot_parts(1 << 20);
        assert_eq!(parts.len(), 8, "the head and the session-wide fields");
        assert_eq!(join(&parts), s.snapshot_value());
    }
}
