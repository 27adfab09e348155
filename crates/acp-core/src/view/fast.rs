//! The hot path of a view: a message chunk of plain text, read straight
//! from the update's JSON text into the entry, with no JSON tree. Any other
//! shape (other variants, other fields, other blocks, duplicate keys) falls
//! back to the general fold, so the result is the same either way (the
//! property test folds the same streams through both).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::state::{EntryKind, SessionState};

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

impl SessionState {
    /// Fold a chunk whose [`TextChunk::entry_kind`] is `Some`.
    pub(crate) fn apply_text_chunk(&mut self, chunk: &TextChunk<'_>) {
        if let Some(kind) = chunk.entry_kind() {
            self.text_chunk(kind, chunk.message_id.as_deref(), &chunk.content.text);
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
        let value = update
            .and_then(|u| serde_json::from_str::<Value>(u).ok())
            .unwrap_or(Value::Null);
        self.apply_update(value);
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
        self.total_bytes += super::state::append_text(entry, text, None, &options);
        self.fit(index);
    }
}
