//! The tracer of one connection: it counts every message, keeps the
//! recent ones in the history, and writes the live trace items.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::history::{Block, Ring, TraceBatch};
use super::record::{encode, full, Direction, Full, Kind, WireMeta};
use crate::acp::methods;

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
    pub(super) ring: Mutex<Ring>,
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
            ring.push(
                seq,
                &full(&meta, line, seq, self.config.history_max_payload),
            );
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
    /// updates per read instead of per message, which a flood of small
    /// chunks would otherwise pay for each. Only for messages whose
    /// handling sends nothing, so that no reply can be recorded before
    /// them. A message sent meanwhile by another thread is numbered before
    /// them (their `time` still says when they arrived): the two
    /// directions' order is kept to within one read's handling. False
    /// (nothing noted) under a live trace, whose items go in the stream
    /// one by one: call [`Tracer::record`] then.
    ///
    /// `raw` is the span of the line's text as sent; lines with the same
    /// `shape` number have the same bytes around it, kept once per block:
    /// a flood's history then holds each chunk's text, not a copy of its
    /// whole line.
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
            ring.take_batch(&mut batch.block, first_seq, skip);
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
                super::tests::ENCODED.with(|hook| hook.get().map(|f| f(self)));
            }
        }
        out.push(']');
        out
    }

    /// Milliseconds since the Unix epoch at `at`.
    pub(super) fn unix_ms(&self, at: Instant) -> f64 {
        self.started_unix_ms + at.saturating_duration_since(self.started).as_secs_f64() * 1000.0
    }

    fn encode(&self, full: &Full<'_>, out: &mut String) {
        encode(full, self.unix_ms(full.rec.at), out);
    }
}
