//! Items of the single ordered stream to the host, and their encoding.
//!
//! A batch is one flat JSON array of items of three values each, the first
//! saying what the item is (flat and params-only because `JSON.parse` of
//! the batch is most of the host's cost per message):
//! - `0, method, params`: a notification from the agent (`params` is the
//!   raw params, `null` when absent);
//! - `1, token, msg`: a request from the agent, answer with `token`;
//! - `2, id, msg`: the response to our request `id` (raw message);
//! - `3, id, error`: our request `id` failed locally (timeout, closed…);
//! - `4, token, reason`: the agent request `token` was answered for the
//!   host (cancelled, timed out, connection closed): abort its handler;
//! - `5, name, payload`: a connection event (`stderr`, `exit`, …);
//! - `6, record, 0`: a live trace record of one wire message (see `trace`).

use std::fmt::Write;
use std::ops::Range;

/// Agent output waiting between the reader and the host, at most. With the
/// in-flight batches this bounds host memory whatever the agent sends.
pub const QUEUE_BUDGET_BYTES: u32 = 8 * 1024 * 1024;

/// Where a notification's method and params are in its line.
#[derive(Debug, Clone)]
pub struct NotificationParts {
    /// The method's JSON string token, quotes included; `None` when it had
    /// escapes (then `method_json` holds it re-encoded).
    pub method: Option<Range<usize>>,
    pub method_json: Option<String>,
    pub params: Option<Range<usize>>,
}

/// One line from the agent, and whether it is pure ASCII (known from the
/// reader's validation pass, so the batch need not be scanned again).
#[derive(Debug)]
pub struct Line {
    pub text: String,
    pub ascii: bool,
}

impl From<&str> for Line {
    fn from(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            ascii: text.is_ascii(),
        }
    }
}

impl std::ops::Deref for Line {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

#[derive(Debug)]
pub enum Event {
    Notification {
        raw: Line,
        parts: NotificationParts,
    },
    Request {
        token: u64,
        raw: Line,
    },
    Response {
        id: u64,
        raw: Line,
    },
    Failed {
        id: u64,
        error: String,
    },
    RequestSettled {
        token: u64,
        reason: &'static str,
    },
    Host {
        name: &'static str,
        payload: String,
    },
    /// `budgeted`: the reader reserved queue budget for it.
    Trace {
        record: String,
        budgeted: bool,
    },
}

impl NotificationParts {
    /// Locate `method` and `params` in `text`. `params` must be a slice of
    /// `text`; `method` is one when it had no escapes (serde borrows it).
    pub fn locate(text: &str, method: &str, params: Option<&str>) -> Self {
        let base = text.as_ptr() as usize;
        let offset = |s: &str| s.as_ptr() as usize - base;
        let borrowed = (base..base + text.len()).contains(&(method.as_ptr() as usize));
        let (method, method_json) = if borrowed {
            // No escapes: the token is the slice plus its quotes.
            let start = offset(method) - 1;
            (Some(start..start + method.len() + 2), None)
        } else {
            (None, Some(json_str(method)))
        };
        let params = params.map(|p| offset(p)..offset(p) + p.len());
        Self {
            method,
            method_json,
            params,
        }
    }
}

impl Event {
    /// Is this item's text pure ASCII?
    pub fn is_ascii(&self) -> bool {
        match self {
            Event::Notification { raw, .. }
            | Event::Request { raw, .. }
            | Event::Response { raw, .. } => raw.ascii,
            Event::Failed { error, .. } => error.is_ascii(),
            Event::RequestSettled { .. } => true,
            Event::Host { payload, .. } => payload.is_ascii(),
            Event::Trace { record, .. } => record.is_ascii(),
        }
    }

    /// Append this item's JSON to a batch.
    pub fn encode_into(&self, out: &mut String) {
        match self {
            Event::Notification { raw, parts } => {
                out.push_str("0,");
                match (&parts.method, &parts.method_json) {
                    (Some(r), _) => out.push_str(&raw[r.clone()]),
                    (None, Some(json)) => out.push_str(json),
                    (None, None) => out.push_str("null"),
                }
                out.push(',');
                out.push_str(parts.params.clone().map_or("null", |r| &raw[r]));
            }
            Event::Request { token, raw } => {
                let _ = write!(out, "1,{token},");
                out.push_str(&raw.text);
            }
            Event::Response { id, raw } => {
                let _ = write!(out, "2,{id},");
                out.push_str(raw);
            }
            Event::Failed { id, error } => {
                let _ = write!(out, "3,{id},");
                out.push_str(error);
            }
            Event::RequestSettled { token, reason } => {
                let _ = write!(out, "4,{token},\"{reason}\"");
            }
            Event::Host { name, payload } => {
                let _ = write!(out, "5,\"{name}\",");
                out.push_str(payload);
            }
            Event::Trace { record, .. } => {
                out.push_str("6,");
                out.push_str(record);
                out.push_str(",0");
            }
        }
    }

    /// Bytes of agent output this item holds while it waits for delivery:
    /// what the reader reserves from the queue budget and delivery returns.
    pub fn queued_bytes(&self) -> u32 {
        match self {
            Event::Notification { raw, .. }
            | Event::Request { raw, .. }
            | Event::Response { raw, .. } => raw.len().min(QUEUE_BUDGET_BYTES as usize) as u32,
            Event::Trace {
                record,
                budgeted: true,
            } => record.len().min(QUEUE_BUDGET_BYTES as usize) as u32,
            _ => 0,
        }
    }
}

/// A JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_str(&mut out, s);
    out
}

/// Append `s` as a JSON string literal, copying runs that need no escape.
pub fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        // Every byte matched above is ASCII, so these are char boundaries.
        out.push_str(&s[start..i]);
        if escaped.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escaped);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_valid_json() {
        let note = r#"{"method":"a\u0062","params":{"p":[1]}}"#;
        let plain = r#"{"method":"x"}"#;
        let items = [
            Event::Notification {
                raw: note.into(),
                // The method had an escape, so serde decoded it into a new string.
                parts: NotificationParts::locate(note, "ab", Some(&note[29..38])),
            },
            Event::Notification {
                raw: plain.into(),
                parts: NotificationParts::locate(plain, &plain[11..12], None),
            },
            Event::Request {
                token: 9,
                raw: r#"{"id":"a","method":"m"}"#.into(),
            },
            Event::Response {
                id: 3,
                raw: r#"{"id":3,"result":null}"#.into(),
            },
            Event::Failed {
                id: 4,
                error: r#"{"code":"ERR_ACP_TIMEOUT"}"#.into(),
            },
            Event::RequestSettled {
                token: 9,
                reason: "cancelled",
            },
            Event::Host {
                name: "stderr",
                payload: json_str("a\"b\n"),
            },
        ];
        let mut out = String::from("[");
        for (i, e) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            e.encode_into(&mut out);
        }
        out.push(']');
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let v: Vec<&[serde_json::Value]> = v.as_array().unwrap().chunks(3).collect();
        assert_eq!(v.len(), items.len());
        assert_eq!(v[0], [0.into(), "ab".into(), serde_json::json!({"p":[1]})]);
        assert_eq!(v[1], [0.into(), "x".into(), serde_json::Value::Null]);
        assert_eq!(v[2][1], 9);
        assert_eq!(v[5][2], "cancelled");
        assert_eq!(v[6][2], "a\"b\n");
    }

    #[test]
    fn json_str_escapes_like_serde() {
        for s in [
            "",
            "plain",
            "q\"b\\s",
            "nl\n cr\r tab\t",
            "\u{1}\u{1f}x",
            "é中😀",
            "\u{7f}",
        ] {
            assert_eq!(json_str(s), serde_json::to_string(s).unwrap(), "{s:?}");
        }
    }
}
