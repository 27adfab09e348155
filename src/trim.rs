//! Give freed memory back to the OS after big frees. glibc keeps freed
//! chunks in its arenas (one per thread that allocated: the JS thread, the
//! runtime's worker, the blocking pool), so the text of a closed view or a
//! collected string stays in the process's RSS until something asks for
//! it back. `malloc_trim` does, off the JS thread, once enough was freed.
//! Other allocators (musl, macOS, Windows) return memory on their own.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Freed bytes that make a trim worth its walk over the arenas.
const TRIM_AFTER_BYTES: usize = 16 * 1024 * 1024;

static FREED: AtomicUsize = AtomicUsize::new(0);
static SCHEDULED: AtomicBool = AtomicBool::new(false);

/// `bytes` were freed (or are about to be): trim once enough add up.
pub fn freed(bytes: usize) {
    if FREED.fetch_add(bytes, Ordering::Relaxed) + bytes >= TRIM_AFTER_BYTES {
        soon();
    }
}

/// Trim on the blocking pool shortly (what is being dropped now is gone
/// by then, and frees close together share one trim), unless a trim is
/// already on its way or running: under a flood of frees, one trim at a
/// time, each at least [`TRIM_DELAY`] after the one before ended.
pub fn soon() {
    schedule(trim);
}

/// How long a trim waits for the frees around it.
const TRIM_DELAY: std::time::Duration = std::time::Duration::from_millis(50);

fn schedule(work: fn()) {
    if SCHEDULED.swap(true, Ordering::AcqRel) {
        return;
    }
    let runtime = crate::runtime::handle();
    runtime.spawn(async move {
        tokio::time::sleep(TRIM_DELAY).await;
        FREED.store(0, Ordering::Relaxed);
        let _ = tokio::task::spawn_blocking(work).await;
        SCHEDULED.store(false, Ordering::Release);
        // What was freed while it ran asked for no trim of its own.
        if FREED.load(Ordering::Relaxed) >= TRIM_AFTER_BYTES {
            schedule(work);
        }
    });
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    extern "C" {
        fn malloc_trim(pad: usize) -> i32;
    }
    // SAFETY: glibc's malloc_trim takes its arenas' locks; safe from any thread.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;
    use std::time::{Duration, Instant};

    static RUNNING: AtomicU32 = AtomicU32::new(0);
    static MOST_AT_ONCE: AtomicU32 = AtomicU32::new(0);
    static RUNS: AtomicU32 = AtomicU32::new(0);

    /// A trim slower than the delay between trims (a big heap's walk).
    fn slow_trim() {
        let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
        MOST_AT_ONCE.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(TRIM_DELAY * 4);
        RUNS.fetch_add(1, Ordering::SeqCst);
        RUNNING.fetch_sub(1, Ordering::SeqCst);
    }

    #[test]
    fn a_flood_of_frees_runs_one_trim_at_a_time() {
        let start = Instant::now();
        while RUNS.load(Ordering::SeqCst) < 3 && start.elapsed() < Duration::from_secs(60) {
            schedule(slow_trim);
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(RUNS.load(Ordering::SeqCst) >= 3, "trims ran");
        assert_eq!(MOST_AT_ONCE.load(Ordering::SeqCst), 1);
    }
}
