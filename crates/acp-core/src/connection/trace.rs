//! What went over the wire, for the host's debugging: every message in both
//! directions is counted, kept in a bounded ring of recent messages the host
//! can read at any time, and (only when the host asked for a live trace)
//! turned into a trace item in the ordered stream.
//!
//! A trace record is a JSON object:
//! `{"seq","time","direction","kind","method","id","bytes","durationMs","payload","truncated"}`
//! where `time` is milliseconds since the Unix epoch, `id` is the JSON-RPC
//! id exactly as on the wire, and `payload` is the line as a string, cut to
//! the configured size on a character boundary.

use std::collections::VecDeque;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::rpc::{floor_char_boundary, push_json_str};

/// How the host wants messages traced.
#[derive(Debug, Clone)]
pub struct TraceConfig {
    /// Put a trace item in the stream for every message.
    pub live: bool,
    /// Payload bytes a live trace item carries at most.
    pub live_max_payload: usize,
    /// Recent messages kept for [`Tracer::history_json`]; 0 keeps none.
    pub history: usize,
    /// Payload bytes a history record keeps at most.
    pub history_max_payload: usize,
}

impl Default for TraceConfig {
    fn default() -> Self {
        Self {
            live: false,
            live_max_payload: 64 * 1024,
            history: 2000,
            history_max_payload: 4 * 1024,
        }
    }
}

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

/// One remembered message. Its method, id and payload are the next
/// `method + id + payload` bytes of [`Ring::text`], in that order.
#[derive(Clone, Copy)]
struct Record {
    seq: u64,
    time: f64,
    direction: Direction,
    kind: Kind,
    method: usize,
    id: usize,
    payload: usize,
    bytes: usize,
    duration_ms: Option<f64>,
    truncated: bool,
}

impl Record {
    fn text_len(&self) -> usize {
        self.method + self.id + self.payload
    }
}

/// The recent messages. Their texts are back to back in one ring of
/// bytes, written in order: one stream through memory, not a string per
/// record at scattered places (a flood of small messages wrote to a cold
/// cache line of a different string for each).
#[derive(Default)]
struct Ring {
    records: VecDeque<Record>,
    text: VecDeque<u8>,
}

/// A record and its texts, to encode.
struct Full<'a> {
    rec: Record,
    method: &'a str,
    id: &'a str,
    payload: &'a str,
}

/// Message counters, readable at any time for the status snapshot.
#[derive(Debug, Default)]
pub struct Counters {
    pub messages_in: AtomicU64,
    pub messages_out: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
}

pub struct Tracer {
    config: TraceConfig,
    ring: Mutex<Ring>,
    seq: AtomicU64,
    started: Instant,
    started_unix_ms: f64,
    pub counters: Counters,
}

impl Tracer {
    pub fn new(config: TraceConfig) -> Self {
        let started_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        Self {
            ring: Mutex::new(Ring {
                records: VecDeque::with_capacity(config.history.min(4096)),
                text: VecDeque::new(),
            }),
            config,
            seq: AtomicU64::new(0),
            started: Instant::now(),
            started_unix_ms,
            counters: Counters::default(),
        }
    }

    /// Note one message; returns the live trace item's JSON when the host
    /// asked for a live trace.
    pub fn record(&self, meta: WireMeta<'_>, line: &str) -> Option<String> {
        let (count, bytes) = match meta.direction {
            Direction::Receive => (&self.counters.messages_in, &self.counters.bytes_in),
            Direction::Send => (&self.counters.messages_out, &self.counters.bytes_out),
        };
        count.fetch_add(1, Ordering::Relaxed);
        bytes.fetch_add(line.len() as u64, Ordering::Relaxed);
        if self.config.history == 0 && !self.config.live {
            return None;
        }
        let time = self.started_unix_ms
            + meta
                .at
                .saturating_duration_since(self.started)
                .as_secs_f64()
                * 1000.0;
        // Cut like the payload: the agent picks their length. An id is
        // raw JSON, which cannot be cut: a longer one is left out.
        let method = meta
            .method
            .map_or("", |m| &m[..floor_char_boundary(m, MAX_NAME_BYTES)]);
        let id = meta
            .id
            .filter(|id| id.len() <= MAX_NAME_BYTES)
            .unwrap_or("");
        let names_cut = method.len() < meta.method.map_or(0, str::len)
            || id.len() < meta.id.map_or(0, str::len);
        let rec = |seq, max| {
            let cut = floor_char_boundary(line, max);
            Full {
                rec: Record {
                    seq,
                    time,
                    direction: meta.direction,
                    kind: meta.kind,
                    method: method.len(),
                    id: id.len(),
                    payload: cut,
                    bytes: line.len(),
                    duration_ms: meta
                        .request_at
                        .map(|r| meta.at.saturating_duration_since(r).as_secs_f64() * 1000.0),
                    truncated: cut < line.len() || names_cut,
                },
                method,
                id,
                payload: &line[..cut],
            }
        };
        // The seq is taken under the ring's lock so the ring stays in order.
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        if self.config.history > 0 {
            if ring.records.len() >= self.config.history {
                if let Some(old) = ring.records.pop_front() {
                    ring.text.drain(..old.text_len());
                }
            }
            let full = rec(seq, self.config.history_max_payload);
            ring.text.extend(full.method.as_bytes());
            ring.text.extend(full.id.as_bytes());
            ring.text.extend(full.payload.as_bytes());
            ring.records.push_back(full.rec);
        }
        drop(ring);
        self.config.live.then(|| {
            let full = rec(seq, self.config.live_max_payload);
            let mut out = String::with_capacity(full.payload.len() + 160);
            encode(&full, &mut out);
            out
        })
    }

    /// The remembered messages, oldest first, as a JSON array of records.
    pub fn history_json(&self) -> String {
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let (front, back) = ring.text.as_slices();
        let text = [front, back].concat();
        let mut out = String::with_capacity(text.len() + ring.records.len() * 160);
        out.push('[');
        let mut at = 0;
        let mut next = |n: usize| {
            // Whole strings cut on char boundaries: valid UTF-8.
            let s = std::str::from_utf8(&text[at..at + n]).unwrap_or("");
            at += n;
            s
        };
        for (i, rec) in ring.records.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let full = Full {
                rec: *rec,
                method: next(rec.method),
                id: next(rec.id),
                payload: next(rec.payload),
            };
            encode(&full, &mut out);
        }
        out.push(']');
        out
    }
}

fn encode(full: &Full<'_>, out: &mut String) {
    let rec = &full.rec;
    let direction = match rec.direction {
        Direction::Send => "send",
        Direction::Receive => "receive",
    };
    let kind = rec.kind.as_str();
    let _ = write!(
        out,
        r#"{{"seq":{},"time":{:.3},"direction":"{direction}","kind":"{kind}""#,
        rec.seq, rec.time
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
    if let Some(ms) = rec.duration_ms {
        let _ = write!(out, r#","durationMs":{ms:.3}"#);
    }
    out.push_str(r#","payload":"#);
    push_json_str(out, full.payload);
    if rec.truncated {
        out.push_str(r#","truncated":true"#);
    }
    out.push('}');
}

/// Longest method name or id a record keeps (see `record`).
const MAX_NAME_BYTES: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn meta(method: &str) -> WireMeta<'_> {
        WireMeta {
            direction: Direction::Receive,
            kind: Kind::Notification,
            method: Some(method),
            id: None,
            at: Instant::now(),
            request_at: None,
        }
    }

    #[test]
    fn the_ring_keeps_exactly_the_last_n_in_order() {
        let t = Tracer::new(TraceConfig {
            history: 3,
            ..Default::default()
        });
        for i in 0..10 {
            t.record(meta(&format!("m{i}")), "{}");
        }
        let v: serde_json::Value = serde_json::from_str(&t.history_json()).unwrap();
        let methods: Vec<_> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["method"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(methods, ["m7", "m8", "m9"]);
        assert_eq!(v[2]["seq"], 10);
        assert_eq!(t.counters.messages_in.load(Ordering::Relaxed), 10);
    }

    #[test]
    fn the_ring_keeps_each_records_texts_through_many_wraps() {
        let t = Tracer::new(TraceConfig {
            history: 5,
            history_max_payload: 7,
            ..Default::default()
        });
        let line = |i: usize| format!("{}é{}", "p".repeat(i % 9), i);
        for i in 0..103 {
            let id = i.to_string().repeat(i % 4);
            t.record(
                WireMeta {
                    id: (!id.is_empty()).then_some(&id),
                    ..meta(&"m".repeat(i % 5 + 1))
                },
                &line(i),
            );
        }
        let v: serde_json::Value = serde_json::from_str(&t.history_json()).unwrap();
        let v = v.as_array().unwrap();
        assert_eq!(v.len(), 5);
        for (r, i) in v.iter().zip(98..) {
            let full = line(i);
            let cut = floor_char_boundary(&full, 7);
            assert_eq!(r["seq"], i as u64 + 1);
            assert_eq!(r["method"], "m".repeat(i % 5 + 1));
            assert_eq!(r["payload"], &full[..cut], "record {i}");
            assert_eq!(r["bytes"], full.len());
            assert_eq!(r.get("truncated").is_some(), cut < full.len());
            match i % 4 {
                0 => assert!(r.get("id").is_none()),
                n => assert_eq!(r["id"], i.to_string().repeat(n).parse::<u64>().unwrap()),
            }
        }
    }

    #[test]
    fn an_agents_long_method_and_id_are_not_kept_whole() {
        let t = Tracer::new(TraceConfig {
            history: 2,
            ..Default::default()
        });
        let method = "é".repeat(10_000);
        let id = format!("\"{}\"", "i".repeat(10_000));
        t.record(
            WireMeta {
                id: Some(&id),
                ..meta(&method)
            },
            "{}",
        );
        let v: serde_json::Value = serde_json::from_str(&t.history_json()).unwrap();
        let r = &v[0];
        let kept = r["method"].as_str().unwrap();
        assert!(kept.len() <= MAX_NAME_BYTES && method.starts_with(kept) && !kept.is_empty());
        assert!(r.get("id").is_none(), "a long id is left out, not cut");
        assert_eq!(r["truncated"], true);
    }

    #[test]
    fn payloads_are_cut_on_a_char_boundary_and_marked() {
        let t = Tracer::new(TraceConfig {
            live: true,
            live_max_payload: 4,
            ..Default::default()
        });
        // "é" is two bytes: a cut at 4 would split the second one.
        let live = t.record(meta("x"), r#""éé""#).unwrap();
        let v: serde_json::Value = serde_json::from_str(&live).unwrap();
        assert_eq!(v["payload"], "\"é");
        assert_eq!(v["truncated"], true);
        assert_eq!(v["bytes"], 6);
    }

    #[test]
    fn ids_are_kept_as_json_and_durations_in_ms() {
        let t = Tracer::new(TraceConfig {
            live: true,
            ..Default::default()
        });
        let now = Instant::now();
        let live = t
            .record(
                WireMeta {
                    direction: Direction::Send,
                    kind: Kind::Response,
                    method: Some("session/request_permission"),
                    id: Some(r#""srv_1""#),
                    at: now + Duration::from_micros(1500),
                    request_at: Some(now),
                },
                r#"{"id":"srv_1","result":{}}"#,
            )
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&live).unwrap();
        assert_eq!(v["id"], "srv_1");
        assert_eq!(v["direction"], "send");
        assert_eq!(v["durationMs"], 1.5);
        assert!(v.get("truncated").is_none());
    }

    #[test]
    fn nothing_is_kept_when_history_and_live_are_off() {
        let t = Tracer::new(TraceConfig {
            history: 0,
            ..Default::default()
        });
        assert!(t.record(meta("x"), "{}").is_none());
        assert_eq!(t.history_json(), "[]");
        assert_eq!(t.counters.bytes_in.load(Ordering::Relaxed), 2);
    }
}
