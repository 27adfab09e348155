//! Whether the agent runs, is being stopped or is gone, and the one handle
//! that signals its process tree. The host's calls ask for a stop; the
//! supervisor runs it and writes the exit report.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use tokio::sync::Notify;

use super::exit::ExitInfo;
use crate::transport::TreeControl;

pub(super) struct Lifecycle {
    pub pid: u32,
    /// Stops the agent's process tree; the only way we signal it.
    pub tree: TreeControl,
    /// Set by `close()`/`kill()` and once the agent is gone: no new calls.
    closing: AtomicBool,
    /// Why the stop was requested, for the exit report.
    stop_reason: Mutex<Option<&'static str>>,
    stop_requested: Notify,
    /// Set once the agent is gone and every pending call was settled.
    exit: OnceLock<ExitInfo>,
}

impl Lifecycle {
    pub fn new(pid: u32, tree: TreeControl) -> Self {
        Self {
            pid,
            tree,
            closing: AtomicBool::new(false),
            stop_reason: Mutex::new(None),
            stop_requested: Notify::new(),
            exit: OnceLock::new(),
        }
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// Ask the supervisor to run the stop sequence.
    pub fn request_stop(&self, reason: &'static str) {
        self.note_stop_reason(reason);
        self.stop_requested.notify_one();
    }

    /// SIGKILL the tree now, then wake the supervisor; the reason is
    /// recorded first, so the exit is reported as "killed" however fast
    /// the process dies.
    pub fn kill(&self) {
        self.note_stop_reason("killed");
        self.tree.kill();
        self.stop_requested.notify_one();
    }

    /// Record why we stop (the first reason wins) without waking the
    /// supervisor yet.
    pub fn note_stop_reason(&self, reason: &'static str) {
        self.closing.store(true, Ordering::SeqCst);
        self.stop_reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(reason);
    }

    /// Resolves once a stop was requested (also one requested earlier).
    pub async fn stop_requested(&self) {
        self.stop_requested.notified().await;
    }

    /// The reason given first; "closed" if none was.
    pub fn stop_reason(&self) -> &'static str {
        self.stop_reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or("closed")
    }

    /// No new calls from now on (the agent is gone or going).
    pub fn refuse_calls(&self) {
        self.closing.store(true, Ordering::SeqCst);
    }

    /// The agent is gone and everything pending settled: the report.
    pub fn set_exit(&self, info: ExitInfo) {
        let _ = self.exit.set(info);
    }

    pub fn exit(&self) -> Option<&ExitInfo> {
        self.exit.get()
    }
}
