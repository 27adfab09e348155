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
//! - `6, record, 0`: a live trace record of one wire message (see `trace`);
//! - `7, view, 0`: session view `view` changed; drain it (see `views`);
//! - `8, params, 0`: a `session/update` notification (the stream's bulk:
//!   its method is not spelled out, so the host neither parses nor
//!   allocates that string for each).

use std::fmt::Write;

use crate::acp::methods;
use crate::rpc::{push_json_str, RequestId};

/// What an item is: the first of its three values. The binding hands
/// these numbers to JS (`itemKinds()`), so they are written down once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ItemKind {
    Notification = 0,
    Request = 1,
    Response = 2,
    Failed = 3,
    RequestSettled = 4,
    Host = 5,
    Trace = 6,
    ViewChanged = 7,
    SessionUpdate = 8,
}

impl ItemKind {
    /// Every kind with its JS name.
    pub const ALL: [(&'static str, ItemKind); 9] = [
        ("notification", ItemKind::Notification),
        ("request", ItemKind::Request),
        ("response", ItemKind::Response),
        ("failed", ItemKind::Failed),
        ("requestSettled", ItemKind::RequestSettled),
        ("host", ItemKind::Host),
        ("trace", ItemKind::Trace),
        ("viewChanged", ItemKind::ViewChanged),
        ("sessionUpdate", ItemKind::SessionUpdate),
    ];

    /// Append `kind,` (every kind is one digit).
    fn push_into(self, out: &mut String) {
        out.push(char::from(b'0' + self as u8));
        out.push(',');
    }
}

/// Agent output waiting between the reader and the host, at most. With the
/// in-flight batches this bounds host memory whatever the agent sends.
pub const QUEUE_BUDGET_BYTES: u32 = 2 * 1024 * 1024;

/// What a budgeted host event counts against the queue budget at least:
/// about its allocations, whatever its payload.
const MIN_HOST_ITEM_BYTES: usize = 64;

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
    /// Already encoded as its item, `0,method,params` (or
    /// `8,params,0`): the envelope around them is not kept.
    Notification {
        item: Line,
        /// Items in `item` (see [`Event::notifications`]).
        items: u32,
    },
    Request {
        token: u64,
        raw: Line,
    },
    Response {
        id: RequestId,
        raw: Line,
    },
    Failed {
        id: RequestId,
        error: String,
    },
    RequestSettled {
        token: u64,
        reason: &'static str,
    },
    /// `budgeted`: the payload was counted against the queue budget (what
    /// the agent can cause in any number: protocol errors, stderr).
    Host {
        name: &'static str,
        payload: String,
        budgeted: bool,
    },
    /// `budgeted`: the reader reserved queue budget for it.
    Trace {
        record: String,
        budgeted: bool,
    },
    /// A session view turned dirty (at most one per drain, unbudgeted).
    ViewChanged {
        view: u32,
    },
}

/// Append the item for a notification in `text` (see
/// [`Event::notification`]) to `out`; returns whether the item is ASCII.
pub fn push_notification(
    out: &mut String,
    text: &str,
    ascii: bool,
    method: &str,
    params: Option<&str>,
) -> bool {
    let params = params.unwrap_or("null");
    if method == methods::SESSION_UPDATE {
        ItemKind::SessionUpdate.push_into(out);
        out.push_str(params);
        out.push_str(",0");
        return ascii;
    }
    let base = text.as_ptr() as usize;
    let borrowed = (base..base + text.len()).contains(&(method.as_ptr() as usize));
    ItemKind::Notification.push_into(out);
    if borrowed {
        // No escapes: the token on the wire is the slice plus its quotes.
        let start = method.as_ptr() as usize - base - 1;
        out.push_str(&text[start..start + method.len() + 2]);
    } else {
        push_json_str(out, method);
    }
    out.push(',');
    out.push_str(params);
    // Slices of an ASCII line are ASCII; a decoded method may not be.
    ascii && (borrowed || method.is_ascii())
}

impl Event {
    /// The item for a notification in `text` (`ascii`: `text` is). `method`
    /// is a slice of `text` when it had no escapes (serde borrows it), and
    /// `params` always is.
    pub fn notification(text: &str, ascii: bool, method: &str, params: Option<&str>) -> Self {
        let params_len = params.map_or(4, str::len);
        let mut item = String::with_capacity(params_len + method.len() + 8);
        let ascii = push_notification(&mut item, text, ascii, method, params);
        Event::Notification {
            item: Line { text: item, ascii },
            items: 1,
        }
    }

    /// Notification items already encoded back to back (see
    /// [`push_notification`]), `items` of them, delivered as one event:
    /// one allocation and one trip through the queue for a read's worth.
    pub fn notifications(text: String, ascii: bool, items: u32) -> Self {
        Event::Notification {
            item: Line { text, ascii },
            items,
        }
    }

    /// How many items of the batch this event is.
    pub fn items(&self) -> usize {
        match self {
            Event::Notification { items, .. } => *items as usize,
            _ => 1,
        }
    }

    /// Is this item's text pure ASCII?
    pub fn is_ascii(&self) -> bool {
        match self {
            Event::Notification { item: raw, .. }
            | Event::Request { raw, .. }
            | Event::Response { raw, .. } => raw.ascii,
            Event::Failed { error, .. } => error.is_ascii(),
            Event::RequestSettled { .. } | Event::ViewChanged { .. } => true,
            Event::Host { payload, .. } => payload.is_ascii(),
            Event::Trace { record, .. } => record.is_ascii(),
        }
    }

    /// Append this item's JSON to a batch.
    pub fn encode_into(&self, out: &mut String) {
        match self {
            Event::Notification { item, .. } => out.push_str(item),
            Event::Request { token, raw } => {
                ItemKind::Request.push_into(out);
                let _ = write!(out, "{token},");
                out.push_str(raw);
            }
            Event::Response { id, raw } => {
                ItemKind::Response.push_into(out);
                let _ = write!(out, "{id},");
                out.push_str(raw);
            }
            Event::Failed { id, error } => {
                ItemKind::Failed.push_into(out);
                let _ = write!(out, "{id},");
                out.push_str(error);
            }
            Event::RequestSettled { token, reason } => {
                ItemKind::RequestSettled.push_into(out);
                let _ = write!(out, "{token},\"{reason}\"");
            }
            Event::Host { name, payload, .. } => {
                ItemKind::Host.push_into(out);
                let _ = write!(out, "\"{name}\",");
                out.push_str(payload);
            }
            Event::Trace { record, .. } => {
                ItemKind::Trace.push_into(out);
                out.push_str(record);
                out.push_str(",0");
            }
            Event::ViewChanged { view } => {
                ItemKind::ViewChanged.push_into(out);
                let _ = write!(out, "{view},0");
            }
        }
    }

    /// Bytes of agent output this item holds while it waits for delivery:
    /// what the reader reserves from the queue budget and delivery returns.
    pub fn queued_bytes(&self) -> u32 {
        match self {
            Event::Notification { item: raw, .. }
            | Event::Request { raw, .. }
            | Event::Response { raw, .. } => raw.len().min(QUEUE_BUDGET_BYTES as usize) as u32,
            Event::Trace {
                record: text,
                budgeted: true,
            } => text.len().min(QUEUE_BUDGET_BYTES as usize) as u32,
            // At least the item's own keep: a flood of empty stderr lines
            // (one event each) is bounded by their count too.
            Event::Host {
                payload: text,
                budgeted: true,
                ..
            } => text
                .len()
                .clamp(MIN_HOST_ITEM_BYTES, QUEUE_BUDGET_BYTES as usize) as u32,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_valid_json() {
        let note = r#"{"method":"a\u0062","params":{"p":[1]}}"#;
        let plain = r#"{"method":"x"}"#;
        let items = [
            // The method had an escape, so serde decoded it into a new string.
            Event::notification(note, true, "ab", Some(&note[29..38])),
            Event::notification(plain, true, &plain[11..12], None),
            Event::Request {
                token: 9,
                raw: r#"{"id":"a","method":"m"}"#.into(),
            },
            Event::Response {
                id: RequestId::new(3),
                raw: r#"{"id":3,"result":null}"#.into(),
            },
            Event::Failed {
                id: RequestId::new(4),
                error: r#"{"code":"ERR_ACP_TIMEOUT"}"#.into(),
            },
            Event::RequestSettled {
                token: 9,
                reason: "cancelled",
            },
            Event::Host {
                name: "stderr",
                payload: crate::rpc::json_str("a\"b\n"),
                budgeted: true,
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
    fn a_session_update_is_its_params_under_its_own_kind() {
        let plain = r#"{"method":"session/update","params":{"p":1}}"#;
        let escaped = r#"{"method":"session\/update","params":{"p":2}}"#;
        let mut out = String::new();
        Event::notification(plain, true, &plain[11..25], Some(&plain[36..43]))
            .encode_into(&mut out);
        out.push('|');
        Event::notification(escaped, true, "session/update", Some(&escaped[37..44]))
            .encode_into(&mut out);
        assert_eq!(out, r#"8,{"p":1},0|8,{"p":2},0"#);
    }

    #[test]
    fn a_notification_item_is_ascii_only_if_its_decoded_method_is() {
        // An ASCII line whose method escape decodes to "é".
        let line = r#"{"method":"\u00e9","params":{}}"#;
        let item = Event::notification(line, true, "é", Some(&line[28..30]));
        assert!(!item.is_ascii());
        let mut out = String::new();
        item.encode_into(&mut out);
        assert_eq!(out, "0,\"é\",{}");
    }
}
