//! The end of a turn of an agent's output on the shared worker: the other
//! tasks on the worker run next, and, once the worker has held its CPU for
//! a while, the machine's other threads too.
//!
//! Why the second: a flood keeps the worker busy for as long as the pipe
//! has data, and the OS only takes the CPU back at its tick (4 ms at HZ
//! 250). The host's event loop, woken on that CPU, waited that long: on
//! two cores, `bench:ui`'s worst loop stalls were the JS thread runnable
//! but queued behind the reader for 2-4 ms (`perf sched timehist`), not
//! JS work. Offering the CPU costs one system call per offer, and none
//! when nothing else waits for it.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The longest the worker runs before it offers its CPU.
const HOLD_CPU: Duration = Duration::from_micros(500);

thread_local! {
    /// When this thread last offered its CPU.
    static OFFERED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// End a turn: offer the CPU if held long enough, then let the worker's
/// other tasks run.
pub(super) async fn end() {
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
