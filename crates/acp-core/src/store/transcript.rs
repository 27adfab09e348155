//! The searchable text of a session: its title, the prompts of its
//! journal, and the message text of its stored view.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

/// Text kept per session for search at most: a flood of agent text is not
/// worth indexing twice over.
pub(crate) const MAX_TRANSCRIPT_BYTES: usize = 1 << 20;

/// Append the text of content blocks (`[{type: "text", text}]`), given as
/// JSON text; another shape adds nothing.
pub(crate) fn push_blocks(out: &mut String, blocks: &str) {
    #[derive(Deserialize)]
    struct Block<'a> {
        #[serde(borrow)]
        text: Option<&'a RawValue>,
    }
    let Ok(blocks) = serde_json::from_str::<Vec<&RawValue>>(blocks) else {
        return;
    };
    for block in blocks {
        if let Ok(Block { text: Some(text) }) = serde_json::from_str(block.get()) {
            if let Some(text) = string(text) {
                push(out, &text);
            }
        }
    }
}

/// The prompt blocks' text of a journal record (`{"prompt": [blocks]}`).
pub(crate) fn push_prompt(out: &mut String, record: &str) {
    #[derive(Deserialize)]
    struct Record<'a> {
        #[serde(borrow)]
        prompt: Option<&'a RawValue>,
    }
    if let Ok(Record {
        prompt: Some(prompt),
    }) = serde_json::from_str(record)
    {
        push_blocks(out, prompt.get());
    }
}

/// The message text (user, agent, thought) of a stored view's entries, and
/// its tool calls' titles. Read without building a tree of the view: the
/// members that matter are taken as slices of the text, the rest skipped
/// (a stored view holds whatever the agent sent, `[0,0,…]` included).
pub(crate) fn push_view(out: &mut String, view: &str) {
    #[derive(Deserialize)]
    struct View<'a> {
        #[serde(borrow)]
        entries: Option<Vec<Entry<'a>>>,
        #[serde(borrow, rename = "toolCalls")]
        tool_calls: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Entry<'a> {
        #[serde(borrow)]
        kind: Option<&'a RawValue>,
        #[serde(borrow)]
        content: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Tool<'a> {
        #[serde(borrow)]
        title: Option<&'a RawValue>,
    }
    let Ok(View {
        entries: Some(entries),
        tool_calls,
    }) = serde_json::from_str(view)
    else {
        return;
    };
    for entry in entries {
        let kind = entry.kind.and_then(string);
        if !matches!(kind.as_deref(), Some("user" | "agent" | "thought")) {
            continue;
        }
        if let Some(content) = entry.content {
            push_blocks(out, content.get());
        }
    }
    // In key order, as a JSON object's members are read everywhere else.
    let Some(Ok(tools)) =
        tool_calls.map(|t| serde_json::from_str::<BTreeMap<String, &RawValue>>(t.get()))
    else {
        return;
    };
    for tool in tools.values() {
        if let Ok(Tool { title: Some(title) }) = serde_json::from_str(tool.get()) {
            if let Some(title) = string(title) {
                push(out, &title);
            }
        }
    }
}

/// A JSON string's value (borrowed when it has no escapes); None for any
/// other value.
fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    #[derive(Deserialize)]
    struct Str<'a>(#[serde(borrow)] Cow<'a, str>);
    if !raw.get().starts_with('"') {
        return None;
    }
    serde_json::from_str::<Str<'_>>(raw.get()).ok().map(|s| s.0)
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

    /// What the index held when the view was read into a tree: the
    /// reference the slice-reading must match.
    fn push_view_by_tree(out: &mut String, view: &str) {
        use serde_json::Value;
        let push_blocks = |out: &mut String, blocks: &Value| {
            for block in blocks.as_array().into_iter().flatten() {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    push(out, text);
                }
            }
        };
        let Ok(view) = serde_json::from_str::<Value>(view) else {
            return;
        };
        let Some(entries) = view.get("entries").and_then(Value::as_array) else {
            return;
        };
        for entry in entries {
            if !matches!(
                entry.get("kind").and_then(Value::as_str),
                Some("user" | "agent" | "thought")
            ) {
                continue;
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

    #[test]
    fn a_view_is_indexed_as_its_tree_was() {
        let views = [
            r#"{"entries":[
                {"kind":"user","content":[{"type":"text","text":"fix the \"bug\" in é.rs"}]},
                {"kind":"agent","content":[{"type":"text","text":"line\none"},{"type":"image","data":"AAAA"},{"type":"text","text":"\u0001\ud83d\ude00"}]},
                {"kind":"tool","toolCallId":"t1","content":[{"type":"text","text":"not indexed"}]},
                {"kind":"thought","content":[{"text":7},{"text":null},"a string",[1,2],{"text":"kept","text2":"no"}]},
                {"kind":"agent","content":{"text":"an object, not blocks"}},
                {"kind":["agent"],"content":[{"text":"a kind that is no string"}]},
                {"content":[{"text":"no kind"}]},
                {"kind":"agent"}
              ],
              "toolCalls":{"z":{"title":"Run \"ls\"","rawInput":[0,0,0,{"a":[[[]]]}]},"a":{"title":"Read a.rs"},"m":{"title":5},"n":[]},
              "plan":{"entries":[{"content":"not indexed"}]}}"#,
            r#"{"entries":[],"toolCalls":[]}"#,
            r#"{"entries":[{"kind":"agent","content":[{"text":"x"}]}]}"#,
            r#"{"toolCalls":{"a":{"title":"no entries: nothing"}}}"#,
            r#"{"entries":{"kind":"agent"}}"#,
            r#"[1,2]"#,
            r#"not json"#,
        ];
        for view in views {
            let (mut sliced, mut tree) = (String::new(), String::new());
            push_view(&mut sliced, view);
            push_view_by_tree(&mut tree, view);
            assert_eq!(sliced, tree, "{view}");
        }
        let mut s = String::new();
        push_view(&mut s, views[0]);
        assert_eq!(
            s,
            "fix the \"bug\" in é.rs\nline\none\n\u{1}😀\nkept\nRead a.rs\nRun \"ls\"\n"
        );
    }

    #[test]
    fn a_prompt_record_is_indexed_by_its_blocks_text() {
        let mut s = String::new();
        push_prompt(
            &mut s,
            r#"{"prompt":[{"type":"text","text":"hello"},{"type":"resource_link","uri":"x"}],"x":[0,0]}"#,
        );
        push_prompt(&mut s, r#"{"prompt":"not blocks"}"#);
        push_prompt(&mut s, r#"{"other":1}"#);
        assert_eq!(s, "hello\n");
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
