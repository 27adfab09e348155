//! Unix: the agent's stdout read on the host's own thread, from its event
//! loop, while the agent is quiet, and by the core's reader task while it
//! floods, before the host polls it, and at the agent's exit. A reply read
//! on the host's thread wakes one thread (the host's), not the reader's and
//! then the host's; a flood read by the core is framed, folded and batched
//! off the host's thread.
//!
//! One of the two owns the fd at a time ([`Owner`]), and the framer's state
//! (a partial line) is here, under one lock, so it moves with the fd. The
//! host's reads happen under that lock too ([`HostReader::host_read`]), so
//! the core takes the fd between two of them, at once, whenever it must:
//! a full read or items that cannot go to the host directly (a flood), the
//! agent's exit, the host no longer polling. The core gives it back after a
//! short read with nothing queued before it; the host polls again after the
//! next batch it is delivered (that read's items are in it).
//!
//! What the host reads is handled as the reader task handles it, and what
//! it makes is handed back as a batch to deliver at once (within the batch
//! limits and the batches the host may hold) when nothing queued before it
//! is still on its way to the host.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::{oneshot, Notify};

use super::delivery::{Batch, BatchLimits, InTransit};
use super::event::Event;
use super::reader::{on_frame, READ_BYTES, SLICE_BYTES};
use super::shared::Shared;
use super::text_run::TextRun;
use super::worker_slice;
use crate::transport::LineFramer;

/// What one feed gives the host.
pub enum Fed {
    /// Deliver this now (the host's own thread, no queue in between), and
    /// acknowledge it as any batch.
    Batch(Batch),
    /// Nothing to deliver now: handled into nothing, or queued behind
    /// earlier items (they arrive through the sink).
    Nothing,
    /// Stop reading: the core reads from now on (a flood, or the items
    /// could not go to the host directly). Read again once
    /// [`HostReader::on_host`] says so, after a delivered batch.
    Full,
}

/// Who reads stdout now.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Owner {
    Host,
    Core,
}

/// What the host reads at most at once: a read this full means a flood.
const HOST_READ_BYTES: usize = 64 * 1024;

/// The host's end of stdout: its copy of the fd (until it stops polling
/// it), and the reader it feeds.
pub(super) struct HostSide {
    pub fd: Option<OwnedFd>,
    pub reader: HostReader,
}

pub(super) struct HostReader {
    framer: LineFramer,
    run: TextRun,
    /// Items made and not yet handed over: the queue had no room for them.
    ready: Vec<Event>,
    /// Tells the supervisor that stdout has ended.
    ended: Option<oneshot::Sender<()>>,
    limits: BatchLimits,
    owner: Owner,
    /// The host polls the fd (it may be given it).
    host_polls: bool,
    /// The host's read buffer.
    buf: Vec<u8>,
    /// Wakes the core's reader task when it is given the fd (or stdout ended).
    pub to_core: Arc<Notify>,
}

impl HostReader {
    pub fn new(max_line: usize, limits: BatchLimits, ended: oneshot::Sender<()>) -> Self {
        Self {
            framer: LineFramer::new(max_line),
            run: TextRun::new(limits.max_messages),
            ready: Vec::new(),
            ended: Some(ended),
            limits,
            owner: Owner::Core,
            host_polls: false,
            buf: Vec::new(),
            to_core: Arc::new(Notify::new()),
        }
    }

    pub fn on_host(&self) -> bool {
        self.owner == Owner::Host && self.ended.is_some()
    }

    /// One read of `fd` on the host's thread, while the host has it (the
    /// read and its handling under the caller's lock: the core takes the fd
    /// between two reads, never during one). [`Fed::Full`]: stop polling.
    pub fn host_read(&mut self, fd: &OwnedFd, shared: &Arc<Shared>) -> Fed {
        if !self.on_host() {
            return Fed::Full;
        }
        // A host that opened a session view asked for the fold off its
        // thread: the core reads while one is open.
        if shared.views.any() {
            return self.give_to_core();
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(HOST_READ_BYTES, 0);
        let fed = match read_fd(fd, &mut buf) {
            Ok(0) => self.finish(shared, None),
            Ok(n) => self.feed(shared, &buf[..n], n == buf.len()),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) =>
            {
                Fed::Nothing
            }
            Err(e) => {
                let error = shared.read_error("stdout", &e);
                self.finish(shared, Some(error))
            }
        };
        self.buf = buf;
        fed
    }

    /// The agent has exited (the core reads what it left: the host's thread
    /// may be busy), or the host stopped polling.
    pub fn reclaim(&mut self) {
        if self.on_host() {
            self.give_to_core();
        }
    }

    /// Whether the host polls the fd: the core gives it the fd only then.
    pub fn set_host_polls(&mut self, polls: bool) {
        self.host_polls = polls;
        if !polls {
            self.reclaim();
        }
    }

    pub fn has_ended(&self) -> bool {
        self.ended.is_none()
    }

    /// The core reads from now on: the host has stopped (it does before
    /// its read callback returns), so no byte is read twice or out of order.
    fn give_to_core(&mut self) -> Fed {
        self.owner = Owner::Core;
        self.to_core.notify_one();
        Fed::Full
    }

    /// The core's turn: what the host left, to queue before its first read.
    /// None while the host reads.
    pub fn core_takes(&mut self) -> Option<Vec<Event>> {
        (self.owner == Owner::Core).then(|| std::mem::take(&mut self.ready))
    }

    /// The core read `chunk`: its items, to queue in order. `last` (a short
    /// read, its last slice): if nothing queued still waits and the items
    /// fit the queue now, they are queued here and the host reads next.
    pub fn core_feed(&mut self, shared: &Arc<Shared>, chunk: &[u8], last: bool) -> Vec<Event> {
        self.frame(shared, chunk);
        // Only with items to deliver: the batch that carries them is what
        // tells the host to read again.
        if last
            && self.host_polls
            && !self.ready.is_empty()
            && !shared.views.any()
            && shared.queue.idle()
            && shared.queue.try_queue_all(&mut self.ready)
        {
            self.owner = Owner::Host;
        }
        std::mem::take(&mut self.ready)
    }

    /// The core read stdout's end (or a read error): the last items.
    pub fn core_finish(&mut self, shared: &Arc<Shared>, error: Option<Event>) -> Vec<Event> {
        self.frame_end(shared, error);
        self.say_ended();
        std::mem::take(&mut self.ready)
    }

    /// Frame `chunk` into `ready`.
    fn frame(&mut self, shared: &Arc<Shared>, chunk: &[u8]) {
        let at = Instant::now();
        let Self {
            framer, run, ready, ..
        } = self;
        framer.push(chunk, |frame| on_frame(shared, frame, at, run, ready));
        run.flush(shared, ready);
    }

    /// Frame what is left at stdout's end into `ready`, then `error`.
    fn frame_end(&mut self, shared: &Arc<Shared>, error: Option<Event>) {
        let at = Instant::now();
        let Self {
            framer, run, ready, ..
        } = self;
        framer.finish(|frame| on_frame(shared, frame, at, run, ready));
        run.flush(shared, ready);
        ready.extend(error);
    }

    fn say_ended(&mut self) {
        if let Some(ended) = self.ended.take() {
            let _ = ended.send(());
        }
    }

    /// Handle one chunk of stdout (or none: retry what waits).
    /// `full`: the read filled the host's buffer (the agent floods).
    fn feed(&mut self, shared: &Arc<Shared>, chunk: &[u8], full: bool) -> Fed {
        if self.owner == Owner::Core || self.ended.is_none() {
            return Fed::Full;
        }
        if !chunk.is_empty() {
            self.frame(shared, chunk);
        }
        if full {
            return self.give_to_core();
        }
        self.hand_over(shared)
    }

    /// stdout ended (EOF or a read error).
    fn finish(&mut self, shared: &Arc<Shared>, error: Option<Event>) -> Fed {
        self.frame_end(shared, error);
        let fed = self.hand_over(shared);
        self.say_ended();
        // The core's reader task ends too (queueing what did not fit).
        self.to_core.notify_one();
        fed
    }

    fn hand_over(&mut self, shared: &Arc<Shared>) -> Fed {
        if self.ready.is_empty() {
            return Fed::Nothing;
        }
        // Direct only with nothing before it on the way, and within the
        // batches the host may hold (its ack gives the slot back).
        let mut batch = None;
        if shared.queue.idle() {
            let n = self.fitting();
            // What does not fit the batch is queued behind it: only if
            // there is room for it, else it would wait with nobody to say so.
            let rest: usize = self.ready[n..]
                .iter()
                .map(|ev| ev.queued_bytes() as usize)
                .sum();
            if shared.queue.has_room(rest) && shared.queue.try_take_slot() {
                batch = Some(encode(self.ready.drain(..n)));
            }
        }
        match batch {
            Some(batch) if self.ready.is_empty() => Fed::Batch(batch),
            Some(batch) => {
                // The rest has room (checked above): it goes behind.
                shared.queue.try_queue_all(&mut self.ready);
                Fed::Batch(batch)
            }
            // Something before these still waits, or the host holds all
            // the batches it may: the core takes over, these first.
            None => self.give_to_core(),
        }
    }

    /// How many of the ready items (at least one) make a batch within the
    /// batch limits.
    fn fitting(&self) -> usize {
        let (mut n, mut items, mut bytes) = (0, 0, 0);
        for ev in &self.ready {
            if n > 0
                && (items + ev.items() > self.limits.max_messages || bytes >= self.limits.max_bytes)
            {
                break;
            }
            n += 1;
            items += ev.items();
            bytes += ev.queued_bytes() as usize;
        }
        n
    }
}

/// The host's end of stdout, shared with the core's reader task.
pub(super) type HostStdout = Arc<Mutex<Option<HostSide>>>;

/// See [`HostReader::reclaim`].
pub(super) fn reclaim(host: &HostStdout) {
    if let Some(side) = lock(host).as_mut() {
        side.reader.reclaim();
    }
}

fn lock(host: &HostStdout) -> MutexGuard<'_, Option<HostSide>> {
    host.lock().unwrap_or_else(|e| e.into_inner())
}

/// The core's turns at reading stdout: it waits until the host gives it
/// the fd, queues what the host left, then reads (as the reader task
/// does, a worker slice at a time) until it gives the fd back or stdout
/// ends.
pub(super) async fn run_core_reader(fd: OwnedFd, host: HostStdout, shared: Arc<Shared>) {
    let Some(to_core) = lock(&host).as_ref().map(|s| Arc::clone(&s.reader.to_core)) else {
        return;
    };
    let mut fd = Some(fd);
    let mut buf = vec![0u8; SLICE_BYTES];
    let mut want = SLICE_BYTES;
    loop {
        // Wait for the core's turn (a stored notification is not lost).
        let left = loop {
            let (left, ended) = match lock(&host).as_mut() {
                Some(side) => (side.reader.core_takes(), side.reader.has_ended()),
                None => return,
            };
            if let Some(left) = left {
                break (left, ended);
            }
            if ended {
                return;
            }
            to_core.notified().await;
        };
        let (mut left, ended) = left;
        if !shared.queue.queue_all(&mut left).await || ended {
            return;
        }
        // Registered with the runtime only for the core's turn: else each
        // line the agent writes would wake this thread as well as the host's.
        let Some(owned) = fd.take() else { return };
        // SAFETY: an `OwnedFd` is a valid open fd, the same one, until dropped.
        let afd = match unsafe { AsyncFd::register_with_interest(owned, Interest::READABLE) } {
            Ok(afd) => afd,
            Err(e) => {
                let error = shared.read_error("stdout", &e.into_parts().1);
                let mut last = match lock(&host).as_mut() {
                    Some(side) => side.reader.core_finish(&shared, Some(error)),
                    None => return,
                };
                shared.queue.queue_all(&mut last).await;
                return;
            }
        };
        loop {
            let read = loop {
                let mut guard = match afd.readable().await {
                    Ok(guard) => guard,
                    Err(e) => break Err(e),
                };
                match guard.try_io(|fd| read_fd(fd.get_ref(), &mut buf[..want])) {
                    Ok(read) => break read,
                    Err(_would_block) => continue,
                }
            };
            let (n, error) = match read {
                Ok(n) => (n, None),
                Err(e) => (0, Some(shared.read_error("stdout", &e))),
            };
            if n == 0 {
                let mut last = match lock(&host).as_mut() {
                    Some(side) => side.reader.core_finish(&shared, error),
                    None => return,
                };
                shared.queue.queue_all(&mut last).await;
                return;
            }
            let full = n == want;
            let slices = n.div_ceil(SLICE_BYTES);
            let mut handed_back = false;
            for (i, slice) in buf[..n].chunks(SLICE_BYTES).enumerate() {
                let mut ready = match lock(&host).as_mut() {
                    Some(side) => {
                        let ready = side
                            .reader
                            .core_feed(&shared, slice, !full && i + 1 == slices);
                        handed_back = side.reader.on_host();
                        ready
                    }
                    None => return,
                };
                if !shared.queue.queue_all(&mut ready).await {
                    return;
                }
                worker_slice::yield_point().await;
            }
            if handed_back {
                fd = Some(afd.into_inner());
                break;
            }
            want = if full {
                (want * 2).min(READ_BYTES)
            } else {
                SLICE_BYTES
            };
            if buf.len() < want {
                buf.resize(want, 0);
            }
        }
    }
}

fn read_fd(fd: &OwnedFd, buf: &mut [u8]) -> std::io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes; the fd is open (owned).
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// The items as one batch, as the delivery task writes them.
fn encode(events: impl Iterator<Item = Event>) -> Batch {
    let mut text = String::with_capacity(256);
    let mut ascii = true;
    text.push('[');
    for (i, ev) in events.enumerate() {
        if i > 0 {
            text.push(',');
        }
        ascii &= ev.is_ascii();
        ev.encode_into(&mut text);
    }
    text.push(']');
    Batch {
        text,
        ascii,
        in_transit: InTransit::none(),
    }
}
