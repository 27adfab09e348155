//! One trace record. As JSON, an object:
//! `{"seq","time","direction","kind","method","id","bytes","durationMs","payload","truncated"}`
//! where `time` is milliseconds since the Unix epoch, `id` is the JSON-RPC
//! id exactly as on the wire, and `payload` is the line as a string, cut to
//! the configured size on a character boundary.

use std::fmt::Write;
use std::time::Instant;

use crate::rpc::{floor_char_boundary, push_json_str};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Send,
    Receive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Response,
    /// A response carrying a JSON-RPC error.
    Error,
    Notification,
    /// A line that is not a JSON-RPC message (noise, bad JSON, batches).
    Invalid,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Response => "response",
            Kind::Error => "error",
            Kind::Notification => "notification",
            Kind::Invalid => "invalid",
        }
    }
}

/// What the connection knows about one message as it crosses the wire.
#[derive(Debug, Clone, Copy)]
pub struct WireMeta<'a> {
    pub direction: Direction,
    pub kind: Kind,
    /// The method; for responses, the method of the request they answer.
    pub method: Option<&'a str>,
    /// The JSON-RPC id as JSON text.
    pub id: Option<&'a str>,
    /// When it crossed the wire.
    pub at: Instant,
    /// For responses: when their request crossed the wire.
    pub request_at: Option<Instant>,
}

impl<'a> WireMeta<'a> {
    /// A message read from the agent at `at`.
    pub fn received(at: Instant, kind: Kind, method: Option<&'a str>, id: Option<&'a str>) -> Self {
        Self {
            direction: Direction::Receive,
            kind,
            method,
            id,
            at,
            request_at: None,
        }
    }
}

/// One remembered message, its number its block's first plus its place
/// in the block. Its texts are in its block's text from `text_at`: its
/// method, id and payload back to back, or (a text chunk line, see
/// [`super::Tracer::defer`]) the text as sent, the line being its shape's
/// head, that and its shape's tail.
#[derive(Clone, Copy)]
pub(super) struct Record {
    /// When it crossed the wire: turned into Unix time only when encoded,
    /// so a flood's reader does no clock arithmetic per message.
    pub at: Instant,
    /// For responses: nanoseconds since their request crossed the wire;
    /// [`NOT_A_RESPONSE`] otherwise.
    pub waited_ns: u64,
    pub text_at: usize,
    /// The payload's bytes kept, or the raw text's bytes.
    pub payload: usize,
    pub bytes: usize,
    /// At most [`MAX_NAME_BYTES`].
    pub method: u16,
    pub id: u16,
    /// The place of its shape in the block's, or [`WHOLE`].
    pub shape: u32,
    pub direction: Direction,
    pub kind: Kind,
    pub truncated: bool,
}

pub(super) const NOT_A_RESPONSE: u64 = u64::MAX;
/// A record kept whole (not as a text chunk line's text alone).
pub(super) const WHOLE: u32 = u32::MAX;

/// Longest method name or id a record keeps (see [`full`]).
pub(super) const MAX_NAME_BYTES: usize = 256;

/// A record and its texts, to encode.
pub(super) struct Full<'a> {
    pub seq: u64,
    pub rec: Record,
    pub method: &'a str,
    pub id: &'a str,
    pub payload: &'a str,
}

/// The record of `line` numbered `seq`, its payload cut to `max` bytes.
#[inline]
pub(super) fn full<'a>(meta: &WireMeta<'a>, line: &'a str, seq: u64, max: usize) -> Full<'a> {
    // Cut like the payload: the agent picks their length. An id is raw
    // JSON, which cannot be cut: a longer one is left out.
    let method = meta
        .method
        .map_or("", |m| &m[..floor_char_boundary(m, MAX_NAME_BYTES)]);
    let id = meta
        .id
        .filter(|id| id.len() <= MAX_NAME_BYTES)
        .unwrap_or("");
    let names_cut =
        method.len() < meta.method.map_or(0, str::len) || id.len() < meta.id.map_or(0, str::len);
    let cut = floor_char_boundary(line, max);
    Full {
        seq,
        rec: Record {
            at: meta.at,
            waited_ns: meta.request_at.map_or(NOT_A_RESPONSE, |sent| {
                let waited = meta.at.saturating_duration_since(sent).as_nanos();
                u64::try_from(waited).unwrap_or(NOT_A_RESPONSE - 1)
            }),
            text_at: 0,
            payload: cut,
            bytes: line.len(),
            // Both at most MAX_NAME_BYTES.
            method: method.len() as u16,
            id: id.len() as u16,
            shape: WHOLE,
            direction: meta.direction,
            kind: meta.kind,
            truncated: cut < line.len() || names_cut,
        },
        method,
        id,
        payload: &line[..cut],
    }
}

/// Append `full`'s JSON to `out`; `time` is its moment in milliseconds
/// since the Unix epoch.
pub(super) fn encode(full: &Full<'_>, time: f64, out: &mut String) {
    let rec = &full.rec;
    let direction = match rec.direction {
        Direction::Send => "send",
        Direction::Receive => "receive",
    };
    let kind = rec.kind.as_str();
    let _ = write!(
        out,
        r#"{{"seq":{},"time":{:.3},"direction":"{direction}","kind":"{kind}""#,
        full.seq, time
    );
    if !full.method.is_empty() {
        out.push_str(r#","method":"#);
        push_json_str(out, full.method);
    }
    if !full.id.is_empty() {
        out.push_str(r#","id":"#);
        out.push_str(full.id);
    }
    let _ = write!(out, r#","bytes":{}"#, rec.bytes);
    if rec.waited_ns != NOT_A_RESPONSE {
        let ms = rec.waited_ns as f64 / 1e6;
        let _ = write!(out, r#","durationMs":{ms:.3}"#);
    }
    out.push_str(r#","payload":"#);
    push_json_str(out, full.payload);
    if rec.truncated {
        out.push_str(r#","truncated":true"#);
    }
    out.push('}');
}
