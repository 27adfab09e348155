//! The hot path of a view: a message chunk of plain text, read straight
//! from the update's JSON text into the entry, with no JSON tree. Any other
//! shape (other variants, other fields, other blocks, duplicate keys) falls
//! back to the general fold, so the result is the same either way (the
//! property test folds the same streams through both).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::bounded::{self, Caps};
use super::route::leading_session_id;
use super::state::{text_fits, text_only_mut, EntryKind, SessionState};

/// `session/update` params holding just a plain-text chunk, read by
/// serde: what the line scanner's tests check it against.
#[cfg(test)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TextParams<'a> {
    #[serde(rename = "sessionId", borrow)]
    pub session_id: Cow<'a, str>,
    #[serde(borrow)]
    pub update: TextChunk<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TextChunk<'a> {
    #[serde(rename = "sessionUpdate", borrow)]
    variant: Cow<'a, str>,
    #[serde(borrow)]
    content: TextBlock<'a>,
    #[serde(rename = "messageId", borrow, default)]
    message_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Cow<'a, str>,
}

impl TextChunk<'_> {
    /// The entry kind, if this is a message chunk of a text block (the
    /// shape the fast path folds; anything else takes the general path).
    pub(crate) fn entry_kind(&self) -> Option<EntryKind> {
        if self.content.kind != "text" {
            return None;
        }
        match self.variant.as_ref() {
            "user_message_chunk" => Some(EntryKind::User),
            "agent_message_chunk" => Some(EntryKind::Agent),
            "agent_thought_chunk" => Some(EntryKind::Thought),
            _ => None,
        }
    }

    #[cfg(test)]
    /// The message id and the text.
    #[cfg(test)]
    pub(crate) fn parts(&self) -> (Option<&str>, &str) {
        (self.message_id.as_deref(), &self.content.text)
    }
}

/// `session/update` params (the session id, the update) as a view reads
/// them: parsed whole in one pass when short enough that no view's limit
/// can be reached by what it builds, or that their session's view would
/// parse them whole anyway (the update's text had otherwise been scanned
/// once to find it, then again to fold it); else its update left as text,
/// for the fold to read within its view's limits.
pub struct UpdateParams<'a> {
    pub session_id: Cow<'a, str>,
    pub update: ParamsUpdate<'a>,
}

pub enum ParamsUpdate<'a> {
    /// `value`: the update (`Null` if absent), read from `params`.
    Parsed { value: Value, params: &'a str },
    /// The update's text (`None`: absent).
    Raw(Option<&'a str>),
}

/// Params this long at most are parsed whole before their view's limits
/// are known: the tree is at most 12 times the text (`[0,0,…]`), so this
/// bounds what a view with tighter limits builds and drops. Tool output,
/// diffs and images are mostly shorter.
const WHOLE_PARAMS_BYTES: usize = 64 * 1024;

#[derive(Deserialize)]
struct RawParams<'a> {
    #[serde(rename = "sessionId", borrow)]
    session_id: Cow<'a, str>,
    #[serde(borrow)]
    update: Option<&'a RawValue>,
}

impl<'a> UpdateParams<'a> {
    /// `None`: not `session/update` params (no `sessionId`, not JSON).
    pub fn read(params: &'a str) -> Option<Self> {
        Self::read_with(params, |_| false)
    }

    /// [`read`](Self::read), and params longer than [`WHOLE_PARAMS_BYTES`]
    /// parsed whole too when they start with their session id (as agents
    /// write them) and `whole(session_id)` says that session's view
    /// parses an update this long whole anyway (by its caps,
    /// [`bounded::short_enough`]): then what one parse builds is what the
    /// view would build, and the update is read once, not skipped over to
    /// be found, then parsed. No view, or one with tighter caps: as
    /// [`read`](Self::read).
    pub fn read_with(params: &'a str, whole: impl FnOnce(&str) -> bool) -> Option<Self> {
        #[derive(Deserialize)]
        struct Whole<'a> {
            #[serde(rename = "sessionId", borrow)]
            session_id: Cow<'a, str>,
            #[serde(default)]
            update: Value,
        }
        if params.len() <= WHOLE_PARAMS_BYTES || leading_session_id(params).is_some_and(whole) {
            // Refused (a lone surrogate, nested past serde's limit): read
            // as before.
            if let Ok(p) = serde_json::from_str::<Whole<'_>>(params) {
                return Some(Self {
                    session_id: p.session_id,
                    update: ParamsUpdate::Parsed {
                        value: p.update,
                        params,
                    },
                });
            }
        }
        let p = serde_json::from_str::<RawParams<'_>>(params).ok()?;
        Some(Self {
            session_id: p.session_id,
            update: ParamsUpdate::Raw(p.update.map(RawValue::get)),
        })
    }
}

impl SessionState {
    /// Fold a chunk whose [`TextChunk::entry_kind`] is `Some`.
    pub(crate) fn apply_text_chunk(&mut self, chunk: &TextChunk<'_>) {
        if let Some(kind) = chunk.entry_kind() {
            self.text_chunk(kind, chunk.message_id.as_deref(), &chunk.content.text);
        }
    }

    /// Fold the update of `session/update` params read by
    /// [`UpdateParams::read`].
    pub fn apply_params(&mut self, update: ParamsUpdate<'_>) {
        match update {
            ParamsUpdate::Parsed { value, params } => {
                if bounded::parsed_fits(params.len(), &value, Caps::of(&self.options)) {
                    self.apply_update(value)
                } else {
                    // Past this view's limits: read within them.
                    let raw = serde_json::from_str::<RawParams<'_>>(params).ok();
                    self.apply_update_json(raw.and_then(|p| p.update).map(RawValue::get))
                }
            }
            ParamsUpdate::Raw(update) => self.apply_update_json(update),
        }
    }

    /// Fold one `update` given as JSON text (`None`: the update was absent).
    pub fn apply_update_json(&mut self, update: Option<&str>) {
        if let Some(text) = update {
            if let Ok(chunk) = serde_json::from_str::<TextChunk<'_>>(text) {
                if chunk.entry_kind().is_some() {
                    return self.apply_text_chunk(&chunk);
                }
            }
        }
        let caps = Caps::of(&self.options);
        let value = update.map_or(Value::Null, |u| bounded::parse(u, caps));
        self.apply_update(value);
    }

    /// Fold consecutive plain-text chunks of one message: chunk `i` is
    /// `text[ends[i-1]..ends[i]]`. Exactly [`text_chunk`](Self::text_chunk)
    /// once per chunk; when no cap can drop any of them, the chunks after
    /// the first go into the entry in one copy, with one lookup and one
    /// [`fit`](Self::fit) (all that differs per chunk is the order of
    /// work whose result is the same: the caps only grow nearer, and `fit`
    /// drops oldest-first until under its cap, so once at the end drops
    /// what it would have dropped chunk by chunk).
    pub(crate) fn text_chunks(
        &mut self,
        kind: EntryKind,
        message_id: Option<&str>,
        text: &str,
        ends: &[usize],
    ) {
        let Some((&first, _)) = ends.split_first() else {
            return;
        };
        self.text_chunk(kind, message_id, &text[..first]);
        // Even an empty chunk can start a text block: no shortcut for "".
        let rest = &text[first..*ends.last().expect("not empty")];
        if ends.len() > 1 && !self.append_whole(kind, rest) {
            let mut start = first;
            for &end in &ends[1..] {
                self.text_chunk(kind, message_id, &text[start..end]);
                start = end;
            }
        }
    }

    /// After a chunk of `kind` went into the last entry: put `rest` (more
    /// chunks of that message) at the end of its text block in one go, if
    /// no cap can drop any of it. False (nothing done) otherwise.
    fn append_whole(&mut self, kind: EntryKind, rest: &str) -> bool {
        let options = self.options;
        let Some(entry) = self.entries.back_mut() else {
            return false;
        };
        let bytes = rest.len();
        if entry.kind != kind || !text_fits(entry, bytes, &options) {
            return false;
        }
        let Some(s) = entry.content.last_mut().and_then(text_only_mut) else {
            return false;
        };
        s.push_str(rest);
        entry.text_bytes += bytes;
        let index = entry.index;
        self.total_bytes += bytes;
        self.fit(index);
        true
    }

    /// Fold a plain-text chunk of a message (read by [`TextChunk`] or by
    /// the line scanner): exactly what the general fold does with it.
    pub(crate) fn text_chunk(&mut self, kind: EntryKind, message_id: Option<&str>, text: &str) {
        self.changes.dirty = true;
        let same_id = |id: &Option<Value>| match (id, message_id) {
            (None, None) => true,
            (Some(Value::String(a)), Some(b)) => a == b,
            _ => false,
        };
        let continues = self
            .entries
            .back()
            .is_some_and(|last| last.kind == kind && same_id(&last.message_id));
        let options = self.options;
        let entry = self.message_entry(kind, continues, || {
            message_id.map(|id| Value::String(id.to_owned()))
        });
        let index = entry.index;
        // The entry's text bytes, and here the total: all the hot path adds.
        self.total_bytes += super::fold::append_text(entry, text, None, &options);
        self.fit(index);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::view::state::ViewOptions;

    /// A run of chunks: (message, text length); messages 0..3, of two kinds.
    fn runs() -> impl Strategy<Value = Vec<Vec<(u8, usize)>>> {
        let chunk = (0u8..3, 0usize..40);
        proptest::collection::vec(proptest::collection::vec(chunk, 1..12), 1..12)
    }

    fn options() -> impl Strategy<Value = ViewOptions> {
        (1usize..6, 10usize..200, 1usize..4, 30usize..600).prop_map(
            |(max_entries, max_text_bytes, max_blocks, max_total_bytes)| ViewOptions {
                max_entries,
                max_text_bytes,
                max_blocks,
                max_keys: 4,
                max_total_bytes,
            },
        )
    }

    /// The chunk `n` of a run: its kind, message id and text.
    fn chunk(message: u8, len: usize, n: usize) -> (EntryKind, String, String) {
        let kind = if message == 2 {
            EntryKind::Thought
        } else {
            EntryKind::Agent
        };
        let text = format!("{n:x}").repeat(len).chars().take(len).collect();
        (kind, format!("m{message}"), text)
    }

    /// Params parsed whole in one pass fold as their update read alone
    /// does, under tight and default limits: past the depth cap, lone
    /// surrogates, duplicate keys, an absent or null update, text chunks,
    /// other fields, too long to parse whole.
    #[test]
    fn params_parsed_whole_fold_as_their_update_read_alone() {
        let nest = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let big = "x".repeat(WHOLE_PARAMS_BYTES);
        let updates = [
            r#"{"sessionUpdate":"tool_call","toolCallId":"t","rawOutput":[0,0,0,0,0,0,0,0,0,0,0,0]}"#.to_owned(),
            format!(r#"{{"sessionUpdate":"tool_call","toolCallId":"t","rawInput":{}}}"#, nest(70)),
            format!(r#"{{"sessionUpdate":"tool_call","toolCallId":"t","rawInput":{}}}"#, nest(126)),
            r#"{"sessionUpdate":"tool_call","toolCallId":"t","title":"a\ud800b"}"#.to_owned(),
            r#"{"sessionUpdate":"tool_call","toolCallId":"t","title":"a","title":"b"}"#.to_owned(),
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}"#.to_owned(),
            format!(r#"{{"sessionUpdate":"tool_call","toolCallId":"t","title":"{big}"}}"#),
            "null".to_owned(),
        ];
        let mut params: Vec<String> = updates
            .iter()
            .map(|u| format!(r#"{{"sessionId":"s","update":{u},"_meta":{{"k":1}}}}"#))
            .collect();
        params.push(r#"{"sessionId":"s"}"#.to_owned());
        params.push(r#"{"sessionId":"s","update":{},"update":{}}"#.to_owned());
        params.push(r#"{"update":{}}"#.to_owned());
        for max_total_bytes in [64, 600, ViewOptions::default().max_total_bytes] {
            let options = ViewOptions {
                max_total_bytes,
                ..ViewOptions::default()
            };
            for p in &params {
                let mut one = SessionState::new("s", options);
                let mut apart = SessionState::new("s", options);
                let read = UpdateParams::read(p);
                let raw = serde_json::from_str::<RawParams<'_>>(p).ok();
                assert_eq!(read.is_some(), raw.is_some(), "{p}");
                if let (Some(read), Some(raw)) = (read, raw) {
                    one.apply_params(read.update);
                    apart.apply_update_json(raw.update.map(RawValue::get));
                }
                assert_eq!(one.snapshot_value(), apart.snapshot_value(), "{p}");
                assert_eq!(one.total_bytes, apart.total_bytes, "{p}");
            }
        }
    }

    proptest! {
        /// Folding a read's chunks together ends where folding them one by
        /// one does: same state, same changes to drain, under every cap.
        #[test]
        fn chunks_together_fold_like_one_by_one(runs in runs(), options in options()) {
            let mut one = SessionState::new("s", options);
            let mut together = SessionState::new("s", options);
            // A block that is not plain text now and then: the slow path.
            let image = json!({"sessionUpdate": "agent_message_chunk", "messageId": "m0",
                "content": {"type": "image", "data": "", "mimeType": "image/png"}});
            let mut n = 0;
            for (r, run) in runs.iter().enumerate() {
                if r % 4 == 3 {
                    one.apply_update(image.clone());
                    together.apply_update(image.clone());
                }
                // Consecutive chunks of one message go together, as the
                // reader's text run groups them.
                let mut i = 0;
                while i < run.len() {
                    let message = run[i].0;
                    let (kind, id, _) = chunk(message, 0, 0);
                    let (mut text, mut ends) = (String::new(), Vec::new());
                    while i < run.len() && run[i].0 == message {
                        let (_, _, t) = chunk(message, run[i].1, n);
                        n += 1;
                        one.text_chunk(kind, Some(&id), &t);
                        text.push_str(&t);
                        ends.push(text.len());
                        i += 1;
                    }
                    together.text_chunks(kind, Some(&id), &text, &ends);
                }
                if r % 3 == 0 {
                    prop_assert_eq!(one.drain_json(), together.drain_json());
                }
            }
            prop_assert_eq!(one.snapshot_value(), together.snapshot_value());
            prop_assert_eq!(one.total_bytes, together.total_bytes);
            prop_assert_eq!(one.drain_json(), together.drain_json());
        }
    }
}
