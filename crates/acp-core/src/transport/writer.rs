//! The stdin side. Lines never interleave: every write to the pipe happens
//! under one lock. When nothing is queued, the caller's thread writes the
//! line itself (non-blocking), which saves a thread hop on every request
//! and reply; whatever the pipe does not take at once is queued for the
//! writer task, which coalesces queued lines into large writes.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{ready, Poll};
use std::time::Duration;

use tokio::io::AsyncWrite;
use tokio::process::ChildStdin;
use tokio::sync::mpsc;

/// Lines the writer task joins into one write, at most (bytes).
const COALESCE_BYTES: usize = 256 * 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OutboxError {
    #[error("the agent's stdin is closed")]
    Closed,
    #[error("the agent is not reading its stdin: {queued} bytes already queued (limit {limit})")]
    Full { queued: usize, limit: usize },
}

/// The pipe, shared by direct writes and the writer task. `None` once the
/// writer has closed it: the fd is gone and must not be written.
type Pipe = Arc<Mutex<Option<ChildStdin>>>;

fn lock(pipe: &Pipe) -> MutexGuard<'_, Option<ChildStdin>> {
    pipe.lock().unwrap_or_else(|e| e.into_inner())
}

/// Wakes the senders waiting for room ([`Outbox::send_waiting`]) when the
/// writer has written some, or the outbox closed.
#[derive(Default)]
struct Room {
    /// Bumped on each write and on close: a waiter that read it before its
    /// offer sleeps only while nothing has happened since.
    generation: Mutex<u64>,
    changed: Condvar,
}

impl Room {
    fn notify(&self) {
        let mut generation = self.generation.lock().unwrap_or_else(|e| e.into_inner());
        *generation = generation.wrapping_add(1);
        self.changed.notify_all();
    }

    fn generation(&self) -> u64 {
        *self.generation.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Until something happened after `seen` was read. The timeout is a
    /// backstop only.
    fn wait(&self, seen: u64) {
        let held = self.generation.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self
            .changed
            .wait_timeout_while(held, Duration::from_secs(1), |now| *now == seen);
    }
}

/// Handle for sending lines to the agent. Bounded by bytes, not messages:
/// an agent that stops reading cannot make the host buffer without limit.
pub struct Outbox {
    tx: Mutex<Option<mpsc::UnboundedSender<Rest>>>,
    /// Bytes handed to the writer task and not yet written.
    queued: Arc<AtomicUsize>,
    limit: usize,
    pipe: Pipe,
    room: Arc<Room>,
}

impl Outbox {
    /// Returns the handle and the writer task's end for [`run_writer`].
    pub fn new(stdin: ChildStdin, limit: usize) -> (Self, WriterQueue) {
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let pipe = Arc::new(Mutex::new(Some(stdin)));
        let room = Arc::new(Room::default());
        let outbox = Self {
            tx: Mutex::new(Some(tx)),
            queued: queued.clone(),
            limit,
            pipe: pipe.clone(),
            room: room.clone(),
        };
        (
            outbox,
            WriterQueue {
                rx,
                queued,
                pipe,
                room,
            },
        )
    }

    /// Send one line; `line` must already end with `\n`.
    pub fn send(&self, line: Vec<u8>) -> Result<(), OutboxError> {
        self.offer(line).map_err(|(e, _)| e)
    }

    /// Send one line, waiting while the queue is full (backpressure for
    /// work with no caller to refuse, e.g. a built-in's reply) until there
    /// is room or the outbox is closed or its writer gone. Blocks: call it
    /// from a blocking thread only. Checking for room and sending are one
    /// step, so two waiters cannot both see room and one of them lose its
    /// line.
    pub fn send_waiting(&self, mut line: Vec<u8>) -> Result<(), OutboxError> {
        loop {
            // Read before the offer: a write or close after it wakes us.
            let seen = self.room.generation();
            match self.offer(line) {
                Err((OutboxError::Full { .. }, back)) => {
                    line = back;
                    self.room.wait(seen);
                }
                other => return other.map_err(|(e, _)| e),
            }
        }
    }

    /// Send one line, or give it back with the reason it was not taken.
    fn offer(&self, line: Vec<u8>) -> Result<(), (OutboxError, Vec<u8>)> {
        // Held for the whole send: senders are serialised, so the check
        // that nothing is queued stays true while we write.
        let guard = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        // A writer that stopped (the pipe broke) will never drain the
        // queue: that is closed, not full.
        let Some(tx) = guard.as_ref().filter(|tx| !tx.is_closed()) else {
            return Err((OutboxError::Closed, line));
        };
        // Read under the pipe lock, which the writer holds from each write
        // until it has uncounted it: a sender that heard the agent answer
        // a line never still finds that line counted.
        let mut pipe = lock(&self.pipe);
        let queued = self.queued.load(Ordering::Acquire);
        if queued > 0 && queued + line.len() > self.limit {
            let full = OutboxError::Full {
                queued,
                limit: self.limit,
            };
            return Err((full, line));
        }
        let written = if queued == 0 {
            pipe.as_mut().map_or(0, |stdin| write_now(stdin, &line))
        } else {
            0
        };
        if written == line.len() {
            return Ok(());
        }
        // Not moved: a big line's rest is neither copied nor shifted.
        let rest = Rest {
            line,
            from: written,
        };
        let len = rest.bytes().len();
        // Counted before the pipe lock is released, so no direct write can
        // slip in ahead of the rest of this line.
        self.queued.fetch_add(len, Ordering::AcqRel);
        drop(pipe);
        tx.send(rest).map_err(|e| {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            (OutboxError::Closed, e.0.line)
        })
    }

    /// Stop accepting lines; the writer writes what is queued and then
    /// closes the agent's stdin (EOF).
    pub fn close(&self) {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.room.notify();
    }

    pub fn is_closed(&self) -> bool {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).is_none()
    }
}

/// One non-blocking write; returns how much the pipe took (0 on any error:
/// the writer task retries and sees the error itself).
#[cfg(unix)]
fn write_now(stdin: &ChildStdin, buf: &[u8]) -> usize {
    use std::os::fd::AsRawFd;
    // SAFETY: the fd stays open while we hold the pipe lock (the writer
    // closes it only under that lock); tokio set it non-blocking.
    let n = unsafe { libc::write(stdin.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
    usize::try_from(n).unwrap_or(0)
}

#[cfg(not(unix))]
fn write_now(_stdin: &ChildStdin, _buf: &[u8]) -> usize {
    0
}

/// What the pipe did not take at once of a line: `line[from..]`.
struct Rest {
    line: Vec<u8>,
    from: usize,
}

impl Rest {
    fn bytes(&self) -> &[u8] {
        &self.line[self.from..]
    }
}

pub struct WriterQueue {
    rx: mpsc::UnboundedReceiver<Rest>,
    queued: Arc<AtomicUsize>,
    pipe: Pipe,
    room: Arc<Room>,
}

/// Write queued lines until the outbox is closed or the pipe breaks, then
/// close the agent's stdin.
pub async fn run_writer(mut queue: WriterQueue) {
    let mut buf = Vec::with_capacity(64 * 1024);
    // A big line met while coalescing: written next, on its own.
    let mut held: Option<Rest> = None;
    loop {
        let first = match held.take() {
            Some(rest) => rest,
            None => match queue.rx.recv().await {
                Some(rest) => rest,
                None => break,
            },
        };
        // A big line (a built-in reply of megabytes) is written from its
        // own buffer: copying it would double its memory and cost the
        // shared worker a long memcpy.
        let out: &[u8] = if first.bytes().len() >= COALESCE_BYTES {
            first.bytes()
        } else {
            buf.clear();
            buf.extend_from_slice(first.bytes());
            // Coalesce whatever small lines are already queued.
            while buf.len() < COALESCE_BYTES {
                match queue.rx.try_recv() {
                    Ok(next) if buf.len() + next.bytes().len() <= COALESCE_BYTES => {
                        buf.extend_from_slice(next.bytes())
                    }
                    Ok(next) => {
                        held = Some(next);
                        break;
                    }
                    Err(_) => break,
                }
            }
            &buf
        };
        let unwritten = write_all(&queue, out).await;
        if unwritten > 0 {
            let held = held.take().map_or(0, |rest| rest.bytes().len());
            queue.queued.fetch_sub(unwritten + held, Ordering::AcqRel);
            break;
        }
    }
    lock(&queue.pipe).take();
    // Closed for senders (`is_closed` on their side): waiters give up.
    queue.rx.close();
    queue.room.notify();
}

/// Write all of `buf`, taking the pipe lock only around each attempt, and
/// uncount each write's bytes before releasing it. Returns how many bytes
/// were not written (still counted): 0 unless the pipe broke.
async fn write_all(queue: &WriterQueue, mut buf: &[u8]) -> usize {
    while !buf.is_empty() {
        let n = poll_fn(|cx| {
            let mut pipe = lock(&queue.pipe);
            let Some(stdin) = pipe.as_mut() else {
                return Poll::Ready(0);
            };
            let n = ready!(Pin::new(stdin).poll_write(cx, buf)).unwrap_or(0);
            queue.queued.fetch_sub(n, Ordering::AcqRel);
            Poll::Ready(n)
        })
        .await;
        if n == 0 {
            return buf.len();
        }
        buf = &buf[n..];
        queue.room.notify();
        if !buf.is_empty() {
            // One pipe-full per worker slice: an agent that reads fast
            // would otherwise keep the shared worker for all of tokio's
            // cooperative budget while a huge reply goes out.
            tokio::task::yield_now().await;
        }
    }
    0
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::process::Stdio;
    use std::sync::mpsc as std_mpsc;
    use std::time::Duration;
    use tokio::process::{Child, Command};

    fn spawn(rt: &tokio::runtime::Runtime, script: &str) -> (Child, ChildStdin) {
        let _entered = rt.enter();
        let mut child = Command::new("sh")
            .args(["-c", script])
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn sh");
        let stdin = child.stdin.take().unwrap();
        (child, stdin)
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    /// Lines far larger than the queue, sent by racing waiters, all arrive
    /// whole and unmixed.
    #[test]
    fn racing_waiters_lose_no_line() {
        let rt = runtime();
        let dir = std::env::temp_dir().join(format!("acp-writer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("wire");
        let (mut child, stdin) = spawn(&rt, &format!("cat > '{}'", out.display()));
        let (outbox, queue) = Outbox::new(stdin, 64 * 1024);
        let writer = rt.spawn(run_writer(queue));
        let outbox = Arc::new(outbox);
        let threads: Vec<_> = (0..16u8)
            .map(|i| {
                let outbox = Arc::clone(&outbox);
                std::thread::spawn(move || {
                    let mut line = vec![b'a' + i; 512 * 1024];
                    line.push(b'\n');
                    outbox.send_waiting(line)
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), Ok(()));
        }
        outbox.close();
        rt.block_on(async {
            writer.await.unwrap();
            child.wait().await.unwrap();
        });
        let wire = std::fs::read(&out).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let mut seen: Vec<u8> = wire
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                assert_eq!(l.len(), 512 * 1024);
                assert!(l.iter().all(|&b| b == l[0]), "lines mixed");
                l[0]
            })
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..16u8).map(|i| b'a' + i).collect::<Vec<_>>());
    }

    /// A waiter stops waiting when the pipe breaks: a dead writer never
    /// drains the queue, so "full" would be forever.
    #[test]
    fn a_waiter_is_released_when_the_reader_dies() {
        let rt = runtime();
        // Reads nothing; killed below while a line waits for room.
        let (mut child, stdin) = spawn(&rt, "exec sleep 60");
        let (outbox, queue) = Outbox::new(stdin, 4 << 20);
        rt.spawn(run_writer(queue));
        let outbox = Arc::new(outbox);
        // The first fills the pipe; the rest wait in the queue (and stay
        // there, counted, when the writer stops at the first).
        for _ in 0..3 {
            assert_eq!(outbox.send(vec![b'x'; 1 << 20]), Ok(()));
        }
        let (done_tx, done_rx) = std_mpsc::channel();
        let waiter = Arc::clone(&outbox);
        std::thread::spawn(move || {
            let _ = done_tx.send(waiter.send_waiting(vec![b'y'; 3 << 20]));
        });
        assert!(
            done_rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "the queue is full: the waiter must wait"
        );
        rt.block_on(async {
            child.kill().await.unwrap();
        });
        let result = done_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the waiter still waits after its reader died");
        assert_eq!(result, Err(OutboxError::Closed));
    }

    /// Threads that keep the cores busy (so that a thread is likely to be
    /// preempted anywhere) until dropped, a failed assertion included.
    struct Hogs {
        stop: Arc<std::sync::atomic::AtomicBool>,
        threads: Vec<std::thread::JoinHandle<()>>,
    }

    impl Hogs {
        fn spin(n: usize) -> Self {
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let threads = (0..n)
                .map(|_| {
                    let stop = Arc::clone(&stop);
                    std::thread::spawn(move || {
                        while !stop.load(Ordering::Relaxed) {
                            std::hint::spin_loop();
                        }
                    })
                })
                .collect();
            Self { stop, threads }
        }
    }

    impl Drop for Hogs {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            for t in self.threads.drain(..) {
                let _ = t.join();
            }
        }
    }

    /// The agent of [`a_line_the_agent_answered_is_not_counted`]: this
    /// test binary run again, reading each whole line and answering it at
    /// once (a shell would fork between lines).
    #[test]
    #[ignore = "run as a child by a_line_the_agent_answered_is_not_counted"]
    fn answering_agent() {
        use std::io::{Read, Write};
        let Ok(line) = std::env::var("ACP_WRITER_TEST_LINE") else {
            return;
        };
        let mut buf = vec![0; line.parse().unwrap()];
        // stderr: the test harness writes its own lines to stdout.
        let mut out = std::io::stderr().lock();
        while std::io::stdin().lock().read_exact(&mut buf).is_ok() {
            out.write_all(b"ok\n").unwrap();
            out.flush().unwrap();
        }
    }

    /// A line the agent has read is no longer counted: once the agent
    /// answers a line larger than the whole queue, the next such line is
    /// taken, not refused as "full". A writer preempted between a write
    /// and its uncounting (hog threads make it likely) used to refuse it.
    #[test]
    fn a_line_the_agent_answered_is_not_counted() {
        use std::io::BufRead;
        let rt = runtime();
        let _entered = rt.enter();
        let limit = 256 * 1024;
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "transport::writer::tests::answering_agent",
                "--ignored",
                "--nocapture",
                "--quiet",
            ])
            .env("ACP_WRITER_TEST_LINE", (2 * limit + 1).to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the answering agent");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stderr.take().unwrap().into_owned_fd().unwrap();
        let mut answers = std::io::BufReader::new(std::fs::File::from(stdout));
        let (outbox, queue) = Outbox::new(stdin, limit);
        rt.spawn(run_writer(queue));
        let hogs = Hogs::spin(3);
        for round in 0..1000 {
            let mut line = vec![b'a'; 2 * limit];
            line.push(b'\n');
            assert_eq!(outbox.send(line), Ok(()), "round {round}");
            let mut answer = String::new();
            answers.read_line(&mut answer).unwrap();
            assert_eq!(answer, "ok\n", "round {round}");
        }
        drop(hogs);
        outbox.close();
        rt.block_on(async {
            child.wait().await.unwrap();
        });
    }
}
