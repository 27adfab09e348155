//! State shared by the connection's tasks and the host's calls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::{mpsc, Notify, Semaphore};

use super::event::Event;
use super::exit::ExitInfo;
use super::trace::{Direction, Kind, Tracer, WireMeta};
use super::views::Views;
use crate::acp::methods;
use crate::acp::{self, Reply};
use crate::builtin::Builtins;
use crate::rpc::json_str;
use crate::rpc::{self, GivenUp, IncomingRequest, IncomingTable, OutgoingTable};
use crate::transport::{Outbox, OutboxError, StderrRing, TreeControl};

pub(super) struct Shared {
    pub rt: Handle,
    pub pid: u32,
    /// Stops the agent's process tree; the only way we signal it.
    pub tree: TreeControl,
    pub outbox: Outbox,
    pub outgoing: OutgoingTable,
    /// Our requests the host stopped waiting for (timeout, abort).
    pub given_up: GivenUp,
    pub incoming: IncomingTable,
    /// The ordered stream to the host. Unbounded in slots so that every
    /// producer queues in the order things happened (a bounded channel made
    /// a full-queue sender retry later, behind newer items); its memory is
    /// bounded by the queue budget, which everything the agent can cause
    /// in any number is counted against (see `Event::queued_bytes`).
    pub events: mpsc::UnboundedSender<Event>,
    pub slots: Arc<Semaphore>,
    /// Bytes of agent output allowed to wait for delivery.
    pub queue_budget: Arc<Semaphore>,
    pub next_id: AtomicU64,
    pub next_token: AtomicU64,
    pub handler_timeout: Option<Duration>,
    /// Agent requests that may wait for an answer at once.
    pub pending_caps: PendingCaps,
    /// Refusing agent requests since the last one was taken in (the host
    /// hears once per episode, not once per refused request).
    pub refusing: AtomicBool,
    /// Agent requests refused so far.
    pub refused: AtomicU64,
    pub stderr: Mutex<StderrRing>,
    pub noise_lines: AtomicU64,
    /// stderr chunks not forwarded for want of queue budget.
    pub stderr_dropped: AtomicU64,
    /// Set by `close()`/`kill()`: no new calls.
    pub closing: AtomicBool,
    /// Why the stop was requested, for the exit report.
    pub stop_reason: Mutex<Option<&'static str>>,
    pub stop_requested: Notify,
    /// Set once the agent is gone and every pending call was settled.
    pub exit: OnceLock<ExitInfo>,
    /// The built-in fs/terminal handlers and the session cwds they use.
    pub builtins: Builtins,
    pub tracer: Tracer,
    /// Live session views the reader folds into.
    pub views: Views,
    /// Host-given cancelled results of extension requests, by method.
    pub cancelled_results: HashMap<String, String>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct PendingCaps {
    pub count: usize,
    pub bytes: usize,
    /// Params bigger than this reach a host handler cut.
    pub handler_params: usize,
}

impl Shared {
    /// Queue an event, in order, without waiting (gone only once delivery
    /// has stopped, when nobody is listening any more).
    pub fn emit(&self, event: Event) {
        let _ = self.events.send(event);
    }

    /// The items for agent request `token` settled without the host's
    /// answer (cancelled, timed out, closed): the host's handler is told
    /// to stop, and a session view stops showing the request as waiting.
    /// Every such path goes through here, so no view keeps a stale entry.
    pub fn settled(&self, token: u64, reason: &'static str) -> impl Iterator<Item = Event> {
        let view = self.views.on_settled(token);
        std::iter::once(Event::RequestSettled { token, reason }).chain(view)
    }

    /// Queue one line for the agent's stdin, traced first: a trace item
    /// queued after the line could land behind the agent's quick answer.
    /// (A line the outbox then refuses was still traced; the call fails.)
    pub fn send_line(
        self: &Arc<Self>,
        line: String,
        meta: WireMeta<'_>,
    ) -> Result<(), OutboxError> {
        self.trace_send(&line, meta);
        self.outbox.send(line.into_bytes())
    }

    fn trace_send(&self, line: &str, meta: WireMeta<'_>) {
        // The newline is not part of the message.
        if let Some(record) = self.tracer.record(meta, line.trim_end_matches('\n')) {
            self.emit(Event::Trace {
                record,
                budgeted: false,
            });
        }
    }

    /// Send a reply to an agent request; false if stdin is gone.
    pub fn send_reply(self: &Arc<Self>, req: &IncomingRequest, reply: Reply) -> bool {
        let (line, meta) = reply_line(req, reply);
        self.send_line(line, meta).is_ok()
    }

    /// [`Self::send_reply`] that waits for room in the stdin queue instead
    /// of failing when it is full (until the connection ends); blocking
    /// threads only.
    pub fn send_reply_waiting(self: &Arc<Self>, req: &IncomingRequest, reply: Reply) -> bool {
        let (line, meta) = reply_line(req, reply);
        self.trace_send(&line, meta);
        self.outbox.send_waiting(line.into_bytes()).is_ok()
    }
}

/// The line answering `req`, and what the tracer records of it.
fn reply_line(req: &IncomingRequest, reply: Reply) -> (String, WireMeta<'_>) {
    {
        let (line, kind) = match reply {
            Reply::Result(result) => (rpc::response(&req.raw_id, result), Kind::Response),
            Reply::Error {
                code,
                message,
                data,
            } => (
                rpc::error_response(&req.raw_id, code, &message, data.as_deref()),
                Kind::Error,
            ),
        };
        let meta = WireMeta {
            direction: Direction::Send,
            kind,
            method: Some(&req.method),
            id: Some(&req.raw_id),
            at: std::time::Instant::now(),
            request_at: Some(req.received),
        };
        (line, meta)
    }
}

impl Shared {
    /// A timer that fails our request `id` if no answer came in time.
    pub fn arm_request_timeout(self: &Arc<Self>, id: u64, method: &str, timeout: Duration) {
        let shared = Arc::clone(self);
        let method = method.to_string();
        let timer = self.rt.spawn(async move {
            tokio::time::sleep(timeout).await;
            if shared.outgoing.take(id).is_some() {
                tracing::warn!(pid = shared.pid, id, method = %method, timeout_ms = timeout.as_millis() as u64, "request timed out");
                // Giving up is cancelling: the agent should stop the work.
                shared.give_up(id, true);
                let error = format!(
                    r#"{{"code":"ERR_ACP_TIMEOUT","message":{},"method":{},"timeoutMs":{}}}"#,
                    json_str(&format!(
                        "{method} got no answer within {} ms",
                        timeout.as_millis()
                    )),
                    json_str(&method),
                    timeout.as_millis()
                );
                shared.emit(Event::Failed { id, error });
            }
        });
        self.outgoing.set_timer(id, timer.abort_handle());
    }

    /// A timer that answers the agent's request `token` for a handler that
    /// is taking too long, so the agent is never left waiting forever.
    pub fn arm_handler_timeout(self: &Arc<Self>, token: u64) {
        let Some(timeout) = self.handler_timeout else {
            return;
        };
        let shared = Arc::clone(self);
        let timer = self.rt.spawn(async move {
            tokio::time::sleep(timeout).await;
            if let Some(req) = shared.incoming.take(token) {
                tracing::warn!(pid = shared.pid, method = %req.method, "host handler timed out; answered for it");
                let message = format!(
                    "handler for {} did not answer within {} ms",
                    req.method,
                    timeout.as_millis()
                );
                shared.send_reply(&req, acp::failure_reply(&req.method, &message));
                for event in shared.settled(token, "timeout") {
                    shared.emit(event);
                }
            }
        });
        self.incoming.set_timer(token, timer.abort_handle());
    }

    /// We stopped waiting for our request `id` (already taken from the
    /// pending table): remember it so its late answer is only traced, and
    /// with `notify_agent` send `$/cancel_request`.
    pub fn give_up(self: &Arc<Self>, id: u64, notify_agent: bool) {
        self.given_up.insert(id);
        if notify_agent && !self.closing.load(Ordering::SeqCst) {
            let params = format!(r#"{{"requestId":{id}}}"#);
            let meta = WireMeta {
                direction: Direction::Send,
                kind: Kind::Notification,
                method: Some(methods::CANCEL_REQUEST),
                id: None,
                at: std::time::Instant::now(),
                request_at: None,
            };
            let _ = self.send_line(
                rpc::notification(methods::CANCEL_REQUEST, Some(&params)),
                meta,
            );
        }
    }

    /// What `cancel_session` answers an agent request of `method` with.
    pub fn cancelled_reply(&self, method: &str) -> Reply {
        match self.cancelled_results.get(method) {
            Some(result) if methods::is_extension(method) => Reply::Result(result.clone()),
            _ => acp::cancelled_reply(method),
        }
    }

    pub fn request_stop(&self, reason: &'static str) {
        self.note_stop_reason(reason);
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
}
