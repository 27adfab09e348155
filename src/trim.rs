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
/// already on its way.
pub fn soon() {
    if SCHEDULED.swap(true, Ordering::AcqRel) {
        return;
    }
    let runtime = crate::runtime::handle();
    runtime.spawn(async {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        SCHEDULED.store(false, Ordering::Release);
        FREED.store(0, Ordering::Relaxed);
        let _ = tokio::task::spawn_blocking(trim).await;
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
