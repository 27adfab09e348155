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
    /// When this thread last offered its CPU.
    static OFFERED: Cell<Option<Instant>> = const { Cell::new(None) };
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
