//! Grow the runtime worker's malloc arena once, up front. glibc grows a
//! thread's arena one `mprotect` per page up to its high-water mark, and
//! the worker reads every agent's output: a view that keeps tool output
//! keeps its arena growing, a system call per 4 KiB. Allocated and freed
//! here in blocks, the arena makes that memory usable in a few hundred
//! calls instead; freed, its pages go back to the OS (glibc trims the
//! top of a thread's heap), so this costs address space, not memory.

use std::sync::atomic::{AtomicBool, Ordering};

static DONE: AtomicBool = AtomicBool::new(false);

/// For the runtime's `on_thread_start`: the first thread to start is its
/// worker (the blocking pool's threads come later, when asked for).
pub fn reserve_on_first_thread() {
    if DONE.swap(true, Ordering::Relaxed) {
        return;
    }
    reserve();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn reserve() {
    /// The arena grown: within the 64 MiB that glibc gives a thread's heap.
    const RESERVE_BYTES: usize = 32 * 1024 * 1024;
    /// Each block: under glibc's threshold (128 KiB) above which a block
    /// is mapped on its own instead of taken from the arena.
    const BLOCK_BYTES: usize = 120 * 1024;
    let blocks: Vec<Vec<u8>> = (0..RESERVE_BYTES / BLOCK_BYTES)
        .map(|_| Vec::with_capacity(BLOCK_BYTES))
        .collect();
    drop(std::hint::black_box(blocks));
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn reserve() {}
