//! The producers' side of the one ordered stream to the host, and the two
//! budgets that bound it: batches the host holds, and bytes of agent
//! output waiting between the reader and the host.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, Semaphore};

use super::event::{Event, QUEUE_BUDGET_BYTES};

pub(super) struct HostQueue {
    /// Unbounded in slots so that every producer queues in the order things
    /// happened: a bounded channel would make a sender that found it full
    /// retry later, behind newer items. Its memory is bounded by `budget`,
    /// which everything the agent can cause in any number is counted
    /// against (see `Event::queued_bytes`).
    events: mpsc::UnboundedSender<Event>,
    /// Batches the host may hold at once; the host gives one back per ack.
    slots: Arc<Semaphore>,
    /// Bytes of agent output allowed to wait for delivery.
    budget: Arc<Semaphore>,
    /// Events queued and not yet taken by the host's thread (see [`Self::idle`]).
    waiting: Arc<AtomicUsize>,
}

/// The consumer's side, for `run_delivery`.
pub(super) struct QueueEnd {
    pub events: mpsc::UnboundedReceiver<Event>,
    pub slots: Arc<Semaphore>,
    pub budget: Arc<Semaphore>,
    pub waiting: Arc<AtomicUsize>,
}

impl HostQueue {
    pub fn new(in_flight_batches: usize) -> (Self, QueueEnd) {
        let (events, rx) = mpsc::unbounded_channel();
        let slots = Arc::new(Semaphore::new(in_flight_batches.max(1)));
        let budget = Arc::new(Semaphore::new(QUEUE_BUDGET_BYTES as usize));
        let waiting = Arc::new(AtomicUsize::new(0));
        let end = QueueEnd {
            events: rx,
            slots: Arc::clone(&slots),
            budget: Arc::clone(&budget),
            waiting: Arc::clone(&waiting),
        };
        (
            Self {
                events,
                slots,
                budget,
                waiting,
            },
            end,
        )
    }

    /// Queue an event, in order, without waiting (gone only once delivery
    /// has stopped, when nobody is listening any more).
    pub fn emit(&self, event: Event) {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        if self.events.send(event).is_err() {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Nothing queued is still on its way to the host: queued, batched, or
    /// in the sink's own queue until the host's thread takes it (see
    /// `InTransit`). An item handed to the host directly now cannot
    /// overtake one queued before it.
    #[cfg(unix)]
    pub fn idle(&self) -> bool {
        self.waiting.load(Ordering::SeqCst) == 0
    }

    /// Queue `events` in order, emptying it, each once the budget has
    /// room for it. This wait is the backpressure: while the host is
    /// behind, stdout is not read. One wait per group of events that fits
    /// the budget together (one read's lines, nearly always), not one per
    /// event: each takes the semaphore. False once delivery has stopped.
    pub async fn queue_all(&self, events: &mut Vec<Event>) -> bool {
        let mut left = events.drain(..);
        loop {
            let mut count = 0;
            let mut bytes = 0;
            for event in left.as_slice() {
                let more = event.queued_bytes();
                if count > 0 && bytes + more > QUEUE_BUDGET_BYTES {
                    break;
                }
                // One event alone never asks for more than the budget.
                bytes += more;
                count += 1;
            }
            if count == 0 {
                return true;
            }
            if bytes > 0 {
                match self.budget.acquire_many(bytes).await {
                    Ok(permit) => permit.forget(),
                    Err(_) => return false,
                }
            }
            for event in left.by_ref().take(count) {
                self.waiting.fetch_add(1, Ordering::SeqCst);
                if self.events.send(event).is_err() {
                    return false;
                }
            }
        }
    }

    /// Is there room for `bytes` in the budget now?
    pub fn has_room(&self, bytes: usize) -> bool {
        self.budget.available_permits() >= bytes
    }

    /// Queue `events` in order now, emptying it, if the budget has room
    /// for all of them; never waits. False (nothing queued) otherwise.
    #[cfg(unix)]
    pub fn try_queue_all(&self, events: &mut Vec<Event>) -> bool {
        let bytes: u32 = events.iter().map(Event::queued_bytes).sum();
        if bytes > 0 {
            match self.budget.try_acquire_many(bytes) {
                Ok(permit) => permit.forget(),
                Err(_) => return false,
            }
        }
        for event in events.drain(..) {
            self.waiting.fetch_add(1, Ordering::SeqCst);
            let _ = self.events.send(event);
        }
        true
    }

    /// Queue `event` if the budget has room for it now; never waits.
    pub fn try_queue(&self, event: Event) -> bool {
        match self.budget.try_acquire_many(event.queued_bytes()) {
            Ok(permit) => permit.forget(),
            Err(_) => return false,
        }
        self.emit(event);
        true
    }

    /// Take one of the batches the host may hold, if one is free.
    #[cfg(unix)]
    pub fn try_take_slot(&self) -> bool {
        self.slots.try_acquire().map(|p| p.forget()).is_ok()
    }

    /// The host finished processing one delivered batch.
    pub fn ack(&self) {
        self.slots.add_permits(1);
    }
}
