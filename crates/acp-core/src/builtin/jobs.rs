//! Blocking built-in work (file I/O, building a large reply) runs on the
//! blocking pool, never on the runtime worker every connection shares, at
//! most `max_jobs` at a time per connection (one agent can neither fill
//! the pool nor the host's memory with replies), and stops once its
//! request is settled: the task waiting for the work holds a guard whose
//! drop (the task aborted on cancel or close) raises the flag the work
//! checks between chunks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::BuiltinError;

/// Raised when the request the work answers was settled without it.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err(cancelled)` once raised: for `?` between chunks of work.
    pub fn check(&self) -> Result<(), BuiltinError> {
        if self.requested() {
            Err(BuiltinError::cancelled())
        } else {
            Ok(())
        }
    }

    /// A guard that raises the flag when dropped.
    pub fn raise_on_drop(&self) -> RaiseOnDrop {
        RaiseOnDrop(self.clone())
    }
}

pub struct RaiseOnDrop(Cancel);

impl Drop for RaiseOnDrop {
    fn drop(&mut self) {
        self.0 .0.store(true, Ordering::Relaxed);
    }
}

/// Work answered from the blocking pool: the reply's JSON text.
pub type BlockingWork = Box<dyn FnOnce(&Cancel) -> Result<String, BuiltinError> + Send>;

/// Run the calling (blocking pool) thread at a lower CPU priority, once:
/// on a busy machine the scheduler then prefers the runtime worker every
/// connection shares (and the JS thread) over one agent's file and reply
/// work. Linux only (per-thread nice); elsewhere a no-op. Only built-in
/// jobs use the blocking pool, so the lower priority stays with them.
pub fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    {
        use std::cell::Cell;
        thread_local!(static LOWERED: Cell<bool> = const { Cell::new(false) });
        if LOWERED.with(|l| l.replace(true)) {
            return;
        }
        // SAFETY: plain libc calls on this thread's own id.
        unsafe {
            let tid = libc::gettid() as libc::id_t;
            *libc::__errno_location() = 0;
            let now = libc::getpriority(libc::PRIO_PROCESS, tid);
            if *libc::__errno_location() == 0 {
                libc::setpriority(libc::PRIO_PROCESS, tid, (now + 10).min(19));
            }
        }
    }
}

/// The job slots of one connection.
pub struct Jobs {
    slots: Arc<Semaphore>,
}

/// A job's right to run: one of its connection's slots and, while it
/// computes, one of the machine's.
pub struct Slot {
    _connection: OwnedSemaphorePermit,
    machine: Option<OwnedSemaphorePermit>,
}

impl Slot {
    /// The computing is done (what is left is waiting for the agent to
    /// read its reply): give the machine's slot to another job.
    pub fn release_machine(&mut self) {
        self.machine = None;
    }
}

/// Slots shared by every connection of the process: built-in work takes
/// all cores but one at most, so the JS thread and the runtime worker
/// always have a core. (On 2 cores, two jobs of one agent scanning a
/// sparse file kept the JS thread waiting for a CPU 70 ms at a time, even
/// at a lower priority.) Fair: waiting jobs get slots in turn, whichever
/// connection they belong to.
fn machine_slots() -> &'static Arc<Semaphore> {
    static SLOTS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    SLOTS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Arc::new(Semaphore::new(cores.saturating_sub(1).max(1)))
    })
}

/// How long a job waits for a machine slot before it runs anyway: a job
/// stuck in the kernel (a read from a dead network mount) must not stop
/// every agent's built-ins, only slow them this much.
const MACHINE_SLOT_WAIT: Duration = Duration::from_secs(1);

impl Jobs {
    pub fn new(max_jobs: usize) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(max_jobs.max(1))),
        }
    }

    /// Wait for a free slot of this connection, then of the machine (for
    /// [`MACHINE_SLOT_WAIT`] at most); the work keeps it until it ends
    /// (even if the request was settled meanwhile, until it notices).
    pub async fn slot(&self) -> Option<Slot> {
        let connection = self.slots.clone().acquire_owned().await.ok()?;
        let machine =
            tokio::time::timeout(MACHINE_SLOT_WAIT, machine_slots().clone().acquire_owned())
                .await
                .ok()
                .and_then(Result::ok);
        Some(Slot {
            _connection: connection,
            machine,
        })
    }

    /// Slots of this connection free right now (for tests and status).
    pub fn free(&self) -> usize {
        self.slots.available_permits()
    }
}
