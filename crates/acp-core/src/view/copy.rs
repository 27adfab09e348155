//! The whole state as one JSON text (a session store's copy of a live
//! view), in two steps: under the views' lock, [`SessionState::whole_copy`]
//! takes what is cheap to take — the JSON of everything but the message
//! texts and the other long strings (tool output, images), which it
//! leaves as holes, and the texts themselves, shared (frozen segments) or
//! copied (a growing string, a long string: a copy, not an escape);
//! after the lock is let go, [`WholeCopy::into_json`] escapes the texts
//! into their holes. The reader folds into the views for every update the
//! agent sends, on the worker it shares with the host's other agents: it
//! waits for the first step only, not for the escaping of tens of MiB of
//! text (six bytes a control character). The result is, byte for byte,
//! `serde_json::to_string(&state.whole())`. A host's snapshot takes its
//! parts the same way ([`SessionState::snapshot_holed`]).

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;

use serde_json::Value;

use super::apart::APART_MIN_BYTES;
use super::json::{block_texts, freeze_texts};
use super::lent::DrainText;
use super::state::{text_only, Entry, SessionState};

/// The whole state, its message texts apart: see the module docs.
pub struct WholeCopy {
    /// The JSON, each message text a `""` at its hole's place.
    skeleton: Vec<u8>,
    holes: Vec<Hole>,
}

/// One message text: at byte `at` of the skeleton, its pieces in order.
struct Hole {
    at: usize,
    texts: Vec<DrainText>,
}

/// Collects the holes an entry's message texts leave in the JSON written
/// to `out` (the serializer's output, read here for where each goes).
pub(crate) struct Holes<'a> {
    out: &'a RefCell<Vec<u8>>,
    found: RefCell<Vec<Hole>>,
    /// The bytes of the holes' texts since the last [`Holes::cut`].
    held: Cell<usize>,
}

impl<'a> Holes<'a> {
    pub(crate) fn new(out: &'a RefCell<Vec<u8>>) -> Self {
        Self {
            out,
            found: RefCell::new(Vec::new()),
            held: Cell::new(0),
        }
    }

    /// Serialize `value` onto the output, its holes noted.
    pub(crate) fn write<T: Serialize>(&self, value: &T) {
        let mut ser = serde_json::Serializer::new(SharedOut(self.out));
        value
            .serialize(&mut ser)
            .expect("a state always serializes");
    }

    /// Append JSON written by hand (a bracket, a comma).
    pub(crate) fn write_raw(&self, json: &[u8]) {
        self.out.borrow_mut().extend_from_slice(json);
    }

    /// The JSON written since the last cut and its texts, unescaped: at
    /// least this many bytes once escaped.
    pub(crate) fn len(&self) -> usize {
        self.out.borrow().len() + self.held.get()
    }

    /// What was written since the last cut, as a copy whose texts are
    /// escaped later ([`WholeCopy::into_json`]); the output starts over.
    pub(crate) fn cut(&self) -> WholeCopy {
        self.held.set(0);
        WholeCopy {
            skeleton: std::mem::take(&mut *self.out.borrow_mut()),
            holes: std::mem::take(&mut *self.found.borrow_mut()),
        }
    }
}

impl Holes<'_> {
    /// `e`'s content blocks, its text-only blocks' texts as holes.
    pub(crate) fn content<'a>(&'a self, e: &'a Entry) -> impl Serialize + 'a {
        HoledContent(e, self)
    }

    /// `value`, its long strings as holes (see [`HoledValue`]).
    pub(crate) fn value<'a>(&'a self, value: &'a Value) -> HoledValue<'a> {
        HoledValue(value, self)
    }

    /// A hole for a string written right here: the serializer's output
    /// ends where its `""` goes.
    fn push(&self, texts: Vec<DrainText>) {
        let at = self.out.borrow().len();
        let bytes: usize = texts.iter().map(|t| t.as_str().len()).sum();
        self.held.set(self.held.get() + bytes);
        self.found.borrow_mut().push(Hole { at, texts });
    }
}

impl SessionState {
    /// The first step of a copy (module docs), under the views' lock.
    /// Like a host's snapshot, a state whose every change was drained
    /// first freezes its long growing texts into shared segments, so that
    /// they are not copied now nor later.
    pub fn whole_copy(&mut self) -> WholeCopy {
        if !self.is_dirty() {
            for e in &mut self.entries {
                freeze_texts(e);
            }
        }
        let out = RefCell::new(Vec::new());
        let holes = Holes::new(&out);
        holes.write(&self.whole_holed(&holes));
        holes.cut()
    }
}

impl WholeCopy {
    /// The second step (module docs): the JSON text, texts escaped into
    /// their holes.
    pub fn into_json(self) -> String {
        // Written once, at its final size: growing a JSON text of hundreds
        // of MiB by doubling would hold the old and the new copy at once.
        let texts: usize = self
            .holes
            .iter()
            .flat_map(|h| &h.texts)
            .map(|t| escaped_len(t.as_str()))
            .sum();
        let mut out = Vec::with_capacity(self.skeleton.len() + texts);
        let mut from = 0;
        for hole in &self.holes {
            out.extend_from_slice(&self.skeleton[from..hole.at]);
            serde_json::to_writer(&mut out, &Pieces(&hole.texts)).expect("text serializes");
            // The `""` the hole was written as.
            from = hole.at + 2;
        }
        out.extend_from_slice(&self.skeleton[from..]);
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }
}

#[cfg(test)]
impl WholeCopy {
    /// The JSON taken under the lock, its texts left out.
    pub(crate) fn skeleton_len(&self) -> usize {
        self.skeleton.len()
    }
}

/// The bytes serde_json escapes `text` into (its quotes aside): two for
/// `"`, `\\` and the control characters with a short escape, six for the
/// other control characters, one for every other byte.
fn escaped_len(text: &str) -> usize {
    text.bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

/// The serializer's output, shared with the [`Holes`] that note where
/// they are in it (serde_json writes straight through, unbuffered).
struct SharedOut<'a>(&'a RefCell<Vec<u8>>);

impl io::Write for SharedOut<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

struct HoledContent<'a>(&'a Entry, &'a Holes<'a>);

impl Serialize for HoledContent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (e, holes) = (self.0, self.1);
        let mut seq = s.serialize_seq(Some(e.content.len()))?;
        for (i, block) in e.content.iter().enumerate() {
            match text_only(block) {
                Some(open) => seq.serialize_element(&HoledBlock(e, i, open, holes))?,
                None => seq.serialize_element(&HoledValue(block, holes))?,
            }
        }
        seq.end()
    }
}

/// A text-only block (`open`: its growing string), as its value would be
/// serialized (`{"text": …, "type": "text"}`), its text a hole.
struct HoledBlock<'a>(&'a Entry, usize, &'a str, &'a Holes<'a>);

impl Serialize for HoledBlock<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("text", &TextHole(self))?;
        m.serialize_entry("type", "text")?;
        m.end()
    }
}

struct TextHole<'a>(&'a HoledBlock<'a>);

impl Serialize for TextHole<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let HoledBlock(e, block, open, holes) = *self.0;
        let mut texts = Vec::new();
        block_texts(e, block, open, &mut texts);
        if !texts.is_empty() {
            holes.push(texts);
        }
        s.serialize_str("")
    }
}

/// A value of the state (a tool call's `rawInput` or output, an image, a
/// notice, a plan), each string of [`APART_MIN_BYTES`] or more a hole
/// holding a plain copy of it: copying is one pass of memory, escaping
/// it (six bytes a control character, for strings an agent chose) is
/// left to after the views' lock.
pub(crate) struct HoledValue<'a>(&'a Value, &'a Holes<'a>);

impl Serialize for HoledValue<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (value, holes) = (self.0, self.1);
        match value {
            Value::String(text) if text.len() >= APART_MIN_BYTES => {
                holes.push(vec![DrainText::Owned(text.clone())]);
                s.serialize_str("")
            }
            Value::Array(items) => s.collect_seq(items.iter().map(|v| HoledValue(v, holes))),
            Value::Object(map) => s.collect_map(map.iter().map(|(k, v)| (k, HoledValue(v, holes)))),
            other => other.serialize(s),
        }
    }
}

/// A text's pieces as one JSON string (no joined copy).
pub(crate) struct Pieces<'a>(&'a [DrainText]);

impl Serialize for Pieces<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for Pieces<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for text in self.0 {
            escaping_text();
            f.write_str(text.as_str())?;
        }
        Ok(())
    }
}

#[cfg(test)]
thread_local! {
    /// A test's hook, run (once) when a message text is escaped into a
    /// copy of the state's JSON on this thread.
    pub(crate) static ESCAPING_TEXT: RefCell<Option<Box<dyn FnOnce()>>> =
        const { RefCell::new(None) };
}

/// A message text is being escaped into JSON (a test's hook).
#[inline]
pub(crate) fn escaping_text() {
    #[cfg(test)]
    if let Some(hook) = ESCAPING_TEXT.with(|h| h.borrow_mut().take()) {
        hook();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::{DrainText, SessionState};
    use crate::view::fold::tests::{long_everywhere, text, unknown};
    use crate::view::ViewOptions;

    /// The JSON a copy was before it was taken apart.
    fn old_json(s: &SessionState) -> String {
        serde_json::to_string(&s.whole()).unwrap()
    }

    /// `old == new`, saying where they part (not megabytes of both); the
    /// copy was written at its final size.
    fn assert_same(old: &str, new: String, when: &str) {
        assert_eq!(new.capacity(), new.len(), "{when}: allocated once");
        let at = old.bytes().zip(new.bytes()).position(|(a, b)| a != b);
        let at = at.unwrap_or(old.len().min(new.len()));
        assert!(
            old == new,
            "{when}: {} vs {} bytes, first difference at {at}: {:?} vs {:?}",
            old.len(),
            new.len(),
            &old[at.saturating_sub(40).min(old.len())..(at + 40).min(old.len())],
            &new[at.saturating_sub(40).min(new.len())..(at + 40).min(new.len())],
        );
    }

    /// Every kind of thing a view holds, with texts that need escaping.
    fn varied(s: &mut SessionState, i: usize) {
        let odd = "é 🦀 \"q\" \\ \n\t\u{1}\u{7f}\u{2028}</script>";
        text(s, &format!("{i} {odd} {}", "\u{1}".repeat(100_000)));
        s.apply_update(json!({"sessionUpdate": "user_message_chunk", "messageId": format!("u{i}"), "content": {"type": "text", "text": odd}}));
        s.apply_update(json!({"sessionUpdate": "user_message_chunk", "messageId": format!("u{i}"), "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}}));
        s.apply_update(json!({"sessionUpdate": "user_message_chunk", "messageId": format!("u{i}"), "content": {"type": "text", "text": format!("after {odd}")}}));
        s.apply_update(json!({"sessionUpdate": "user_message_chunk", "messageId": format!("u{i}"), "content": {"type": "text", "text": "", "annotations": {"a": 1}}}));
        s.apply_update(json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": format!("thinking {odd}")}}));
        s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{i}"), "title": odd, "kind": "edit", "rawInput": {"path": "/a\\b", "text": "x\u{1}".repeat(5000), "n": [1, 2.5, -3, null, true]}}));
        s.apply_update(json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("t{i}"), "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": odd}}]}));
        s.apply_update(json!({"sessionUpdate": "plan", "entries": [{"content": odd, "priority": "high", "status": "pending"}]}));
        s.apply_update(
            json!({"sessionUpdate": "current_mode_update", "currentModeId": format!("mode {odd}")}),
        );
        s.apply_update(json!({"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "x", "description": odd}]}));
        s.apply_update(json!({"sessionUpdate": "usage_update", "used": i, "size": 1000}));
        s.apply_update(json!({"sessionUpdate": "notice", "text": odd}));
        s.apply_update(json!({"sessionUpdate": "compaction_update", "compactionId": format!("c{i}"), "status": "started"}));
        s.apply_update(json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": format!("c{i}"), "content": {"type": "text", "text": odd}}));
        unknown(s, odd);
        s.apply_setup(&json!({"modes": {"availableModes": [{"id": "a", "name": odd}]}, "configOptions": [{"id": "o", "name": odd}]}));
        s.request_waiting(
            format!("{i}"),
            json!(i),
            "session/request_permission",
            json!({"toolCall": {"title": odd}}),
        );
        s.prompt_started();
        s.prompt_ended(Some(&json!({"stopReason": "end_turn"})));
    }

    #[test]
    fn a_copy_is_byte_for_byte_the_json_it_was() {
        let mut s = SessionState::new("s \u{1} é", ViewOptions::default());
        assert_same(&old_json(&s), s.whole_copy().into_json(), "empty");
        varied(&mut s, 0);
        // Nothing drained yet: every text is a growing string.
        assert_same(&old_json(&s), s.whole_copy().into_json(), "undrained");
        // Drains by a small budget share the long texts as segments; more
        // text then grows after them.
        while s.drain_parts(70_000).is_some() {}
        varied(&mut s, 1);
        text(&mut s, &"\u{1}é".repeat(50_000));
        assert_same(
            &old_json(&s),
            s.whole_copy().into_json(),
            "segments and growing",
        );
        // All drained: the copy freezes the growing texts first, which
        // changes nothing of the JSON.
        while s.drain_parts(1 << 20).is_some() {}
        let before = old_json(&s);
        assert_same(&before, s.whole_copy().into_json(), "all drained");
        assert!(
            before == old_json(&s),
            "a freeze changes nothing of the JSON"
        );
        // And the drains go on exactly: a chunk after it is drained as
        // usual and the copies agree.
        text(&mut s, "tail \u{1}");
        let drained = s.drain_json().unwrap();
        assert!(drained.contains("tail \\u0001"), "{drained}");
        assert_same(
            &old_json(&s),
            s.whole_copy().into_json(),
            "after a freeze and a chunk",
        );
        // Many entries, dropped ones, and all of them again.
        for i in 2..40 {
            varied(&mut s, i);
        }
        assert_same(&old_json(&s), s.whole_copy().into_json(), "many");
    }

    #[test]
    fn a_copy_takes_other_long_strings_as_plain_copies_to_escape_later() {
        let mut s = SessionState::new("s", ViewOptions::default());
        let long = "\u{1}".repeat(200_000);
        long_everywhere(&mut s, &long);
        let copy = s.whole_copy();
        // Escaped, each string would be 1.2 MB of the JSON taken under the lock.
        assert!(copy.skeleton.len() < 4096, "{} bytes", copy.skeleton.len());
        assert!(copy
            .holes
            .iter()
            .all(|h| matches!(&h.texts[..], [DrainText::Owned(t)] if *t == long)));
        assert!(copy.holes.len() >= 6, "{} holes", copy.holes.len());
        assert_same(&old_json(&s), copy.into_json(), "long strings");
    }

    #[test]
    fn a_copy_shares_frozen_text_and_leaves_only_the_rest_to_escape() {
        let mut s = SessionState::new("s", ViewOptions::default());
        text(&mut s, &"\u{1}".repeat(1 << 20));
        s.apply_update(json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x"}));
        while s.drain_parts(1 << 20).is_some() {}
        let copy = s.whole_copy();
        // The megabyte of text is not in the JSON taken under the lock
        // (escaped, it is 6 MiB): a hole, shared with the entry.
        assert!(copy.skeleton.len() < 1024, "{} bytes", copy.skeleton.len());
        assert_eq!(copy.holes.len(), 1);
        let DrainText::Shared { text: shared, .. } = &copy.holes[0].texts[0] else {
            panic!("the frozen text is shared, not copied");
        };
        assert!(Arc::ptr_eq(shared, &s.entries[0].lent.segments[0]));
        assert_same(&old_json(&s), copy.into_json(), "shared");
    }
}
