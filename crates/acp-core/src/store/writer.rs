//! The one thread that writes the store. Hosts hand it operations and
//! "feeds" (a way to copy a live view); it writes them in batches, one
//! transaction each, so the per-message path never touches the disk.
//!
//! Backpressure by coalescing, not queueing: a view is a snapshot, so a
//! writer that falls behind copies the latest state when it gets to it and
//! counts the revisions it skipped; journal records (a few per turn) queue
//! within a byte budget, and what is over it is dropped and counted.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::error::StoreError;
use super::record::{now_ms, JournalKind, NewSession, SessionPatch};
use super::retention::{delete_session, Retention};
use super::schema::{self, FILE_NAME};
use super::transcript;
use super::views;

/// What a feed has for the writer.
pub enum FeedPoll {
    /// Still at the revision the writer has.
    Unchanged,
    /// The state (JSON) at a newer revision.
    Changed { revision: u64, json: String },
    /// The view is gone for good (its connection was dropped).
    Gone,
}

/// Copies a live view: called on the writer thread with the revision the
/// writer last wrote.
pub type Feed = Box<dyn FnMut(u64) -> FeedPoll + Send>;

/// Journal bytes waiting for the writer at most; more are dropped (and
/// counted) until it catches up. A turn's prompt is small; only a writer
/// stuck on a full disk fills this.
const MAX_QUEUED_JOURNAL_BYTES: usize = 16 << 20;

/// A feed is copied no more often than this many times what the last copy
/// cost, so a huge view under a flood costs the reader a bounded share of
/// its time (the copy holds the views' lock).
const COPY_COST_FACTOR: u32 = 20;

enum Op {
    Create(NewSession),
    Patch(String, SessionPatch),
    Journal {
        id: String,
        kind: JournalKind,
        data: String,
    },
    Delete(String),
    /// Copy the feed one last time, then forget it.
    StopFeed(String),
}

struct FeedSlot {
    feed: Feed,
    /// The revision in the store.
    written: u64,
    next_copy: Instant,
}

#[derive(Default)]
struct Queue {
    ops: VecDeque<Op>,
    journal_bytes: usize,
    feeds: HashMap<String, Arc<Mutex<FeedSlot>>>,
    flushes: Vec<mpsc::Sender<Result<(), StoreError>>>,
    closing: bool,
}

/// Counters of the writer, for hosts and benchmarks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Transactions committed.
    pub batches: u64,
    /// View copies written.
    pub views_written: u64,
    /// View revisions never written on their own: a later copy held them.
    pub coalesced: u64,
    /// Journal records dropped because the writer was too far behind.
    pub dropped: u64,
    /// Batches that failed (kept and retried).
    pub errors: u64,
    /// Sessions pruned by the retention bounds.
    pub pruned: u64,
    pub last_error: Option<StoreError>,
}

#[derive(Default)]
struct Counters {
    batches: AtomicU64,
    views_written: AtomicU64,
    coalesced: AtomicU64,
    dropped: AtomicU64,
    errors: AtomicU64,
    pruned: AtomicU64,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    counters: Counters,
    last_error: Mutex<Option<StoreError>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An open store: its writer thread, and a connection for reads.
pub struct Store {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
    pub(crate) path: PathBuf,
    /// `None` once closed.
    pub(crate) reader: Mutex<Option<Connection>>,
}

/// How a store is opened.
#[derive(Debug, Clone, Copy)]
pub struct StoreOptions {
    pub retention: Retention,
    /// How often the writer copies the live views at most.
    pub interval: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            retention: Retention::default(),
            interval: Duration::from_millis(250),
        }
    }
}

impl Store {
    /// Open the store in `dir` (created if missing).
    pub fn open(dir: &Path, options: StoreOptions) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Io(e.to_string()))?;
        let path = dir.join(FILE_NAME);
        let db = schema::open(&path, false)?;
        let reader = schema::open(&path, true)?;
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            counters: Counters::default(),
            last_error: Mutex::new(None),
        });
        let thread = {
            let shared = shared.clone();
            let path = path.clone();
            std::thread::Builder::new()
                .name("acp-store-writer".into())
                .spawn(move || run(db, &path, &shared, options))
                .map_err(|e| StoreError::Io(e.to_string()))?
        };
        Ok(Store {
            shared,
            thread: Mutex::new(Some(thread)),
            path,
            reader: Mutex::new(Some(reader)),
        })
    }

    /// The store file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn push(&self, op: Op) -> Result<(), StoreError> {
        let mut q = self.shared.lock();
        if q.closing {
            return Err(StoreError::Closed);
        }
        if let Op::Journal { data, .. } = &op {
            if q.journal_bytes + data.len() > MAX_QUEUED_JOURNAL_BYTES {
                self.shared.counters.dropped.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            q.journal_bytes += data.len();
        }
        q.ops.push_back(op);
        drop(q);
        self.shared.wake.notify_one();
        Ok(())
    }

    /// Start a stored session.
    pub fn create(&self, session: NewSession) -> Result<(), StoreError> {
        self.push(Op::Create(session))
    }

    pub fn patch(&self, id: &str, patch: SessionPatch) -> Result<(), StoreError> {
        self.push(Op::Patch(id.into(), patch))
    }

    /// Append a journal record (`data` is JSON).
    pub fn journal(&self, id: &str, kind: JournalKind, data: String) -> Result<(), StoreError> {
        self.push(Op::Journal {
            id: id.into(),
            kind,
            data,
        })
    }

    /// Delete a stored session (when the writer gets to it; `flush` waits).
    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.push(Op::Delete(id.into()))
    }

    /// Copy a live view into session `id` from now on (replacing a feed
    /// it had).
    pub fn record_view(&self, id: &str, feed: Feed) -> Result<(), StoreError> {
        let mut q = self.shared.lock();
        if q.closing {
            return Err(StoreError::Closed);
        }
        let slot = FeedSlot {
            feed,
            written: 0,
            next_copy: Instant::now(),
        };
        q.feeds.insert(id.into(), Arc::new(Mutex::new(slot)));
        drop(q);
        self.shared.wake.notify_one();
        Ok(())
    }

    /// Copy the view of session `id` one last time, then stop.
    pub fn stop_view(&self, id: &str) -> Result<(), StoreError> {
        self.push(Op::StopFeed(id.into()))
    }

    /// Wait until everything handed over so far (and the latest state of
    /// every view) is committed, or the batch failed.
    pub fn flush(&self) -> Result<(), StoreError> {
        let (tx, rx) = mpsc::channel();
        {
            let mut q = self.shared.lock();
            if q.closing {
                return Err(StoreError::Closed);
            }
            q.flushes.push(tx);
        }
        self.shared.wake.notify_one();
        rx.recv().unwrap_or(Err(StoreError::Closed))
    }

    pub fn stats(&self) -> StoreStats {
        let c = &self.shared.counters;
        StoreStats {
            batches: c.batches.load(Ordering::Relaxed),
            views_written: c.views_written.load(Ordering::Relaxed),
            coalesced: c.coalesced.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
            pruned: c.pruned.load(Ordering::Relaxed),
            last_error: self
                .shared
                .last_error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }

    /// Write what is left (one last try) and stop the writer.
    pub fn close(&self) -> Result<(), StoreError> {
        self.shared.lock().closing = true;
        self.shared.wake.notify_one();
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = thread {
            let _ = t.join();
        }
        // The file is closed when this returns (a host may unmount it).
        self.reader.lock().unwrap_or_else(|e| e.into_inner()).take();
        match self.stats().last_error {
            Some(e) if !self.shared.lock().ops.is_empty() => Err(e),
            _ => Ok(()),
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// One batch: what the writer took from the queue.
struct Batch {
    ops: Vec<Op>,
    journal_bytes: usize,
    views: Vec<(String, u64, String, u64)>,
    feeds: Vec<(String, Arc<Mutex<FeedSlot>>)>,
    stopped: Vec<String>,
    flushes: Vec<mpsc::Sender<Result<(), StoreError>>>,
    closing: bool,
}

fn run(mut db: Connection, path: &Path, shared: &Shared, options: StoreOptions) {
    let mut failing = false;
    loop {
        let batch = take(shared, options.interval, failing);
        let Batch {
            ops,
            journal_bytes,
            mut views,
            feeds,
            stopped,
            flushes,
            closing,
        } = batch;
        let force = closing || !flushes.is_empty();
        let stopping: HashSet<&str> = stopped.iter().map(String::as_str).collect();
        for (id, slot) in &feeds {
            copy(
                id,
                slot,
                force || stopping.contains(id.as_str()),
                &mut views,
            );
        }
        let live: Vec<&str> = feeds.iter().map(|(id, _)| id.as_str()).collect();
        let started = Instant::now();
        let result = write(&mut db, &ops, &views, &options.retention, &live)
            .map_err(|e| StoreError::sqlite(path, e));
        // Writing a view (and its search text) costs the machine too: the
        // next copy of each waits that much longer.
        let wrote = started.elapsed() * COPY_COST_FACTOR;
        for (id, ..) in &views {
            if let Some((_, slot)) = feeds.iter().find(|(f, _)| f == id) {
                let mut slot = lock(slot);
                slot.next_copy = slot.next_copy.max(Instant::now() + wrote);
            }
        }
        let c = &shared.counters;
        match &result {
            Ok(pruned) => {
                failing = false;
                c.batches.fetch_add(1, Ordering::Relaxed);
                c.pruned.fetch_add(*pruned as u64, Ordering::Relaxed);
                c.views_written
                    .fetch_add(views.len() as u64, Ordering::Relaxed);
                for (id, revision, _, skipped) in &views {
                    c.coalesced.fetch_add(*skipped, Ordering::Relaxed);
                    if let Some((_, slot)) = feeds.iter().find(|(f, _)| f == id) {
                        lock(slot).written = *revision;
                    }
                }
                let mut q = shared.lock();
                q.journal_bytes -= journal_bytes;
                for id in &stopped {
                    q.feeds.remove(id);
                }
            }
            Err(e) => {
                failing = true;
                c.errors.fetch_add(1, Ordering::Relaxed);
                *shared.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.clone());
                // Nothing is lost: the operations go back first in line,
                // and the views are copied again (their revision in the
                // store did not move).
                let mut q = shared.lock();
                for op in ops.into_iter().rev() {
                    q.ops.push_front(op);
                }
            }
        }
        for f in flushes {
            let _ = f.send(result.clone().map(|_| ()));
        }
        if closing {
            // One last try was made; a store that cannot write now will
            // not on a closing host.
            let mut q = shared.lock();
            q.feeds.clear();
            for f in q.flushes.drain(..) {
                let _ = f.send(Err(StoreError::Closed));
            }
            return;
        }
    }
}

fn lock(slot: &Mutex<FeedSlot>) -> MutexGuard<'_, FeedSlot> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

/// Wait for work (or the interval), then take it all.
fn take(shared: &Shared, interval: Duration, failing: bool) -> Batch {
    let mut q = shared.lock();
    // After a failure, wait the interval before retrying (a full disk does
    // not free itself in microseconds).
    let due = Instant::now() + interval;
    loop {
        let work = !q.ops.is_empty() && !failing;
        if work || !q.flushes.is_empty() || q.closing {
            break;
        }
        let now = Instant::now();
        if now >= due {
            break;
        }
        q = shared
            .wake
            .wait_timeout(q, due - now)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    let ops: Vec<Op> = q.ops.drain(..).collect();
    let mut stopped = Vec::new();
    let mut journal_bytes = 0;
    for op in &ops {
        match op {
            Op::StopFeed(id) => stopped.push(id.clone()),
            Op::Journal { data, .. } => journal_bytes += data.len(),
            _ => {}
        }
    }
    Batch {
        ops,
        journal_bytes,
        views: Vec::new(),
        feeds: q
            .feeds
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        stopped,
        flushes: std::mem::take(&mut q.flushes),
        closing: q.closing,
    }
}

/// Copy the view of `slot` if it is due (or `force`), into `views`.
fn copy(
    id: &str,
    slot: &Mutex<FeedSlot>,
    force: bool,
    views: &mut Vec<(String, u64, String, u64)>,
) {
    let mut slot = lock(slot);
    let now = Instant::now();
    if !force && now < slot.next_copy {
        return;
    }
    let written = slot.written;
    let started = Instant::now();
    let poll = (slot.feed)(written);
    let cost = started.elapsed();
    slot.next_copy = now + cost * COPY_COST_FACTOR;
    if let FeedPoll::Changed { revision, json } = poll {
        // Revisions between the one written and this one were never
        // written on their own.
        let skipped = revision.saturating_sub(written).saturating_sub(1);
        views.push((id.to_string(), revision, json, skipped));
    }
}

/// One transaction: the operations, the views, the bounds. Returns how
/// many sessions the bounds pruned.
fn write(
    db: &mut Connection,
    ops: &[Op],
    views: &[(String, u64, String, u64)],
    retention: &Retention,
    live: &[&str],
) -> rusqlite::Result<usize> {
    if ops.is_empty() && views.is_empty() {
        return Ok(0);
    }
    let now = now_ms();
    let tx = db.transaction()?;
    let mut touched: HashSet<&str> = HashSet::new();
    for op in ops {
        match op {
            Op::Create(s) => {
                tx.execute(
                    "INSERT OR IGNORE INTO sessions (id, agent, agent_session_id, cwd, capabilities,
                       title, created_at, updated_at, forked_from)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)",
                    params![
                        s.id,
                        s.agent,
                        s.agent_session_id,
                        s.cwd,
                        s.capabilities,
                        s.title,
                        now,
                        s.forked_from,
                    ],
                )?;
                if let (Some(view), 1) = (&s.view, tx.changes()) {
                    store_view(&tx, &s.id, view, None, now)?;
                }
                touched.insert(&s.id);
            }
            Op::Patch(id, p) => {
                tx.execute(
                    "UPDATE sessions SET agent = coalesce(?2, agent),
                       agent_session_id = coalesce(?3, agent_session_id),
                       capabilities = coalesce(?4, capabilities), title = coalesce(?5, title),
                       state = coalesce(?6, state), updated_at = ?7 WHERE id = ?1",
                    params![
                        id,
                        p.agent,
                        p.agent_session_id,
                        p.capabilities,
                        p.title,
                        p.state,
                        now
                    ],
                )?;
                if p.title.is_some() {
                    touched.insert(id);
                }
            }
            Op::Journal { id, kind, data } => {
                let n = tx.execute(
                    "UPDATE sessions SET bytes = bytes + ?2, updated_at = ?3 WHERE id = ?1",
                    params![id, data.len() as i64, now],
                )?;
                // A record of a session deleted meanwhile has nowhere to go.
                if n > 0 {
                    tx.execute(
                        "INSERT INTO journal (session_id, at, kind, data) VALUES (?1, ?2, ?3, ?4)",
                        params![id, now, kind.as_str(), data],
                    )?;
                    if *kind == JournalKind::Prompt {
                        touched.insert(id);
                    }
                }
            }
            Op::Delete(id) => {
                delete_session(&tx, id)?;
                touched.remove(id.as_str());
            }
            Op::StopFeed(_) => {}
        }
    }
    for (id, revision, json, _) in views {
        store_view(&tx, id, json, Some(*revision), now)?;
        touched.insert(id);
    }
    for id in touched {
        // A view written just now is indexed from the text in hand, not
        // read back (a big view would be held twice over).
        let written = views.iter().rev().find(|v| v.0 == id).map(|v| v.2.as_str());
        reindex(&tx, id, written)?;
    }
    let pruned = retention.prune(&tx, now, live)?;
    tx.commit()?;
    Ok(pruned)
}

/// Store `json` as the view of session `id` (if it is still there), its
/// bytes counted; with `revision`, as the live view's copy at that revision.
fn store_view(
    tx: &Transaction<'_>,
    id: &str,
    json: &str,
    revision: Option<u64>,
    now: i64,
) -> rusqlite::Result<()> {
    let n: Option<i64> = tx
        .query_row("SELECT n FROM sessions WHERE id = ?1", [id], |r| r.get(0))
        .optional()?;
    // A session deleted meanwhile has nowhere to keep it.
    let Some(n) = n else { return Ok(()) };
    let old = views::put(tx, n, json)?;
    tx.execute(
        "UPDATE sessions SET bytes = bytes - ?2 + ?3,
           view_revision = coalesce(?4, view_revision), updated_at = ?5 WHERE n = ?1",
        params![n, old, json.len() as i64, revision.map(|r| r as i64), now],
    )?;
    Ok(())
}

/// Rebuild the search text of session `id`; `written`: its view, when
/// this transaction just wrote it.
fn reindex(tx: &Transaction<'_>, id: &str, written: Option<&str>) -> rusqlite::Result<()> {
    let row = tx.query_row("SELECT n, title FROM sessions WHERE id = ?1", [id], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?))
    });
    let (n, title) = match row {
        Ok(row) => row,
        Err(rusqlite::Error::QueryReturnedNoRows) => return Ok(()),
        Err(e) => return Err(e),
    };
    let stored = match written {
        Some(_) => None,
        None => views::get(tx, n)?,
    };
    let mut text = String::new();
    {
        let mut stmt = tx.prepare_cached(
            "SELECT data FROM journal WHERE session_id = ?1 AND kind = 'prompt' ORDER BY seq",
        )?;
        let rows = stmt.query_map([id], |r| r.get::<_, String>(0))?;
        for data in rows {
            transcript::push_prompt(&mut text, &data?);
        }
    }
    if let Some(view) = written.or(stored.as_deref()) {
        transcript::push_view(&mut text, view);
    }
    // A title is most often the first prompt: indexed once.
    if let Some(title) = title.filter(|t| !text.contains(t.as_str())) {
        transcript::push(&mut text, &title);
    }
    tx.execute("DELETE FROM transcript WHERE rowid = ?1", [n])?;
    tx.execute(
        "INSERT INTO transcript (rowid, text) VALUES (?1, ?2)",
        params![n, text],
    )?;
    Ok(())
}
