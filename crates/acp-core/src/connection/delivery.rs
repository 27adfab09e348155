//! The one ordered path from the connection to the host. Responses travel
//! on it too, so a response can never overtake a notification that came
//! before it on the wire.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, Semaphore};

use super::event::{Event, QUEUE_BUDGET_BYTES};

/// One batch: a JSON array of items (see [`Event`]).
pub struct Batch {
    pub text: String,
    /// Pure ASCII: a JS string can be made from it by plain copy.
    pub ascii: bool,
    /// Drop it once the host's thread has the batch (see [`InTransit`]).
    pub in_transit: InTransit,
}

/// A queued batch's events still count as on their way to the host (see
/// `HostQueue::idle`) until this drops. The sink drops it where the host's
/// thread takes the batch: counted until then, a batch cannot be overtaken
/// by one the host reads itself, and uncounted from then, a host that acts
/// on it (and reads the agent's answer) never finds it still counted.
pub struct InTransit {
    waiting: Option<Arc<AtomicUsize>>,
    events: usize,
}

impl InTransit {
    /// A batch that was never queued (the host read it itself).
    #[cfg(unix)]
    pub(super) fn none() -> Self {
        Self {
            waiting: None,
            events: 0,
        }
    }
}

impl Drop for InTransit {
    fn drop(&mut self) {
        if let Some(waiting) = &self.waiting {
            waiting.fetch_sub(self.events, Ordering::SeqCst);
        }
    }
}

/// Where batches go (the napi binding implements this with a
/// ThreadsafeFunction; tests implement it with a channel).
pub trait DeliverySink: Send + Sync + 'static {
    /// Hand one batch to the host. The host must call
    /// [`super::Connection::ack`] once it has processed it, and drop the
    /// batch's [`InTransit`] when its thread takes the batch. Returns false
    /// when the host is gone; nothing is delivered after that.
    fn deliver(&self, batch: Batch) -> bool;
}

pub(super) struct BatchLimits {
    pub max_messages: usize,
    pub max_bytes: usize,
}

/// Drain events into batches: one event when the stream is idle, as many
/// as are ready (up to the limits) when there is a backlog. A batch is only
/// built once an in-flight slot is free, so a slow host stops this task,
/// which leaves the queue budget spent, which stops the reader, which
/// leaves the agent blocked on its stdout pipe: memory stays flat.
pub(super) async fn run_delivery(
    mut rx: mpsc::UnboundedReceiver<Event>,
    sink: Arc<dyn DeliverySink>,
    slots: Arc<Semaphore>,
    queue_budget: Arc<Semaphore>,
    host_gone: Arc<AtomicBool>,
    limits: BatchLimits,
    waiting: Arc<AtomicUsize>,
) {
    let release = |ev: &Event| {
        let bytes = ev.queued_bytes();
        if bytes > 0 {
            queue_budget.add_permits(bytes as usize);
        }
    };
    // An event that would have taken its batch over `max_messages` (a
    // group of items): it starts the next one.
    let mut carried: Option<Event> = None;
    loop {
        let first = match carried.take() {
            Some(ev) => ev,
            None => match rx.recv().await {
                Some(ev) => ev,
                None => return,
            },
        };
        if host_gone.load(Ordering::Relaxed) {
            release(&first);
            waiting.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        match slots.acquire().await {
            Ok(permit) => permit.forget(),
            Err(_) => return,
        }
        let mut batch = String::with_capacity(first.queued_bytes() as usize + 64);
        let mut ascii = first.is_ascii();
        batch.push('[');
        first.encode_into(&mut batch);
        // The budget is given back once per batch (each give-back takes
        // the semaphore's lock), as soon as the batch holds the texts.
        let mut released = first.queued_bytes() as usize;
        let first_len = batch.len();
        let mut count = first.items();
        let mut events = 1;
        drop(first);
        while count < limits.max_messages && batch.len() < limits.max_bytes {
            match rx.try_recv() {
                Ok(ev) if count + ev.items() > limits.max_messages => {
                    carried = Some(ev);
                    break;
                }
                Ok(ev) => {
                    if batch.len() == first_len {
                        // A backlog: room for what waits (up to a batch)
                        // at once, not grown by doubling, each growth a
                        // copy of the batch so far.
                        let waiting = (QUEUE_BUDGET_BYTES as usize)
                            .saturating_sub(queue_budget.available_permits());
                        batch.reserve(waiting.min(limits.max_bytes) + 1024);
                    }
                    ascii &= ev.is_ascii();
                    batch.push(',');
                    ev.encode_into(&mut batch);
                    released += ev.queued_bytes() as usize;
                    count += ev.items();
                    events += 1;
                }
                Err(_) => break,
            }
        }
        if released > 0 {
            queue_budget.add_permits(released);
        }
        batch.push(']');
        let in_transit = InTransit {
            waiting: Some(Arc::clone(&waiting)),
            events,
        };
        let batch = Batch {
            text: batch,
            ascii,
            in_transit,
        };
        if !sink.deliver(batch) {
            host_gone.store(true, Ordering::Relaxed);
            slots.add_permits(1);
        }
    }
}
