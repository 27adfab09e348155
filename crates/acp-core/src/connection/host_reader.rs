//! EXPERIMENTAL (Unix): the agent's stdout read on the host's own thread,
//! from its event loop, instead of by the reader task. A reply then wakes
//! one thread (the host's), not the reader's and then the host's.
//!
//! The host hands each chunk it read to [`HostReader::feed`]; the lines
//! are handled as the reader task handles them, and what they make is
//! handed back as a batch to deliver at once (within the batch limits and
//! the batches the host may hold), unless something queued before still
//! waits for the sink: then it is queued behind it, in order, and what
//! does not fit a batch is queued behind the batch.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;

use super::delivery::{Batch, BatchLimits};
use super::event::Event;
use super::reader::on_frame;
use super::shared::Shared;
use super::text_run::TextRun;
use crate::transport::LineFramer;

/// What one feed gives the host.
pub enum Fed {
    /// Deliver this now (the host's own thread, no queue in between), and
    /// acknowledge it as any batch.
    Batch(Batch),
    /// Nothing to deliver now: handled into nothing, or queued behind
    /// earlier items (they arrive through the sink).
    Nothing,
    /// The queue's budget has no room: the items wait here; stop reading
    /// and feed an empty chunk again after the next delivered batch.
    Full,
}

/// The host's end of stdout: the fd, until the host takes it, and the
/// reader it feeds.
pub(super) struct HostSide {
    pub fd: Option<std::os::fd::OwnedFd>,
    pub reader: HostReader,
}

pub(super) struct HostReader {
    framer: LineFramer,
    run: TextRun,
    /// Items made and not yet handed over: the queue had no room for them.
    ready: Vec<Event>,
    /// Tells the supervisor that stdout has ended.
    ended: Option<oneshot::Sender<()>>,
    limits: BatchLimits,
}

impl HostReader {
    pub fn new(max_line: usize, limits: BatchLimits, ended: oneshot::Sender<()>) -> Self {
        Self {
            framer: LineFramer::new(max_line),
            run: TextRun::new(limits.max_messages),
            ready: Vec::new(),
            ended: Some(ended),
            limits,
        }
    }

    /// Handle one chunk of stdout (or none: retry what waits).
    /// `sink_idle`: whether the sink holds nothing undelivered (asked after
    /// the queue was found idle: items flow from the queue to the sink).
    pub fn feed(
        &mut self,
        shared: &Arc<Shared>,
        chunk: &[u8],
        sink_idle: &dyn Fn() -> bool,
    ) -> Fed {
        if !chunk.is_empty() {
            let at = Instant::now();
            let Self {
                framer, run, ready, ..
            } = self;
            framer.push(chunk, |frame| on_frame(shared, frame, at, run, ready));
            run.flush(shared, ready);
        }
        self.hand_over(shared, sink_idle)
    }

    /// stdout ended (EOF or a read error the host describes).
    pub fn finish(
        &mut self,
        shared: &Arc<Shared>,
        error: Option<Event>,
        sink_idle: &dyn Fn() -> bool,
    ) -> Fed {
        let at = Instant::now();
        let Self {
            framer, run, ready, ..
        } = self;
        framer.finish(|frame| on_frame(shared, frame, at, run, ready));
        run.flush(shared, ready);
        ready.extend(error);
        let fed = self.hand_over(shared, sink_idle);
        if let Some(ended) = self.ended.take() {
            let _ = ended.send(());
        }
        fed
    }

    fn hand_over(&mut self, shared: &Arc<Shared>, sink_idle: &dyn Fn() -> bool) -> Fed {
        if self.ready.is_empty() {
            return Fed::Nothing;
        }
        // Direct only with nothing before it on the way, and within the
        // batches the host may hold (its ack gives the slot back).
        let mut batch = None;
        if shared.queue.idle() && sink_idle() {
            let n = self.fitting();
            // What does not fit the batch is queued behind it: only if
            // there is room for it, else it would wait with nobody to say so.
            let rest: usize = self.ready[n..]
                .iter()
                .map(|ev| ev.queued_bytes() as usize)
                .sum();
            if shared.queue.has_room(rest) && shared.queue.try_take_slot() {
                batch = Some(encode(self.ready.drain(..n)));
            }
        }
        if !self.ready.is_empty() && !shared.queue.try_queue_all(&mut self.ready) {
            // Kept, in order, for the next feed (the host feeds again after
            // each batch the sink delivers).
            return batch.map_or(Fed::Full, Fed::Batch);
        }
        batch.map_or(Fed::Nothing, Fed::Batch)
    }

    /// How many of the ready items (at least one) make a batch within the
    /// batch limits.
    fn fitting(&self) -> usize {
        let (mut n, mut items, mut bytes) = (0, 0, 0);
        for ev in &self.ready {
            if n > 0
                && (items + ev.items() > self.limits.max_messages || bytes >= self.limits.max_bytes)
            {
                break;
            }
            n += 1;
            items += ev.items();
            bytes += ev.queued_bytes() as usize;
        }
        n
    }
}

/// The items as one batch, as the delivery task writes them.
fn encode(events: impl Iterator<Item = Event>) -> Batch {
    let mut text = String::with_capacity(256);
    let mut ascii = true;
    text.push('[');
    for (i, ev) in events.enumerate() {
        if i > 0 {
            text.push(',');
        }
        ascii &= ev.is_ascii();
        ev.encode_into(&mut text);
    }
    text.push(']');
    Batch { text, ascii }
}
