//! Items of the single ordered stream to the host, and their encoding.
//!
//! A batch is a JSON array of items; each item is an array whose first
//! element says what it is:
//! - `[0, msg]`: a notification from the agent (raw message);
//! - `[1, token, msg]`: a request from the agent, answer with `token`;
//! - `[2, id, msg]`: the response to our request `id` (raw message);
//! - `[3, id, error]`: our request `id` failed locally (timeout, closed…);
//! - `[4, token, reason]`: the agent request `token` was answered for the
//!   host (cancelled, timed out, connection closed): abort its handler;
//! - `[5, name, payload]`: a connection event (`stderr`, `exit`, …).

use std::fmt::Write;

/// Agent output waiting between the reader and the host, at most. With the
/// in-flight batches this bounds host memory whatever the agent sends.
pub const QUEUE_BUDGET_BYTES: u32 = 8 * 1024 * 1024;

#[derive(Debug)]
pub enum Event {
    Notification(String),
    Request { token: u64, raw: String },
    Response { id: u64, raw: String },
    Failed { id: u64, error: String },
    RequestSettled { token: u64, reason: &'static str },
    Host { name: &'static str, payload: String },
}

impl Event {
    /// Append this item's JSON to a batch.
    pub fn encode_into(&self, out: &mut String) {
        match self {
            Event::Notification(raw) => {
                out.push_str("[0,");
                out.push_str(raw);
            }
            Event::Request { token, raw } => {
                let _ = write!(out, "[1,{token},");
                out.push_str(raw);
            }
            Event::Response { id, raw } => {
                let _ = write!(out, "[2,{id},");
                out.push_str(raw);
            }
            Event::Failed { id, error } => {
                let _ = write!(out, "[3,{id},");
                out.push_str(error);
            }
            Event::RequestSettled { token, reason } => {
                let _ = write!(out, "[4,{token},\"{reason}\"");
            }
            Event::Host { name, payload } => {
                let _ = write!(out, "[5,\"{name}\",");
                out.push_str(payload);
            }
        }
        out.push(']');
    }

    /// Bytes of agent output this item holds while it waits for delivery:
    /// what the reader reserves from the queue budget and delivery returns.
    pub fn queued_bytes(&self) -> u32 {
        match self {
            Event::Notification(raw) | Event::Request { raw, .. } | Event::Response { raw, .. } => {
                raw.len().min(QUEUE_BUDGET_BYTES as usize) as u32
            }
            _ => 0,
        }
    }
}

/// A JSON string literal.
pub fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a str always serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_valid_json() {
        let items = [
            Event::Notification(r#"{"method":"x"}"#.into()),
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
        assert_eq!(v[1][1], 9);
        assert_eq!(v[4][2], "cancelled");
        assert_eq!(v[5][2], "a\"b\n");
    }
}
