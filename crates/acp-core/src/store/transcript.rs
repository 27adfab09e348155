//! The searchable text of a session: its title, the prompts of its
//! journal, and the message text of its stored view.

use serde_json::Value;

/// Text kept per session for search at most: a flood of agent text is not
/// worth indexing twice over.
pub(crate) const MAX_TRANSCRIPT_BYTES: usize = 1 << 20;

/// Append the text of content blocks (`[{type: "text", text}]`).
pub(crate) fn push_blocks(out: &mut String, blocks: &Value) {
    let Some(blocks) = blocks.as_array() else {
        return;
    };
    for block in blocks {
        if let Some(text) = block.get("text").and_then(Value::as_str) {
            push(out, text);
        }
    }
}

/// The message text (user, agent, thought) of a stored view's entries.
pub(crate) fn push_view(out: &mut String, view: &str) {
    let Ok(view) = serde_json::from_str::<Value>(view) else {
        return;
    };
    let Some(entries) = view.get("entries").and_then(Value::as_array) else {
        return;
    };
    for entry in entries {
        match entry.get("kind").and_then(Value::as_str) {
            Some("user" | "agent" | "thought") => {}
            _ => continue,
        }
        if let Some(content) = entry.get("content") {
            push_blocks(out, content);
        }
    }
    if let Some(tools) = view.get("toolCalls").and_then(Value::as_object) {
        for tool in tools.values() {
            if let Some(title) = tool.get("title").and_then(Value::as_str) {
                push(out, title);
            }
        }
    }
}

/// Append `text` on its own line, within [`MAX_TRANSCRIPT_BYTES`] (cut at
/// a character boundary).
pub(crate) fn push(out: &mut String, text: &str) {
    let room = MAX_TRANSCRIPT_BYTES.saturating_sub(out.len() + 1);
    if room == 0 {
        return;
    }
    let mut end = text.len().min(room);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&text[..end]);
    out.push('\n');
}

/// A user's search text as an FTS5 query: every word a quoted phrase, so
/// no character of it is FTS5 syntax (an error, or a column filter).
pub(crate) fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split_whitespace()
        .take(32)
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_words_quoted() {
        assert_eq!(fts_query(" a \"b  c:d ").unwrap(), r#""a" """b" "c:d""#);
        assert_eq!(fts_query("   "), None);
    }

    #[test]
    fn transcript_is_bounded_at_a_char_boundary() {
        let mut s = String::new();
        push(&mut s, &"é".repeat(MAX_TRANSCRIPT_BYTES));
        assert!(s.len() <= MAX_TRANSCRIPT_BYTES);
        push(&mut s, "more");
        assert!(s.len() <= MAX_TRANSCRIPT_BYTES);
    }
}
