//! What the agent wrote to stderr: the last bytes, for crash reports and
//! `stderrTail`, and how many chunks were not forwarded to the host.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::transport::StderrRing;

pub(super) struct StderrLog {
    ring: Mutex<StderrRing>,
    /// Chunks not forwarded for want of queue budget.
    dropped: AtomicU64,
}

impl StderrLog {
    pub fn new(tail_bytes: usize) -> Self {
        Self {
            ring: Mutex::new(StderrRing::new(tail_bytes)),
            dropped: AtomicU64::new(0),
        }
    }

    pub fn push(&self, chunk: &[u8]) {
        self.ring
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(chunk);
    }

    pub fn tail(&self) -> String {
        self.ring.lock().unwrap_or_else(|e| e.into_inner()).tail()
    }

    pub fn note_dropped(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }

    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}
