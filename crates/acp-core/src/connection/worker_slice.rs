//! The end of a worker slice: a reader that has handled a slice of an
//! agent's output lets the other tasks on the shared worker run next and,
//! once the worker has held its CPU for a while, the machine's other
//! threads too.
//!
//! Why the second: a flood keeps the worker busy for as long as the pipe
//! has data, and the OS only takes the CPU back at its scheduler tick; the
//! host's event loop, woken on that CPU, would wait that long behind the
//! reader. Offering the CPU costs one system call per offer, and none
//! when nothing else waits for it.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The longest the worker runs before it offers its CPU: well under a
/// scheduler tick, well over the cost of the offer.
const HOLD_CPU: Duration = Duration::from_micros(500);

thread_local! {
    /// When this thread last offered its CPU, or first ended a slice since
    /// it last waited for work.
    static OFFERED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The worker is about to wait for work (a runtime's `on_thread_park`
/// hook): the CPU it held so far was given back, so the next offer is due
/// a full [`HOLD_CPU`] after it wakes. Without the hook a worker woken
/// after a quiet spell would offer its CPU at its first slice, in the
/// middle of a round trip.
pub fn worker_parked() {
    OFFERED.with(|offered| offered.set(None));
}

/// End a worker slice: offer the CPU if held long enough, then let the
/// worker's other tasks run.
pub(super) async fn yield_point() {
    offer_cpu();
    tokio::task::yield_now().await;
}

fn offer_cpu() {
    let now = Instant::now();
    OFFERED.with(|offered| match offered.get() {
        Some(at) if now.duration_since(at) < HOLD_CPU => {}
        Some(_) => {
            std::thread::yield_now();
            offered.set(Some(Instant::now()));
        }
        None => offered.set(Some(now)),
    });
}
