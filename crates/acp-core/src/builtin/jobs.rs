//! Blocking built-in work (file I/O, building a large reply) runs on the
//! blocking pool, never on the runtime worker every connection shares, at
//! most `max_jobs` at a time per connection (one agent can neither fill
//! the pool nor the host's memory with replies), and stops once its
//! request is settled: the task waiting for the work holds a guard whose
//! drop (the task aborted on cancel or close) raises the flag the work
//! checks between chunks.
//!
//! The machine's share of the CPU for such work ([`Machine`]) goes to
//! connections round-robin, not to jobs in arrival order: one agent's four
//! huge reads queued first must not make another agent's small read wait
//! for all four. A job also gives its CPU share up between chunks
//! ([`Cancel::checkpoint`]) once it has computed for [`SLICE`] while another
//! connection waits, so no single job holds the others back for long.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use super::error::BuiltinError;

/// Raised when the request the work answers was settled without it; also
/// carries the job's CPU share on the machine while the work computes.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    cpu_share: Arc<Mutex<Option<CpuShare>>>,
    commit: Arc<Mutex<Commit>>,
}

/// The point of no return of a work (a write's rename): undecided, with
/// what claims the request then (so a cancel arriving later no longer
/// answers it), or decided.
#[derive(Default)]
enum Commit {
    #[default]
    Open,
    Claim(Box<dyn FnOnce() -> bool + Send>),
    Decided(bool),
}

impl std::fmt::Debug for Commit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Commit::Open => f.write_str("Open"),
            Commit::Claim(_) => f.write_str("Claim"),
            Commit::Decided(go) => write!(f, "Decided({go})"),
        }
    }
}

impl Cancel {
    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// `Err(cancelled)` once raised: for `?` between chunks of work.
    pub fn check(&self) -> Result<(), BuiltinError> {
        if self.checkpoint() {
            Err(BuiltinError::cancelled())
        } else {
            Ok(())
        }
    }

    /// Between chunks of work: let another connection's job compute if
    /// this one has had its slice (blocks until its CPU share comes back), then
    /// say whether the work is still wanted (true: stop).
    pub fn checkpoint(&self) -> bool {
        CpuShare::pass_on(&mut lock(&self.cpu_share));
        self.requested()
    }

    /// What [`Cancel::commit`] runs to take the request for the work: true
    /// if it was still unsettled (and now no cancel can answer it).
    pub fn on_commit(&self, claim: impl FnOnce() -> bool + Send + 'static) {
        *lock(&self.commit) = Commit::Claim(Box::new(claim));
    }

    /// The point of no return (a write's rename): true if the work goes
    /// on. Decided once, atomically with respect to a cancel: a request
    /// cancelled first stops the work; once committed, a cancel no longer
    /// answers the request, so "cancelled" always means "not done".
    pub fn commit(&self) -> bool {
        let mut commit = lock(&self.commit);
        let go = match std::mem::take(&mut *commit) {
            Commit::Decided(go) => go,
            Commit::Open => !self.requested(),
            Commit::Claim(claim) => !self.requested() && claim(),
        };
        *commit = Commit::Decided(go);
        go
    }

    /// A guard that raises the flag when dropped.
    pub fn raise_on_drop(&self) -> RaiseOnDrop {
        RaiseOnDrop(self.clone())
    }

    /// The work computes with `share` (none: it runs without one).
    fn begin(&self, share: Option<CpuShare>) {
        *lock(&self.cpu_share) = share;
    }

    /// The computing is done (what is left is waiting for the agent to
    /// read its reply): give the machine's share to another job.
    pub fn end_cpu_share(&self) {
        lock(&self.cpu_share).take();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct RaiseOnDrop(Cancel);

impl Drop for RaiseOnDrop {
    fn drop(&mut self) {
        self.0.flag.store(true, Ordering::Relaxed);
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

/// The longest a job computes while another connection's job waits for
/// the machine, between two of its checkpoints.
const SLICE: Duration = Duration::from_millis(2);

/// How long a new job of an agent holding no CPU share waits for one before it
/// runs without (see [`Machine::gives_up`]): the job holding the CPU share may
/// not reach its next checkpoint soon, stuck in the kernel (a read from a
/// dead network mount) or merely not given a CPU by the OS on a busy
/// machine, and another agent's built-in must not wait for that.
const GUEST_WAIT: Duration = Duration::from_millis(10);

/// How long a job that handed its CPU share over waits for the next before it
/// runs without (its agent holding no CPU share meanwhile).
const MACHINE_WAIT: Duration = Duration::from_secs(1);

/// One job waiting for a CPU share.
#[derive(Default)]
struct Ticket {
    /// Set under the machine's lock when the CPU share is given.
    granted: AtomicBool,
    wake: Notify,
}

/// A connection's jobs waiting for CPU shares, oldest first.
struct Waiting {
    conn: u64,
    tickets: VecDeque<Arc<Ticket>>,
}

struct MachineState {
    free: usize,
    /// Connections with jobs waiting, in the order they get CPU shares: one
    /// that just had a CPU share goes to the back.
    waiting: VecDeque<Waiting>,
    /// CPU shares held, by connection.
    running: HashMap<u64, usize>,
}

/// CPU shares for every connection of the process: built-in work takes
/// all cores but one at most, so the JS thread and the runtime worker
/// always have a core (a lower priority alone does not: the scheduler
/// still lets jobs keep the JS thread waiting for a CPU). Fair between
/// connections: a connection with no CPU share is served before one that
/// has one, the others round-robin.
pub struct Machine {
    state: Mutex<MachineState>,
    /// [`GUEST_WAIT`], unless a test says otherwise.
    guest_wait: Duration,
}

impl Machine {
    fn new(cpu_shares: usize, guest_wait: Duration) -> Self {
        Self {
            state: Mutex::new(MachineState {
                free: cpu_shares.max(1),
                waiting: VecDeque::new(),
                running: HashMap::new(),
            }),
            guest_wait,
        }
    }

    fn global() -> &'static Machine {
        static MACHINE: OnceLock<Machine> = OnceLock::new();
        MACHINE.get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            Machine::new(cores.saturating_sub(1), GUEST_WAIT)
        })
    }

    fn lock(&self) -> MutexGuard<'_, MachineState> {
        lock(&self.state)
    }

    /// Wait for a CPU share for a new job of connection `conn`; `None` when
    /// none came in time (the job runs without one).
    async fn cpu_share(&'static self, conn: u64) -> Option<CpuShare> {
        let wait = self.guest_wait;
        let ticket = Arc::new(Ticket::default());
        self.lock().enqueue(conn, &ticket);
        let mut pending = Pending {
            machine: self,
            conn,
            ticket: Some(ticket.clone()),
        };
        // Aborted while waiting: `pending` withdraws the ticket (or gives
        // back the CPU share granted meanwhile).
        while tokio::time::timeout(wait, ticket.wake.notified())
            .await
            .is_err()
        {
            if self.gives_up(conn) {
                break;
            }
        }
        pending.settle()
    }

    /// A job of `conn` waited in vain for a CPU share: it runs without one
    /// unless its own connection holds one. The CPU shares are then held by
    /// jobs that did not reach their checkpoints in time, which must not
    /// hold up the other agents' built-ins; a job of an agent that holds
    /// a CPU share only waits for its own agent's work.
    fn gives_up(&self, conn: u64) -> bool {
        !self.lock().running.contains_key(&conn)
    }
}

impl MachineState {
    fn enqueue(&mut self, conn: u64, ticket: &Arc<Ticket>) {
        match self.waiting.iter_mut().find(|w| w.conn == conn) {
            Some(w) => w.tickets.push_back(ticket.clone()),
            None => self.waiting.push_back(Waiting {
                conn,
                tickets: VecDeque::from([ticket.clone()]),
            }),
        }
        self.grant();
    }

    /// Give the free CPU shares to waiting jobs.
    fn grant(&mut self) {
        while self.free > 0 {
            let idle = self
                .waiting
                .iter()
                .position(|w| !self.running.contains_key(&w.conn));
            let Some(at) = idle.or((!self.waiting.is_empty()).then_some(0)) else {
                return;
            };
            let mut w = self.waiting.remove(at).expect("found");
            let ticket = w.tickets.pop_front().expect("no empty queue is kept");
            let conn = w.conn;
            if !w.tickets.is_empty() {
                self.waiting.push_back(w);
            }
            ticket.granted.store(true, Ordering::Relaxed);
            ticket.wake.notify_one();
            self.free -= 1;
            *self.running.entry(conn).or_default() += 1;
        }
    }

    /// Forget a ticket not granted.
    fn withdraw(&mut self, conn: u64, ticket: &Arc<Ticket>) {
        if let Some(at) = self.waiting.iter().position(|w| w.conn == conn) {
            let w = &mut self.waiting[at];
            w.tickets.retain(|t| !Arc::ptr_eq(t, ticket));
            if w.tickets.is_empty() {
                self.waiting.remove(at);
            }
        }
    }

    /// A CPU share of `conn` ended: its waiting jobs go after the others'.
    fn release(&mut self, conn: u64) {
        self.free += 1;
        if let Some(n) = self.running.get_mut(&conn) {
            *n -= 1;
            if *n == 0 {
                self.running.remove(&conn);
            }
        }
        if let Some(at) = self.waiting.iter().position(|w| w.conn == conn) {
            let w = self.waiting.remove(at).expect("found");
            self.waiting.push_back(w);
        }
        self.grant();
    }

    fn others_wait(&self, conn: u64) -> bool {
        self.waiting.iter().any(|w| w.conn != conn)
    }
}

/// A ticket being waited for: settled into a CPU share or withdrawn, also when
/// the waiter is dropped.
struct Pending {
    machine: &'static Machine,
    conn: u64,
    ticket: Option<Arc<Ticket>>,
}

impl Pending {
    fn settle(&mut self) -> Option<CpuShare> {
        let ticket = self.ticket.take()?;
        let mut st = self.machine.lock();
        if ticket.granted.load(Ordering::Relaxed) {
            return Some(CpuShare {
                machine: self.machine,
                conn: self.conn,
                since: Instant::now(),
            });
        }
        st.withdraw(self.conn, &ticket);
        None
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // A CPU share granted to a waiter gone is given back.
        drop(self.settle());
    }
}

/// A job's CPU share on the machine, given back when dropped.
#[derive(Debug)]
pub struct CpuShare {
    machine: &'static Machine,
    conn: u64,
    since: Instant,
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Machine")
    }
}

impl CpuShare {
    /// Give the CPU share to another connection's job if this one has had its
    /// slice and one waits; blocks (a blocking-pool thread) until a CPU share
    /// comes back (see [`Machine::gives_up`]).
    fn pass_on(slot: &mut Option<CpuShare>) {
        let Some(share) = slot.as_mut() else {
            return;
        };
        if share.since.elapsed() < SLICE {
            return;
        }
        let (machine, conn) = (share.machine, share.conn);
        let ticket = Arc::new(Ticket::default());
        {
            let mut st = machine.lock();
            if !st.others_wait(conn) {
                share.since = Instant::now();
                return;
            }
            // Given back here, under the same hold as the new ticket.
            std::mem::forget(slot.take());
            st.enqueue(conn, &ticket);
            st.release(conn);
        }
        let mut pending = Pending {
            machine,
            conn,
            ticket: Some(ticket.clone()),
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            while rt
                .block_on(tokio::time::timeout(MACHINE_WAIT, ticket.wake.notified()))
                .is_err()
            {
                if machine.gives_up(conn) {
                    break;
                }
            }
        }
        *slot = pending.settle();
    }
}

impl Drop for CpuShare {
    fn drop(&mut self) {
        self.machine.lock().release(self.conn);
    }
}

/// The job slots of one connection.
pub struct Jobs {
    slots: Arc<Semaphore>,
    /// This connection, for the machine's CPU shares.
    id: u64,
    machine: &'static Machine,
    #[cfg(test)]
    no_thread: AtomicBool,
}

/// A job's right to run: one of its connection's slots and, while it
/// computes, a CPU share on the machine.
pub struct Slot {
    _connection: OwnedSemaphorePermit,
    cpu_share: Option<CpuShare>,
}

impl Slot {
    /// The work starts: `cancel`'s checkpoints pass the CPU share on from now
    /// on.
    pub fn begin(&mut self, cancel: &Cancel) {
        cancel.begin(self.cpu_share.take());
    }
}

impl Jobs {
    pub fn new(max_jobs: usize) -> Self {
        Self::on(Machine::global(), max_jobs)
    }

    fn on(machine: &'static Machine, max_jobs: usize) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self {
            slots: Arc::new(Semaphore::new(max_jobs.max(1))),
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            machine,
            #[cfg(test)]
            no_thread: AtomicBool::new(false),
        }
    }

    /// Wait for a free slot of this connection, then for a CPU share on the
    /// machine (see [`Machine::gives_up`]); the work keeps the slot
    /// until it ends (even if the request was settled meanwhile, until it
    /// notices).
    pub async fn slot(&self) -> Option<Slot> {
        let connection = self.slots.clone().acquire_owned().await.ok()?;
        let cpu_share = self.machine.cpu_share(self.id).await;
        Some(Slot {
            _connection: connection,
            cpu_share,
        })
    }

    /// Slots of this connection free right now (for tests and status).
    pub fn free(&self) -> usize {
        self.slots.available_permits()
    }
}

impl Jobs {
    /// Run `job` with `slot` on the blocking pool, or say that no thread
    /// can be had: with no pool thread alive and the OS refusing a new one
    /// (pids exhausted), tokio panics rather than return an error, and the
    /// request must still get an answer. The slot is then given back at
    /// once; the job, already queued in the pool, may run once a thread
    /// starts: it finds its slot gone and does nothing.
    pub fn run(
        &self,
        slot: Slot,
        job: impl FnOnce(Slot) + Send + 'static,
    ) -> Result<JoinHandle<()>, BuiltinError> {
        let held = Arc::new(Mutex::new(Some(slot)));
        let job_held = Arc::clone(&held);
        let job = move || {
            if let Some(slot) = lock(&job_held).take() {
                job(slot);
            }
        };
        #[cfg(test)]
        let injected = self.no_thread.load(Ordering::Relaxed);
        #[cfg(not(test))]
        let injected = false;
        let spawned = if injected {
            Err(BuiltinError::no_thread("injected"))
        } else {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                tokio::task::spawn_blocking(job)
            }))
            .map_err(|panic| {
                let why = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("the blocking pool refused the job");
                BuiltinError::no_thread(why)
            })
        };
        if spawned.is_err() {
            drop(lock(&held).take());
        }
        spawned
    }

    /// Make [`Jobs::run`] fail as it does when the OS has no thread to
    /// give (where the OS cannot be made to refuse one).
    #[cfg(test)]
    fn inject_no_thread(&self) {
        self.no_thread.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Its waits are long: what a test sees does not depend on how soon
    /// a thread gets a CPU.
    fn machine(cpu_shares: usize) -> &'static Machine {
        Box::leak(Box::new(Machine::new(
            cpu_shares,
            Duration::from_secs(3600),
        )))
    }

    #[tokio::test]
    async fn a_connection_waiting_gets_the_next_cpu_share_before_one_that_had_it() {
        let m = machine(1);
        let (a, b) = (Arc::new(Jobs::on(m, 4)), Arc::new(Jobs::on(m, 4)));
        let first = a.slot().await.unwrap();
        assert!(first.cpu_share.is_some());
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        // A queues two more jobs, then B one: B is served next.
        for (jobs, name) in [(&a, "a2"), (&a, "a3"), (&b, "b1")] {
            let (jobs, order) = (Arc::clone(jobs), Arc::clone(&order));
            tasks.push(tokio::spawn(async move {
                let slot = jobs.slot().await.unwrap();
                lock(&order).push((name, slot.cpu_share.is_some()));
            }));
            // It waits for its CPU share now (queued in this order).
            tokio::task::yield_now().await;
        }
        assert!(lock(&order).is_empty());
        drop(first);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*lock(&order), [("b1", true), ("a2", true), ("a3", true)]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_long_job_gives_its_cpu_share_to_another_connection_at_a_checkpoint() {
        let m = machine(1);
        let (a, b) = (Jobs::on(m, 1), Jobs::on(m, 1));
        let mut slot = a.slot().await.unwrap();
        let b_done = Arc::new(AtomicBool::new(false));
        let job_done = Arc::clone(&b_done);
        // A job that would run until B has had a CPU share: it never ends
        // unless its checkpoints hand the CPU share over.
        let job = tokio::task::spawn_blocking(move || {
            let cancel = Cancel::default();
            slot.begin(&cancel);
            let mut checkpoints = 0u64;
            while !job_done.load(Ordering::Relaxed) {
                assert!(!cancel.checkpoint());
                checkpoints += 1;
                std::thread::sleep(Duration::from_micros(200));
            }
            // Its CPU share came back after B's.
            assert!(lock(&cancel.cpu_share).is_some());
            checkpoints
        });
        let got = b.slot().await.unwrap();
        let had_cpu_share = got.cpu_share.is_some();
        b_done.store(true, Ordering::Relaxed);
        drop(got);
        assert!(job.await.unwrap() > 0);
        // A CPU share, not the wait's end: the running job gave it.
        assert!(had_cpu_share);
        assert_eq!(m.lock().free, 1, "every CPU share given back");
    }

    #[tokio::test]
    async fn a_job_no_thread_can_run_gives_its_slot_and_cpu_share_back_and_never_runs() {
        let m = machine(1);
        let a = Jobs::on(m, 1);
        a.inject_no_thread();
        let ran = Arc::new(AtomicBool::new(false));
        let job_ran = Arc::clone(&ran);
        let slot = a.slot().await.unwrap();
        let err = a
            .run(slot, move |_| job_ran.store(true, Ordering::Relaxed))
            .unwrap_err();
        assert_eq!((err.reason, err.code), ("noThread", -32603));
        assert_eq!(a.free(), 1, "the connection's slot is free again");
        assert_eq!(m.lock().free, 1, "and the machine's CPU share");
        assert!(!ran.load(Ordering::Relaxed));
    }

    #[tokio::test(start_paused = true)]
    async fn only_a_connection_holding_no_cpu_share_runs_without_one_after_the_wait() {
        let m = machine(1);
        let (a, b) = (Arc::new(Jobs::on(m, 2)), Jobs::on(m, 1));
        // A job that never reaches a checkpoint (stuck in the kernel).
        let stuck = a.slot().await.unwrap();
        let a2 = {
            let a = Arc::clone(&a);
            tokio::spawn(async move { a.slot().await.map(|s| s.cpu_share.is_some()) })
        };
        // B waits its time, then runs without a CPU share.
        let b1 = b.slot().await.unwrap();
        assert!(b1.cpu_share.is_none());
        drop(b1);
        // A's second job waits for A's own work, however long.
        tokio::time::sleep(Duration::from_secs(3600 * 5)).await;
        assert!(!a2.is_finished());
        drop(stuck);
        assert_eq!(a2.await.unwrap(), Some(true));
    }

    #[tokio::test]
    async fn a_waiter_dropped_gives_back_the_cpu_share_it_was_granted() {
        let m = machine(1);
        let (a, b) = (Jobs::on(m, 1), Jobs::on(m, 1));
        let first = a.slot().await.unwrap();
        let waiting = tokio::spawn(async move { b.slot().await.map(|s| s.cpu_share.is_some()) });
        tokio::task::yield_now().await;
        // Granted to B as A gives it back, then B's task is gone.
        drop(first);
        waiting.abort();
        let _ = waiting.await;
        assert_eq!(m.lock().free, 1);
        assert!(m.lock().waiting.is_empty());
        assert!(m.lock().running.is_empty());
    }
}
