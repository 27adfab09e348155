//! Watches the agent until it is gone, runs the stop sequence when asked,
//! and then settles everything that was still waiting.

use std::process::ExitStatus;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::timeout;

use super::event::Event;
use super::exit::ExitInfo;
use super::requests::Timeout;
use super::shared::Shared;
use crate::rpc::Deadlines;
use crate::transport::ProcessTree;

/// After the process exits, how long stdout may take to drain.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(100);
/// After the tree is released, how long its cleanup may hold the exit
/// report (the reaper kills what is left, a bounded number of rounds).
const TREE_CLEANUP: Duration = Duration::from_secs(5);
/// After stdout closes, how long to wait for the exit status.
const EXIT_AFTER_EOF: Duration = Duration::from_millis(50);

pub(super) struct Supervised {
    pub tree: ProcessTree,
    pub reader: JoinHandle<()>,
    pub stderr: JoinHandle<()>,
    pub close_grace: Duration,
    pub term_grace: Duration,
    /// stdout when the host may be reading it (`host_reader`).
    #[cfg(unix)]
    pub host_stdout: super::host_reader::HostStdout,
}

pub(super) async fn supervise(shared: Arc<Shared>, mut s: Supervised) {
    // Set when stdout closed and the process had ended by itself after
    // all, its exit seen only after EOF_EXIT (the reaper relays it; late
    // on a loaded or emulated machine): reported as exited, not stopped.
    let mut ended_by_itself = false;
    let status = tokio::select! {
        status = s.tree.wait() => {
            // Give stdout a moment to deliver what the agent wrote last,
            // read by the core as ever (the host's thread may be busy).
            #[cfg(unix)]
            super::host_reader::reclaim(&s.host_stdout);
            let _ = timeout(DRAIN_AFTER_EXIT, &mut s.reader).await;
            status.ok()
        }
        _ = &mut s.reader => {
            match timeout(EXIT_AFTER_EOF, s.tree.wait()).await {
                Ok(status) => status.ok(),
                // stdout closed but the process lingers: it can no longer
                // talk to us, so stop it.
                Err(_) => {
                    shared.life.request_stop("stdout-closed");
                    let (status, signalled) =
                        stop(&shared, &mut s.tree, Duration::ZERO, s.term_grace).await;
                    // Gone before we signalled it: our stop did not end it.
                    // (Its status cannot say: an agent may exit 0 on SIGTERM.)
                    ended_by_itself = status.is_some() && !signalled;
                    status
                }
            }
        }
        _ = shared.life.stop_requested() => {
            let status = if shared.life.stop_reason() == "killed" {
                // kill() already sent SIGKILL; a SIGTERM from here could
                // race it and become the reported signal. Its stdin stays
                // open until it is gone: the SIGKILL goes through the
                // reaper, and an agent that saw EOF first could still do
                // its EOF work (such as saving its session).
                let status = s.tree.wait().await.ok();
                shared.wire.outbox.close();
                status
            } else {
                stop(&shared, &mut s.tree, s.close_grace, s.term_grace).await.0
            };
            #[cfg(unix)]
            super::host_reader::reclaim(&s.host_stdout);
            let _ = timeout(DRAIN_AFTER_EXIT, &mut s.reader).await;
            status
        }
    };
    // Whatever the agent left behind goes with it, and so do the
    // terminals it had us start. The exit is reported once the tree is
    // cleaned up (the reaper gone, so a host that saw `exit` finds no
    // child of the agent's left), within a bound.
    shared.life.tree.release();
    // The terminals go at once, not after the tree's cleanup.
    shared.builtins.shutdown();
    let _ = timeout(TREE_CLEANUP, s.tree.gone()).await;
    if !s.reader.is_finished() {
        s.reader.abort();
    }
    let _ = timeout(EXIT_AFTER_EOF, &mut s.stderr).await;

    let reason = if shared.life.is_closing() && !ended_by_itself {
        shared.life.stop_reason()
    } else {
        "exited"
    };
    let tail = shared.stderr.tail();
    let mut info = ExitInfo::from_status(status, reason, tail);
    info.reaper = s.tree.trouble();
    let pending = shared.requests.outgoing.len();
    if reason == "exited" {
        tracing::warn!(pid = shared.pid(), status = %info.describe(), pending, "agent exited unexpectedly");
    } else {
        tracing::info!(pid = shared.pid(), status = %info.describe(), reason, "agent stopped");
    }
    shared.life.refuse_calls();
    shared.wire.outbox.close();
    shared.life.set_exit(info.clone());

    for (id, req) in shared.requests.outgoing.drain() {
        let error = info.closed_error(&req.method);
        shared.emit(Event::Failed { id, error });
    }
    for (token, _) in shared.requests.incoming.drain() {
        for event in shared.settled(token, "closed") {
            shared.emit(event);
        }
    }
    shared.requests.timeouts.close();
    shared.emit(Event::Host {
        name: "exit",
        payload: info.to_json(),
        budgeted: false,
    });
}

/// Fire the connection's timeouts until it is gone (weak: the task must
/// not keep it alive).
pub(super) async fn run_timeouts(shared: Weak<Shared>, timeouts: Arc<Deadlines<Timeout>>) {
    timeouts
        .run(|due| {
            if let Some(shared) = shared.upgrade() {
                shared.timed_out(due);
            }
        })
        .await;
}

/// stdin EOF (already sent) → grace → SIGTERM the group → grace → SIGKILL
/// the whole tree. Returns the status and whether a signal was sent.
async fn stop(
    shared: &Shared,
    tree: &mut ProcessTree,
    grace: Duration,
    term_grace: Duration,
) -> (Option<ExitStatus>, bool) {
    shared.wire.outbox.close();
    tracing::debug!(
        pid = shared.pid(),
        "stdin closed; waiting for the agent to exit"
    );
    if let Ok(status) = timeout(grace, tree.wait()).await {
        return (status.ok(), false);
    }
    tracing::warn!(
        pid = shared.pid(),
        grace_ms = grace.as_millis() as u64,
        "agent still running after stdin EOF; sending SIGTERM to its group"
    );
    shared.life.tree.terminate();
    if let Ok(status) = timeout(term_grace, tree.wait()).await {
        return (status.ok(), true);
    }
    tracing::warn!(
        pid = shared.pid(),
        "agent survived SIGTERM; sending SIGKILL to its group"
    );
    shared.life.tree.kill();
    (tree.wait().await.ok(), true)
}
