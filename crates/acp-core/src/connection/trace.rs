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
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::acp::methods;
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
/// in the block. Its texts are in its [`Block`]'s text from `text_at`:
/// its method, id and payload back to back, or (a text chunk line, see
/// [`Tracer::defer`]) the text as sent, the line being its shape's head,
/// that and its shape's tail.
#[derive(Clone, Copy)]
struct Record {
    /// When it crossed the wire: turned into Unix time only when encoded
    /// (the clock arithmetic cost ~15% of a flood's reader thread).
    at: Instant,
    /// For responses: nanoseconds since their request crossed the wire;
    /// [`NOT_A_RESPONSE`] otherwise.
    waited_ns: u64,
    text_at: usize,
    /// The payload's bytes kept, or the raw text's bytes.
    payload: usize,
    bytes: usize,
    /// At most [`MAX_NAME_BYTES`].
    method: u16,
    id: u16,
    /// The place of its shape in the block's, or [`WHOLE`].
    shape: u32,
    direction: Direction,
    kind: Kind,
    truncated: bool,
}

const NOT_A_RESPONSE: u64 = u64::MAX;
const WHOLE: u32 = u32::MAX;

/// What comes before and after the text of a block's text chunk lines:
/// `head` then `tail` bytes of the block's text from `text_at`.
#[derive(Clone, Copy)]
struct KeptShape {
    text_at: usize,
    head: usize,
    tail: usize,
    /// The scanner's number for it (see [`crate::view::TextLine::shape`]).
    number: Option<u64>,
}

/// Consecutive records and their texts, back to back: one stream through
/// memory, not a string per record at scattered places (a flood of small
/// messages wrote to a cold cache line of a different string for each).
#[derive(Default, Clone)]
struct Block {
    /// The number of `records[0]`.
    first_seq: u64,
    records: Vec<Record>,
    text: Vec<u8>,
    shapes: Vec<KeptShape>,
}

impl Block {
    fn push(&mut self, full: &Full<'_>) {
        let mut rec = full.rec;
        rec.text_at = self.text.len();
        self.text.extend_from_slice(full.method.as_bytes());
        self.text.extend_from_slice(full.id.as_bytes());
        self.text.extend_from_slice(full.payload.as_bytes());
        self.records.push(rec);
    }

    /// Keep a text chunk line as its text alone, once its shape is kept.
    fn push_text_line(
        &mut self,
        at: Instant,
        line: &str,
        (start, end): (usize, usize),
        number: Option<u64>,
    ) {
        let same =
            matches!(self.shapes.last(), Some(kept) if number.is_some() && kept.number == number);
        if !same {
            self.shapes.push(KeptShape {
                text_at: self.text.len(),
                head: start,
                tail: line.len() - end,
                number,
            });
            self.text.extend_from_slice(&line.as_bytes()[..start]);
            self.text.extend_from_slice(&line.as_bytes()[end..]);
        }
        let text_at = self.text.len();
        self.text.extend_from_slice(&line.as_bytes()[start..end]);
        self.records.push(Record {
            at,
            waited_ns: NOT_A_RESPONSE,
            text_at,
            payload: end - start,
            bytes: line.len(),
            method: 0,
            id: 0,
            // Fewer shapes than records, which fit in memory as 64 bytes each.
            shape: (self.shapes.len() - 1) as u32,
            direction: Direction::Receive,
            kind: Kind::Notification,
            truncated: false,
        });
    }

    /// The record at `i` and its texts; `line`: room to put a text chunk
    /// line back together.
    fn full<'a>(&'a self, i: usize, seq: u64, line: &'a mut String) -> Full<'a> {
        let rec = self.records[i];
        let text = |at: usize, n: usize| {
            // Whole strings cut on char boundaries: valid UTF-8.
            std::str::from_utf8(&self.text[at..at + n]).unwrap_or("")
        };
        let (method, id) = (usize::from(rec.method), usize::from(rec.id));
        if rec.shape == WHOLE {
            return Full {
                seq,
                rec,
                method: text(rec.text_at, method),
                id: text(rec.text_at + method, id),
                payload: text(rec.text_at + method + id, rec.payload),
            };
        }
        let shape = &self.shapes[rec.shape as usize];
        line.clear();
        for (at, n) in [
            (shape.text_at, shape.head),
            (rec.text_at, rec.payload),
            (shape.text_at + shape.head, shape.tail),
        ] {
            line.push_str(text(at, n));
        }
        Full {
            seq,
            rec,
            method: methods::SESSION_UPDATE,
            id: "",
            payload: line,
        }
    }

    /// Append `other`'s records, texts and shapes, moved to this block's
    /// places.
    fn extend_from(&mut self, other: &Block) {
        let text_base = self.text.len();
        // Fewer shapes than records (see `push_text_line`).
        let shape_base = self.shapes.len() as u32;
        self.text.extend_from_slice(&other.text);
        self.shapes
            .extend(other.shapes.iter().map(|kept| KeptShape {
                text_at: kept.text_at + text_base,
                ..*kept
            }));
        self.records.extend(other.records.iter().map(|rec| Record {
            text_at: rec.text_at + text_base,
            shape: match rec.shape {
                WHOLE => WHOLE,
                shape => shape + shape_base,
            },
            ..*rec
        }));
    }

    fn clear(&mut self) {
        self.records.clear();
        self.shapes.clear();
        self.text.clear();
        if self.text.capacity() > KEPT_BLOCK_BYTES {
            self.text = Vec::new();
        }
        if self.records.capacity() > KEPT_BLOCK_RECORDS {
            self.records = Vec::new();
        }
    }
}

/// The recent messages, in blocks: a reader's batch becomes a block as it
/// is (it was copied record by record: a seventh of a flood's reader
/// thread went to the history), and a dropped block becomes the next
/// batch. Only the front block can be partly dropped. Blocks are shared
/// with a history being encoded, outside the lock (see
/// [`Tracer::history_json`]); the back block, the only one that grows, is
/// copied first if one is.
#[derive(Default)]
struct Ring {
    blocks: VecDeque<Arc<Block>>,
    /// Records dropped from the front block.
    dropped_records: usize,
    /// Records kept.
    len: usize,
    /// An emptied block, to hold the next batch or record.
    spare: Option<Block>,
}

impl Ring {
    /// Drop the oldest records until `n` more fit in `cap`.
    fn make_room(&mut self, n: usize, cap: usize) {
        let mut over = (self.len + n).saturating_sub(cap).min(self.len);
        self.len -= over;
        while over > 0 {
            let Some(front) = self.blocks.front() else {
                break;
            };
            let left = front.records.len() - self.dropped_records;
            if over < left {
                self.dropped_records += over;
                return;
            }
            over -= left;
            let gone = self.blocks.pop_front().unwrap_or_default();
            // Still in a history being encoded: it goes with that.
            if let Ok(mut gone) = Arc::try_unwrap(gone) {
                gone.clear();
                self.spare = Some(gone);
            }
            self.dropped_records = 0;
        }
    }

    /// Append `block`, the oldest `skip` of its records already dropped
    /// (the ring is empty when `skip` > 0).
    fn append(&mut self, block: Block, skip: usize) {
        if skip > 0 {
            debug_assert!(self.blocks.is_empty());
            self.dropped_records = skip;
        }
        self.len += block.records.len() - skip;
        self.blocks.push_back(Arc::new(block));
    }

    /// The block a single record numbered `seq` goes into.
    fn block_for(&mut self, seq: u64) -> &mut Block {
        let fits = self
            .blocks
            .back()
            .is_some_and(|b| b.records.len() < RECORDS_PER_BLOCK);
        if !fits {
            let mut block = self.spare.take().unwrap_or_default();
            block.first_seq = seq;
            self.blocks.push_back(Arc::new(block));
        }
        let block = Arc::make_mut(self.blocks.back_mut().expect("just pushed"));
        debug_assert_eq!(block.first_seq + block.records.len() as u64, seq);
        block
    }
}

/// Received messages noted by [`Tracer::defer`], not yet in the history:
/// one block and the counts. The reader keeps one; each commit hands its
/// block to the history and takes back one the history dropped.
#[derive(Default)]
pub struct TraceBatch {
    block: Block,
    messages: u64,
    bytes: u64,
}

/// The record of `line` numbered `seq`, its payload cut to `max` bytes.
#[inline]
fn full<'a>(meta: &WireMeta<'a>, line: &'a str, seq: u64, max: usize) -> Full<'a> {
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

/// A record and its texts, to encode.
struct Full<'a> {
    seq: u64,
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
            ring: Mutex::new(Ring::default()),
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
        // The seq is taken under the ring's lock so the ring stays in order.
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        if self.config.history > 0 {
            ring.make_room(1, self.config.history);
            let full = full(&meta, line, seq, self.config.history_max_payload);
            ring.block_for(seq).push(&full);
            ring.len += 1;
        }
        drop(ring);
        self.config.live.then(|| {
            let full = full(&meta, line, seq, self.config.live_max_payload);
            let mut out = String::with_capacity(full.payload.len() + 160);
            self.encode(&full, &mut out);
            out
        })
    }

    /// Note one received text chunk line (a `session/update`
    /// notification read at `at`) in `batch`, to go into the history with
    /// the rest of its read at [`Tracer::commit`]: one lock and two counter
    /// updates per read instead of per message (they were a fifth of the
    /// reader's time in a flood of small chunks). Only for messages whose
    /// handling sends nothing, so that no reply can be recorded before
    /// them. A message sent meanwhile by another thread is numbered before
    /// them (their `time` still says when they arrived): the two
    /// directions' order is kept to within one read's handling. False
    /// (nothing noted) under a live trace, whose items go in the stream
    /// one by one: call [`Tracer::record`] then.
    ///
    /// `raw` is the span of the line's text as sent; lines with the same
    /// `shape` number have the same bytes around it, kept once per block:
    /// a flood's history then holds each chunk's text, not its whole
    /// line (the copies of whole lines were a seventh of the reader's
    /// time, most of it in the memory they wrote).
    pub fn defer(
        &self,
        batch: &mut TraceBatch,
        at: Instant,
        line: &str,
        raw: (usize, usize),
        shape: Option<u64>,
    ) -> bool {
        if self.config.live {
            return false;
        }
        batch.messages += 1;
        batch.bytes += line.len() as u64;
        let max = self.config.history_max_payload;
        if self.config.history > 0 {
            if line.len() <= max {
                batch.block.push_text_line(at, line, raw, shape);
            } else {
                let meta =
                    WireMeta::received(at, Kind::Notification, Some(methods::SESSION_UPDATE), None);
                batch.block.push(&full(&meta, line, 0, max));
            }
        }
        true
    }

    /// Put what `batch` holds in the counters and the history (in order,
    /// numbered now); leaves it empty.
    pub fn commit(&self, batch: &mut TraceBatch) {
        if batch.messages == 0 {
            return;
        }
        let counters = &self.counters;
        counters
            .messages_in
            .fetch_add(batch.messages, Ordering::Relaxed);
        counters.bytes_in.fetch_add(batch.bytes, Ordering::Relaxed);
        let n = batch.block.records.len();
        if n > 0 {
            // More than the history holds: the first ones would go at once.
            let skip = n.saturating_sub(self.config.history);
            let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
            ring.make_room(n - skip, self.config.history);
            let first_seq = self.seq.fetch_add(n as u64, Ordering::Relaxed) + 1;
            // A few records join the last block (copied): blocks of a
            // handful each would hold a recycled block's capacity apiece.
            let back = ring.blocks.back_mut().filter(|b| {
                skip == 0 && n < SMALL_BATCH && b.records.len() + n <= RECORDS_PER_BLOCK
            });
            let back = back.map(Arc::make_mut);
            if let Some(back) = back {
                debug_assert_eq!(back.first_seq + back.records.len() as u64, first_seq);
                back.extend_from(&batch.block);
                batch.block.clear();
                ring.len += n;
            } else {
                let spare = ring.spare.take().unwrap_or_default();
                let mut block = std::mem::replace(&mut batch.block, spare);
                block.first_seq = first_seq;
                ring.append(block, skip);
            }
        }
        batch.messages = 0;
        batch.bytes = 0;
    }

    /// The remembered messages, oldest first, as a JSON array of records.
    /// Encoded outside the ring's lock, from its blocks as they are now:
    /// the reader (on the worker every connection shares) records on
    /// meanwhile instead of waiting for the whole history.
    pub fn history_json(&self) -> String {
        let (blocks, dropped, len) = {
            let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
            let blocks: Vec<Arc<Block>> = ring.blocks.iter().cloned().collect();
            (blocks, ring.dropped_records, ring.len)
        };
        let text_len: usize = blocks.iter().map(|b| b.text.len()).sum();
        let mut out = String::with_capacity(text_len + len * 320);
        out.push('[');
        let mut first = true;
        let mut line = String::new();
        for (b, block) in blocks.iter().enumerate() {
            let skip = if b == 0 { dropped } else { 0 };
            for (i, seq) in (skip..block.records.len()).zip(block.first_seq + skip as u64..) {
                if !first {
                    out.push(',');
                }
                first = false;
                self.encode(&block.full(i, seq, &mut line), &mut out);
                #[cfg(test)]
                tests::ENCODED.with(|hook| hook.get().map(|f| f(self)));
            }
        }
        out.push(']');
        out
    }

    /// Milliseconds since the Unix epoch at `at`.
    fn unix_ms(&self, at: Instant) -> f64 {
        self.started_unix_ms + at.saturating_duration_since(self.started).as_secs_f64() * 1000.0
    }

    fn encode(&self, full: &Full<'_>, out: &mut String) {
        let rec = &full.rec;
        let direction = match rec.direction {
            Direction::Send => "send",
            Direction::Receive => "receive",
        };
        let kind = rec.kind.as_str();
        let _ = write!(
            out,
            r#"{{"seq":{},"time":{:.3},"direction":"{direction}","kind":"{kind}""#,
            full.seq,
            self.unix_ms(rec.at)
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
}

/// The most a dropped [`Block`] keeps allocated for its next use (a
/// turn's batch, 32 KiB of lines, fits): one read of huge records (a
/// host's big `history_max_payload`) must not pin that much for the
/// connection's life, nor every block of the ring the most one held.
const KEPT_BLOCK_BYTES: usize = 64 * 1024;
const KEPT_BLOCK_RECORDS: usize = 512;

/// A batch of fewer records joins the last block rather than being one:
/// a block then holds at least this many records, or follows one nearly
/// full, so the room blocks keep (up to `KEPT_BLOCK_BYTES` of text and
/// `KEPT_BLOCK_RECORDS` records each) is about `history / SMALL_BATCH`
/// blocks' worth at most (README: ~7 MiB at the defaults).
const SMALL_BATCH: usize = 32;

/// Records a block of single records holds before the next block starts:
/// the front block's dropped records are held until it goes whole.
const RECORDS_PER_BLOCK: usize = 256;

/// Longest method name or id a record keeps (see `record`).
const MAX_NAME_BYTES: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::time::Duration;

    thread_local! {
        /// Called after each record a history encodes.
        pub(super) static ENCODED: Cell<Option<fn(&Tracer)>> = const { Cell::new(None) };
    }

    #[test]
    fn a_history_is_encoded_with_the_ring_free_and_keeps_its_moment() {
        let t = Tracer::new(TraceConfig {
            history: 300,
            ..TraceConfig::default()
        });
        for _ in 0..300 {
            t.record(meta("before"), r#"{"m":"before"}"#);
        }
        // While the history is being encoded, the reader records on (it
        // would wait for the lock until the whole history was done).
        ENCODED.with(|hook| {
            hook.set(Some(|t: &Tracer| {
                assert!(t.ring.try_lock().is_ok(), "the ring is held while encoding");
                t.record(meta("during"), r#"{"m":"during"}"#);
            }))
        });
        let history = t.history_json();
        ENCODED.with(|hook| hook.set(None));
        let records: Vec<serde_json::Value> = serde_json::from_str(&history).unwrap();
        assert_eq!(records.len(), 300);
        assert!(records.iter().all(|r| r["method"] == "before"));
        // The ring went on: the last 300 are those recorded meanwhile.
        let after = history_of(&t);
        assert_eq!(after.len(), 300);
        assert!(after.iter().all(|(_, m, _)| m == "during"));
    }

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

    fn history_of(t: &Tracer) -> Vec<(u64, String, String)> {
        let v: serde_json::Value = serde_json::from_str(&t.history_json()).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let text = |k: &str| r[k].as_str().unwrap_or("").to_string();
                (r["seq"].as_u64().unwrap(), text("method"), text("payload"))
            })
            .collect()
    }

    /// A text chunk line with `text` (as sent), and the span of that.
    fn chunk_line(envelope: usize, text: &str) -> (String, (usize, usize)) {
        let head = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{}","update":{{"content":{{"type":"text","text":""#,
            "s".repeat(envelope)
        );
        let line = format!(r#"{head}{text}"}}}}}}}}"#);
        (line, (head.len(), head.len() + text.len()))
    }

    /// Defer a chunk line read at `at` (the lines of one read share it).
    fn defer_chunk(
        t: &Tracer,
        batch: &mut TraceBatch,
        at: Instant,
        envelope: usize,
        text: &str,
        shape: Option<u64>,
    ) -> String {
        let (line, raw) = chunk_line(envelope, text);
        assert!(t.defer(batch, at, &line, raw, shape));
        line
    }

    #[test]
    fn a_committed_batch_lands_in_order_after_what_was_recorded_before_it() {
        let t = Tracer::new(TraceConfig {
            history: 100,
            ..Default::default()
        });
        t.record(meta("before"), "{}");
        let mut batch = TraceBatch::default();
        let sent: Vec<_> = (0..4)
            .map(|i| {
                defer_chunk(
                    &t,
                    &mut batch,
                    Instant::now(),
                    3,
                    &format!("chunk {i}"),
                    Some(7),
                )
            })
            .collect();
        assert_eq!(t.counters.messages_in.load(Ordering::Relaxed), 1);
        assert_eq!(history_of(&t).len(), 1);
        t.commit(&mut batch);
        t.record(meta("after"), "{}");
        let want: Vec<_> = [("before".to_string(), "{}".to_string())]
            .into_iter()
            .chain(
                sent.iter()
                    .map(|l| (methods::SESSION_UPDATE.to_string(), l.clone())),
            )
            .chain([("after".to_string(), "{}".to_string())])
            .collect();
        let got = history_of(&t);
        assert_eq!(
            got.iter().map(|r| r.0).collect::<Vec<_>>(),
            (1..=6).collect::<Vec<_>>()
        );
        assert_eq!(
            got.into_iter().map(|r| (r.1, r.2)).collect::<Vec<_>>(),
            want
        );
        assert_eq!(t.counters.messages_in.load(Ordering::Relaxed), 6);
        let bytes = 2 + sent.iter().map(|l| l.len() as u64).sum::<u64>() + 2;
        assert_eq!(t.counters.bytes_in.load(Ordering::Relaxed), bytes);
        t.commit(&mut batch);
        assert_eq!(t.counters.messages_in.load(Ordering::Relaxed), 6);
    }

    #[test]
    fn a_batch_bigger_than_the_history_leaves_its_last_records_numbered_in_turn() {
        let t = Tracer::new(TraceConfig {
            history: 3,
            ..Default::default()
        });
        t.record(meta("first"), "{}");
        let mut batch = TraceBatch::default();
        for round in 0..3 {
            let sent: Vec<_> = (0..7)
                .map(|i| {
                    defer_chunk(
                        &t,
                        &mut batch,
                        Instant::now(),
                        i,
                        &format!("r{round}m{i}"),
                        None,
                    )
                })
                .collect();
            t.commit(&mut batch);
            let got = history_of(&t);
            let seqs: Vec<_> = got.iter().map(|r| r.0).collect();
            let last = 1 + 7 * (round + 1) as u64;
            assert_eq!(seqs, [last - 2, last - 1, last]);
            let payloads: Vec<_> = got.into_iter().map(|r| r.2).collect();
            assert_eq!(payloads, sent[4..]);
        }
    }

    proptest::proptest! {
        /// Single records and batches of text chunk lines (the same shape
        /// or a new one, short or cut), in any order, under any cap: the
        /// history is always the last `cap` messages, numbered in turn,
        /// each line as sent or cut, and holds no more records than the
        /// cap and one block.
        #[test]
        fn the_history_is_the_last_messages_whatever_the_mix(
            cap in 1usize..80,
            max in 100usize..400,
            steps in proptest::collection::vec((0usize..2, proptest::prop_oneof![0usize..8, 0usize..300]), 1..60),
        ) {
            let t = Tracer::new(TraceConfig {
                history: cap,
                history_max_payload: max,
                ..Default::default()
            });
            let mut batch = TraceBatch::default();
            let mut all: Vec<(String, String)> = Vec::new();
            // When each chunk line was read (singles: not known here).
            let mut times: Vec<Option<Instant>> = Vec::new();
            let mut shape = 0u64;
            for (kind, n) in steps {
                if kind == 0 {
                    for _ in 0..n % 5 + 1 {
                        let i = all.len();
                        let (m, line) = (format!("m{i}"), format!("{i}:{}", "é".repeat(i % 7)));
                        t.record(meta(&m), &line);
                        all.push((m, line));
                        times.push(None);
                    }
                } else {
                    // The lines of one read share their time.
                    let mut at = Instant::now();
                    for k in 0..n {
                        if k % 37 == 36 {
                            at += Duration::from_millis(1);
                        }
                        // A new shape now and then, some unnumbered; texts
                        // of every length, some over the max.
                        let i = all.len();
                        if (i + n).is_multiple_of(13) {
                            shape += 1;
                        }
                        let number = (!i.is_multiple_of(11)).then_some(shape);
                        let envelope = (shape % 4) as usize * 50;
                        let text = format!("{k}\\n{}", "é".repeat(i % 90));
                        let line = defer_chunk(&t, &mut batch, at, envelope, &text, number);
                        all.push((methods::SESSION_UPDATE.to_string(), line));
                        times.push(Some(at));
                    }
                    t.commit(&mut batch);
                }
                let want: Vec<_> = all
                    .iter()
                    .enumerate()
                    .skip(all.len().saturating_sub(cap))
                    .map(|(i, (m, line))| {
                        let cut = floor_char_boundary(line, max);
                        (i as u64 + 1, m.clone(), line[..cut].to_string())
                    })
                    .collect();
                proptest::prop_assert_eq!(&history_of(&t), &want);
                let v: serde_json::Value = serde_json::from_str(&t.history_json()).unwrap();
                for r in v.as_array().unwrap() {
                    let i = r["seq"].as_u64().unwrap() as usize - 1;
                    if let Some(at) = times[i] {
                        let want: f64 = format!("{:.3}", t.unix_ms(at)).parse().unwrap();
                        proptest::prop_assert_eq!(r["time"].as_f64(), Some(want), "record {}", i);
                    }
                }
                let ring = t.ring.lock().unwrap();
                let held: usize = ring.blocks.iter().map(|b| b.records.len()).sum();
                let biggest = ring.blocks.iter().map(|b| b.records.len()).max().unwrap_or(0);
                proptest::prop_assert!(held <= cap + biggest);
                // Each block under SMALL_BATCH records follows a nearly
                // full one: about `cap / SMALL_BATCH` blocks' slack at most.
                let most = 2 * (cap / SMALL_BATCH) + 3;
                proptest::prop_assert!(ring.blocks.len() <= most, "{} blocks", ring.blocks.len());
                proptest::prop_assert_eq!(ring.len, want.len());
            }
        }
    }

    #[test]
    fn nothing_is_deferred_under_a_live_trace() {
        let t = Tracer::new(TraceConfig {
            live: true,
            ..Default::default()
        });
        let mut batch = TraceBatch::default();
        let (line, raw) = chunk_line(1, "x");
        assert!(!t.defer(&mut batch, Instant::now(), &line, raw, Some(1)));
        t.commit(&mut batch);
        assert_eq!(t.counters.messages_in.load(Ordering::Relaxed), 0);
        assert!(history_of(&t).is_empty());
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
