//! The stdin side: one task owns the pipe and writes whole lines, so two
//! messages can never interleave. Writes queued while the task is busy are
//! coalesced into one buffered write.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::process::ChildStdin;
use tokio::sync::mpsc;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OutboxError {
    #[error("the agent's stdin is closed")]
    Closed,
    #[error("the agent is not reading its stdin: {queued} bytes already queued (limit {limit})")]
    Full { queued: usize, limit: usize },
}

/// Handle for queueing lines to the agent. Bounded by bytes, not messages:
/// an agent that stops reading cannot make the host buffer without limit.
pub struct Outbox {
    tx: Mutex<Option<mpsc::UnboundedSender<Vec<u8>>>>,
    queued: Arc<AtomicUsize>,
    limit: usize,
}

impl Outbox {
    /// Returns the handle and the receiving end for [`run_writer`].
    pub fn new(limit: usize) -> (Self, WriterQueue) {
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let outbox = Self {
            tx: Mutex::new(Some(tx)),
            queued: queued.clone(),
            limit,
        };
        (outbox, WriterQueue { rx, queued })
    }

    /// Queue one line; `line` must already end with `\n`.
    pub fn send(&self, line: Vec<u8>) -> Result<(), OutboxError> {
        let guard = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let tx = guard.as_ref().ok_or(OutboxError::Closed)?;
        let queued = self.queued.load(Ordering::Relaxed);
        if queued > 0 && queued + line.len() > self.limit {
            return Err(OutboxError::Full {
                queued,
                limit: self.limit,
            });
        }
        self.queued.fetch_add(line.len(), Ordering::Relaxed);
        let len = line.len();
        tx.send(line).map_err(|_| {
            self.queued.fetch_sub(len, Ordering::Relaxed);
            OutboxError::Closed
        })
    }

    /// Stop accepting lines; the writer flushes what is queued and then
    /// closes the agent's stdin (EOF).
    pub fn close(&self) {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    pub fn is_closed(&self) -> bool {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).is_none()
    }
}

pub struct WriterQueue {
    rx: mpsc::UnboundedReceiver<Vec<u8>>,
    queued: Arc<AtomicUsize>,
}

/// Write queued lines until the outbox is closed or the pipe breaks.
pub async fn run_writer(stdin: ChildStdin, mut queue: WriterQueue) {
    let mut out = BufWriter::with_capacity(64 * 1024, stdin);
    while let Some(first) = queue.rx.recv().await {
        let mut written = first.len();
        if out.write_all(&first).await.is_err() {
            break;
        }
        // Coalesce whatever else is already queued into the same flush.
        while let Ok(next) = queue.rx.try_recv() {
            written += next.len();
            if out.write_all(&next).await.is_err() {
                queue.queued.fetch_sub(written, Ordering::Relaxed);
                return;
            }
        }
        let flushed = out.flush().await;
        queue.queued.fetch_sub(written, Ordering::Relaxed);
        if flushed.is_err() {
            break;
        }
    }
    let _ = out.shutdown().await;
}
