//! The state the connection's tasks and the host's calls share, one piece
//! per concern, and the steps that span pieces (a reply is traced, sent
//! and settled in views; a timeout takes a request and tells the host).

use std::time::{Duration, Instant};

use tokio::runtime::Handle;

use super::event::Event;
use super::host_queue::HostQueue;
use super::lifecycle::Lifecycle;
use super::requests::{Requests, Timeout};
use super::stderr_log::StderrLog;
use super::trace::{Direction, Kind, WireMeta};
use super::views::Views;
use super::wire::Wire;
use crate::acp::methods;
use crate::acp::{self, Reply};
use crate::builtin::Builtins;
use crate::rpc::json_str;
use crate::rpc::{self, IncomingRequest, RequestId, Timer};
use crate::transport::OutboxError;
use crate::vocabulary::ErrorCode as HostError;

pub(super) struct Shared {
    pub rt: Handle,
    /// Running, stopping or gone; the process tree's one handle.
    pub life: Lifecycle,
    /// stdin queue, trace, stdout noise.
    pub wire: Wire,
    /// Requests either way, and their ids.
    pub requests: Requests,
    /// The ordered stream to the host and its budgets.
    pub queue: HostQueue,
    pub stderr: StderrLog,
    /// The built-in fs/terminal handlers and the session cwds they use.
    pub builtins: Builtins,
    /// Live session views the reader folds into.
    pub views: Views,
}

impl Shared {
    pub fn pid(&self) -> u32 {
        self.life.pid
    }

    /// Queue an event, in order, without waiting.
    pub fn emit(&self, event: Event) {
        self.queue.emit(event);
    }

    /// The items for agent request `token` settled without the host's
    /// answer (cancelled, timed out, closed): the host's handler is told
    /// to stop, and a session view stops showing the request as waiting.
    /// Every such path goes through here, so no view keeps a stale entry.
    pub fn settled(&self, token: u64, reason: &'static str) -> impl Iterator<Item = Event> {
        let view = self.views.on_settled(token);
        std::iter::once(Event::RequestSettled { token, reason }).chain(view)
    }

    /// The trace item of a received message, queued in `out` just before
    /// the message's own item: wire order.
    pub fn trace_received(&self, meta: WireMeta<'_>, text: &str, out: &mut Vec<Event>) {
        if let Some(record) = self.wire.tracer.record(meta, text) {
            out.push(Event::Trace {
                record,
                budgeted: true,
            });
        }
    }

    /// A failed read of one of the agent's pipes: said, not taken for EOF.
    pub fn read_error(&self, stream: &str, e: &std::io::Error) -> Event {
        tracing::warn!(
            pid = self.pid(),
            stream,
            "reading the agent's {stream} failed: {e}"
        );
        Event::Host {
            name: "readError",
            payload: format!(
                r#"{{"stream":{},"message":{}}}"#,
                json_str(stream),
                json_str(&e.to_string())
            ),
            budgeted: false,
        }
    }

    /// Queue one line for the agent's stdin, traced first: a trace item
    /// queued after the line could land behind the agent's quick answer.
    /// (A line the outbox then refuses was still traced; the call fails.)
    pub fn send_line(&self, line: String, meta: WireMeta<'_>) -> Result<(), OutboxError> {
        self.trace_send(&line, meta);
        self.wire.outbox.send(line.into_bytes())
    }

    fn trace_send(&self, line: &str, meta: WireMeta<'_>) {
        // The newline is not part of the message.
        if let Some(record) = self.wire.tracer.record(meta, line.trim_end_matches('\n')) {
            self.emit(Event::Trace {
                record,
                budgeted: false,
            });
        }
    }

    /// Send a reply to an agent request; false if stdin is gone.
    pub fn send_reply(&self, req: &IncomingRequest, reply: Reply) -> bool {
        let (line, meta) = reply_line(req, reply);
        self.send_line(line, meta).is_ok()
    }

    /// [`Self::send_reply`] that waits for room in the stdin queue instead
    /// of failing when it is full (until the connection ends); blocking
    /// threads only.
    pub fn send_reply_waiting(&self, req: &IncomingRequest, reply: Reply) -> bool {
        let (line, meta) = reply_line(req, reply);
        self.trace_send(&line, meta);
        self.wire.outbox.send_waiting(line.into_bytes()).is_ok()
    }

    /// Fail our request `id` if no answer came within `timeout`.
    pub fn arm_request_timeout(&self, id: RequestId, timeout: Duration) {
        let deadline = self
            .requests
            .timeouts
            .arm(timeout, Timeout::Request { id, timeout });
        self.requests
            .outgoing
            .set_timer(id, Timer::Deadline(deadline));
    }

    /// Answer the agent's request `token` for a handler that is taking too
    /// long, so the agent is never left waiting forever.
    pub fn arm_handler_timeout(&self, token: u64) {
        let Some(timeout) = self.requests.handler_timeout else {
            return;
        };
        let deadline = self
            .requests
            .timeouts
            .arm(timeout, Timeout::Handler { token, timeout });
        self.requests
            .incoming
            .set_timer(token, Timer::Deadline(deadline));
    }

    /// A timeout armed by one of the two above came due.
    pub fn timed_out(&self, timeout: Timeout) {
        match timeout {
            Timeout::Request { id, timeout } => {
                let Some(req) = self.requests.outgoing.take(id) else {
                    return;
                };
                let method = &req.method;
                tracing::warn!(pid = self.pid(), id = id.get(), method = %method, timeout_ms = timeout.as_millis() as u64, "request timed out");
                // Giving up is cancelling: the agent should stop the work.
                self.give_up(id, true);
                let error = format!(
                    r#"{{"code":"{}","message":{},"method":{},"timeoutMs":{}}}"#,
                    HostError::Timeout.as_str(),
                    json_str(&format!(
                        "{method} got no answer within {} ms",
                        timeout.as_millis()
                    )),
                    json_str(method),
                    timeout.as_millis()
                );
                self.emit(Event::Failed { id, error });
            }
            Timeout::Handler { token, timeout } => {
                let Some(req) = self.requests.incoming.take(token) else {
                    return;
                };
                tracing::warn!(pid = self.pid(), method = %req.method, "host handler timed out; answered for it");
                let message = format!(
                    "handler for {} did not answer within {} ms",
                    req.method,
                    timeout.as_millis()
                );
                self.send_reply(&req, acp::failure_reply(&req.method, &message));
                for event in self.settled(token, "timeout") {
                    self.emit(event);
                }
            }
        }
    }

    /// We stopped waiting for our request `id` (already taken from the
    /// pending table): remember it so its late answer is only traced, and
    /// with `notify_agent` send `$/cancel_request`.
    pub fn give_up(&self, id: RequestId, notify_agent: bool) {
        self.requests.given_up.insert(id);
        if notify_agent && !self.life.is_closing() {
            let params = format!(r#"{{"requestId":{id}}}"#);
            let meta = WireMeta {
                direction: Direction::Send,
                kind: Kind::Notification,
                method: Some(methods::CANCEL_REQUEST),
                id: None,
                at: Instant::now(),
                request_at: None,
            };
            let _ = self.send_line(
                rpc::notification(methods::CANCEL_REQUEST, Some(&params)),
                meta,
            );
        }
    }
}

/// The line answering `req`, and what the tracer records of it.
fn reply_line(req: &IncomingRequest, reply: Reply) -> (String, WireMeta<'_>) {
    let (line, kind) = match reply {
        Reply::Result(result) => (rpc::response(&req.id, result), Kind::Response),
        Reply::Error {
            code,
            message,
            data,
        } => (
            rpc::error_response(&req.id, code, &message, data.as_deref()),
            Kind::Error,
        ),
    };
    let meta = WireMeta {
        direction: Direction::Send,
        kind,
        method: Some(&req.method),
        id: Some(req.id.as_str()),
        at: Instant::now(),
        request_at: Some(req.received),
    };
    (line, meta)
}
