//! The agent's pipes as the connection sees them: the queue to its stdin,
//! the trace of every message either way, and the stdout lines that were
//! not messages at all.

use std::sync::atomic::{AtomicU64, Ordering};

use super::trace::Tracer;
use crate::transport::Outbox;

pub(super) struct Wire {
    pub outbox: Outbox,
    pub tracer: Tracer,
    /// Non-JSON lines seen on stdout.
    noise_lines: AtomicU64,
}

impl Wire {
    pub fn new(outbox: Outbox, tracer: Tracer) -> Self {
        Self {
            outbox,
            tracer,
            noise_lines: AtomicU64::new(0),
        }
    }

    /// Count one more noise line; the count so far.
    pub fn noise_line(&self) -> u64 {
        self.noise_lines.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn noise_lines(&self) -> u64 {
        self.noise_lines.load(Ordering::Relaxed)
    }
}
