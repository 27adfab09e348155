//! The host's side of a connection: calls that never block, whose results
//! arrive later through the [`DeliverySink`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::sync::{mpsc, Notify, Semaphore};

use super::config::ConnectionConfig;
use super::delivery::{run_delivery, BatchLimits, DeliverySink};
use super::event::QUEUE_BUDGET_BYTES;
use super::exit::ExitInfo;
use super::reader::run_reader;
use super::shared::{PendingCaps, Shared};
use super::stderr::run_stderr;
use super::supervisor::{supervise, Supervised};
use super::trace::{Direction, Kind, Tracer, WireMeta};
use crate::acp::{self, methods};
use crate::builtin::Builtins;
use crate::rpc::json_str;
use crate::rpc::{self, OutgoingRequest};
use crate::transport::{run_writer, spawn_agent, Outbox, OutboxError, SpawnError, StderrRing};

/// Why a call could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The connection is closing or closed; carries the exit report once
    /// the agent is gone.
    #[error("{}", .0.as_ref().map_or("the connection is closing".to_string(), ExitInfo::describe))]
    Closed(Option<ExitInfo>),
    #[error(transparent)]
    Backpressure(OutboxError),
    #[error("{0}")]
    InvalidArgument(String),
}

/// A running agent. Cheap to share; dropping the last handle does not stop
/// the agent (call [`Connection::close`] or [`Connection::kill`]).
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
}

impl Connection {
    /// Spawn the agent and start its tasks on `rt`.
    pub fn spawn(
        config: ConnectionConfig,
        sink: Arc<dyn DeliverySink>,
        rt: &Handle,
    ) -> Result<Self, SpawnError> {
        let agent = {
            let _guard = rt.enter();
            spawn_agent(&config.command)?
        };
        tracing::info!(pid = agent.pid, program = %config.command.program, "agent started");
        let (outbox, writer_queue) = Outbox::new(agent.stdin, config.max_write_queue_bytes);
        let (events, events_rx) = mpsc::unbounded_channel();
        let slots = Arc::new(Semaphore::new(config.in_flight_batches.max(1)));
        let queue_budget = Arc::new(Semaphore::new(QUEUE_BUDGET_BYTES as usize));
        let shared = Arc::new(Shared {
            rt: rt.clone(),
            pid: agent.pid,
            tree: agent.control,
            outbox,
            outgoing: Default::default(),
            given_up: Default::default(),
            incoming: Default::default(),
            events,
            slots: slots.clone(),
            queue_budget: queue_budget.clone(),
            next_id: AtomicU64::new(1),
            next_token: AtomicU64::new(1),
            handler_timeout: config.handler_timeout.filter(|d| !d.is_zero()),
            pending_caps: PendingCaps {
                count: config.max_pending_agent_requests.max(1),
                bytes: config.max_pending_agent_request_bytes,
                handler_params: config.max_handler_params_bytes,
            },
            refusing: AtomicBool::new(false),
            refused: AtomicU64::new(0),
            stderr: Mutex::new(StderrRing::new(config.stderr_tail_bytes)),
            noise_lines: AtomicU64::new(0),
            stderr_dropped: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            stop_reason: Mutex::new(None),
            stop_requested: Notify::new(),
            exit: OnceLock::new(),
            builtins: Builtins::new(config.builtins.clone()),
            tracer: Tracer::new(config.trace.clone()),
            views: Default::default(),
            cancelled_results: config.cancelled_results.clone(),
        });

        rt.spawn(run_delivery(
            events_rx,
            sink,
            slots,
            queue_budget,
            Arc::new(AtomicBool::new(false)),
            BatchLimits {
                max_messages: config.batch_max_messages.max(1),
                max_bytes: config.batch_max_bytes.max(1),
            },
        ));
        rt.spawn(run_writer(writer_queue));
        let reader = rt.spawn(run_reader(
            agent.stdout,
            shared.clone(),
            config.max_line_bytes,
        ));
        let stderr = rt.spawn(run_stderr(
            agent.stderr,
            shared.clone(),
            config.forward_stderr,
        ));
        rt.spawn(supervise(
            shared.clone(),
            Supervised {
                tree: agent.tree,
                reader,
                stderr,
                close_grace: config.close_grace,
                term_grace: config.term_grace,
            },
        ));
        Ok(Self { shared })
    }

    pub fn pid(&self) -> u32 {
        self.shared.pid
    }

    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The exit report, once the agent is gone.
    pub fn exit_info(&self) -> Option<ExitInfo> {
        self.shared.exit.get().cloned()
    }

    fn check_open(&self) -> Result<(), CallError> {
        if self.shared.closing.load(Ordering::SeqCst) {
            return Err(CallError::Closed(self.exit_info()));
        }
        Ok(())
    }

    /// Send a request; its answer arrives as a `[2, id, …]` or `[3, id, …]`
    /// item. `params` is JSON text. Returns the request id.
    pub fn request(
        &self,
        method: &str,
        params: Option<&str>,
        timeout: Option<Duration>,
    ) -> Result<u64, CallError> {
        self.check_open()?;
        check_json_text(params)?;
        let shared = &self.shared;
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let at = Instant::now();
        shared.outgoing.insert(
            id,
            OutgoingRequest {
                method: method.into(),
                sent: at,
                timer: None,
            },
        );
        shared.builtins.sessions().on_request(id, method, params);
        if shared.views.any() {
            // Before the line goes out: the answer cannot come first.
            if let Some(event) = shared.views.on_request(id, method, params) {
                shared.emit(event);
            }
        }
        let id_text = id.to_string();
        let meta = WireMeta {
            direction: Direction::Send,
            kind: Kind::Request,
            method: Some(method),
            id: Some(&id_text),
            at,
            request_at: None,
        };
        if let Err(e) = shared.send_line(rpc::request(id, method, params), meta) {
            shared.outgoing.take(id);
            if shared.views.any() {
                // Never sent: a view must not show this prompt as running.
                if let Some(event) = shared.views.on_response(id, None) {
                    shared.emit(event);
                }
            }
            return Err(self.send_failed(e));
        }
        if let Some(timeout) = timeout.filter(|d| !d.is_zero()) {
            shared.arm_request_timeout(id, method, timeout);
        }
        Ok(id)
    }

    /// Send a notification.
    pub fn notify(&self, method: &str, params: Option<&str>) -> Result<(), CallError> {
        self.check_open()?;
        check_json_text(params)?;
        self.shared
            .send_line(rpc::notification(method, params), notification_meta(method))
            .map_err(|e| self.send_failed(e))
    }

    fn send_failed(&self, e: OutboxError) -> CallError {
        if let OutboxError::Full { queued, .. } = e {
            tracing::warn!(
                pid = self.shared.pid,
                queued,
                "agent is not reading its stdin; call refused"
            );
        }
        match e {
            OutboxError::Closed => CallError::Closed(self.exit_info()),
            full => CallError::Backpressure(full),
        }
    }

    /// Stop waiting for request `id` (the caller gave up on it). With
    /// `notify_agent`, the agent is told with `$/cancel_request`.
    /// Its late answer is traced, not reported as a protocol error.
    pub fn abandon(&self, id: u64, notify_agent: bool) -> bool {
        let taken = self.shared.outgoing.take(id).is_some();
        if taken {
            self.shared.give_up(id, notify_agent);
        }
        taken
    }

    /// Answer the agent's request `token` with a result (JSON text).
    /// Results of known methods are checked; a malformed one is replaced
    /// by the method's failure reply. False if it was already answered.
    pub fn respond(&self, token: u64, result: &str) -> bool {
        let Some(req) = self.shared.incoming.take(token) else {
            return false;
        };
        self.view_settled(token);
        self.shared
            .send_reply(&req, acp::sanitize_reply(&req.method, result))
    }

    /// The full params of agent request `token` while it waits, if its
    /// handler was given them cut (see `acp::bounded_request`).
    pub fn full_params(&self, token: u64) -> Option<std::sync::Arc<str>> {
        self.shared.incoming.full_params(token)
    }

    /// Answer the agent's request `token` with an error. Permission and
    /// elicitation requests are answered `cancelled` instead: agents treat
    /// an error there as a failed tool call.
    pub fn respond_error(&self, token: u64, code: i64, message: &str, data: Option<&str>) -> bool {
        let Some(req) = self.shared.incoming.take(token) else {
            return false;
        };
        self.view_settled(token);
        self.shared
            .send_reply(&req, acp::error_reply(&req.method, code, message, data))
    }

    /// Answer agent request `token` with the error the host chose (an
    /// `RpcError` it threw): see [`acp::chosen_error_reply`] (a permission
    /// or elicitation request still gets its outcome).
    pub fn respond_chosen_error(
        &self,
        token: u64,
        code: i64,
        message: &str,
        data: Option<&str>,
    ) -> bool {
        let Some(req) = self.shared.incoming.take(token) else {
            return false;
        };
        self.view_settled(token);
        let reply = acp::chosen_error_reply(&req.method, code, message, data);
        self.shared.send_reply(&req, reply)
    }

    /// `session/cancel`, then answer every request of that session the agent
    /// is still waiting on (permission, elicitation, extension questions)
    /// with its cancelled outcome. Returns how many were answered.
    pub fn cancel_session(&self, session_id: &str) -> Result<usize, CallError> {
        self.check_open()?;
        let taken = self
            .shared
            .incoming
            .take_session(session_id, acp::is_cancellable);
        // Settle events are queued before anything reaches the agent, so
        // the host sees them before the turn's `cancelled` answer.
        for (token, _) in &taken {
            for event in self.shared.settled(*token, "cancelled") {
                self.shared.emit(event);
            }
        }
        let params = format!(r#"{{"sessionId":{}}}"#, json_str(session_id));
        self.notify(methods::SESSION_CANCEL, Some(&params))?;
        for (_, req) in &taken {
            self.shared
                .send_reply(req, self.shared.cancelled_reply(&req.method));
        }
        Ok(taken.len())
    }

    /// A session view no longer shows agent request `token` as waiting.
    fn view_settled(&self, token: u64) {
        if let Some(event) = self.shared.views.on_settled(token) {
            self.shared.emit(event);
        }
    }

    /// The host finished processing one delivered batch.
    pub fn ack(&self) {
        self.shared.slots.add_permits(1);
    }

    /// Graceful stop: stdin EOF (while stdout is still read), then SIGTERM
    /// and SIGKILL to the process group after the configured graces. The
    /// `exit` event reports the end.
    pub fn close(&self) {
        // Why first: an agent that exits the moment it sees EOF must be
        // reported "closed", not "exited".
        self.shared.request_stop("closed");
        self.shared.outbox.close();
    }

    /// Immediate SIGKILL of the agent and everything it started,
    /// synchronously: for exit hooks, where nothing asynchronous will run
    /// any more.
    pub fn kill(&self) {
        // Reason first, so the exit is reported as "killed" however fast
        // the process dies; the supervisor sends no SIGTERM for this reason
        // (and leaves stdin open until the agent is gone).
        self.shared.note_stop_reason("killed");
        self.shared.tree.kill();
        self.shared.stop_requested.notify_one();
        self.shared.builtins.shutdown();
    }

    /// The host registered (`true`) or dropped its own handler for an agent
    /// request method: a host handler wins over a built-in one.
    pub fn set_host_handler(&self, method: &str, handled: bool) {
        self.shared.builtins.set_host_handler(method, handled);
    }

    /// Agent request methods the built-ins are switched on for.
    pub fn builtin_methods(&self) -> Vec<&'static str> {
        self.shared.builtins.methods()
    }

    /// Built-in terminals created and not yet released.
    pub fn open_terminals(&self) -> usize {
        self.shared.builtins.open_terminals()
    }

    /// Requests we sent that are still unanswered.
    pub fn pending_requests(&self) -> usize {
        self.shared.outgoing.len()
    }

    /// The recent-message history, oldest first, as a JSON array of trace
    /// records (see the `trace` module).
    pub fn history_json(&self) -> String {
        self.shared.tracer.history_json()
    }

    /// Counters and pending requests as a JSON object, for status panels:
    /// `{pid, messagesIn, messagesOut, bytesIn, bytesOut, noiseLines,
    /// pendingRequests: {method: n}, pendingAgentRequests: {method: n}}`.
    pub fn status_json(&self) -> String {
        let c = &self.shared.tracer.counters;
        let counts = |pairs: Vec<(String, usize)>| {
            let body: Vec<String> = pairs
                .iter()
                .map(|(m, n)| format!("{}:{n}", json_str(m)))
                .collect();
            format!("{{{}}}", body.join(","))
        };
        format!(
            r#"{{"pid":{},"messagesIn":{},"messagesOut":{},"bytesIn":{},"bytesOut":{},"noiseLines":{},"stderrDropped":{},"refusedAgentRequests":{},"pendingRequests":{},"pendingAgentRequests":{}}}"#,
            self.shared.pid,
            c.messages_in.load(Ordering::Relaxed),
            c.messages_out.load(Ordering::Relaxed),
            c.bytes_in.load(Ordering::Relaxed),
            c.bytes_out.load(Ordering::Relaxed),
            self.noise_lines(),
            self.shared.stderr_dropped.load(Ordering::Relaxed),
            self.shared.refused.load(Ordering::Relaxed),
            counts(self.shared.outgoing.count_by(|r| &r.method)),
            counts(self.shared.incoming.count_by(|r| &r.method)),
        )
    }

    /// The last bytes the agent wrote to stderr (the ring behind
    /// `ExitInfo::stderr_tail`), while it runs or after.
    pub fn stderr_tail(&self) -> String {
        self.shared
            .stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .tail()
    }

    /// Non-JSON lines seen on stdout so far.
    pub fn noise_lines(&self) -> u64 {
        self.shared.noise_lines.load(Ordering::Relaxed)
    }
}

fn notification_meta(method: &str) -> WireMeta<'_> {
    WireMeta {
        direction: Direction::Send,
        kind: Kind::Notification,
        method: Some(method),
        id: None,
        at: Instant::now(),
        request_at: None,
    }
}

/// JSON text handed in by the host must be one line: a raw newline would
/// split the message in two on the wire.
fn check_json_text(params: Option<&str>) -> Result<(), CallError> {
    match params {
        Some(p) if memchr::memchr2(b'\n', b'\r', p.as_bytes()).is_some() => Err(
            CallError::InvalidArgument("params JSON must not contain a raw newline".into()),
        ),
        Some("") => Err(CallError::InvalidArgument("params JSON is empty".into())),
        _ => Ok(()),
    }
}

/// A handle that does not keep the connection's state alive: for exit
/// hooks that must be able to kill the agent but not leak the connection.
#[derive(Clone)]
pub struct WeakConnection(std::sync::Weak<Shared>);

impl Connection {
    pub fn downgrade(&self) -> WeakConnection {
        WeakConnection(Arc::downgrade(&self.shared))
    }
}

impl WeakConnection {
    /// The connection, if it still exists.
    pub fn upgrade(&self) -> Option<Connection> {
        self.0.upgrade().map(|shared| Connection { shared })
    }

    /// Kill the agent if the connection still exists and is not done.
    pub fn kill(&self) {
        if let Some(shared) = self.0.upgrade() {
            if shared.exit.get().is_none() {
                Connection { shared }.kill();
            }
        }
    }
}
