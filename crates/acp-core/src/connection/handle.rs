//! The host's side of a connection: calls that never block, whose results
//! arrive later through the [`DeliverySink`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::Handle;

use super::config::ConnectionConfig;
use super::delivery::{run_delivery, BatchLimits, DeliverySink};
use super::exit::ExitInfo;
use super::host_queue::HostQueue;
use super::lifecycle::Lifecycle;
use super::reader::run_reader;
use super::requests::Requests;
use super::shared::Shared;
use super::stderr::run_stderr;
use super::stderr_log::StderrLog;
use super::supervisor::{run_timeouts, supervise, Supervised};
use super::trace::{Direction, Kind, Tracer, WireMeta};
use super::views::{ViewBusy, ViewSnapshot};
use super::wire::Wire;
use crate::acp::{self, methods};
use crate::builtin::Builtins;
use crate::rpc::json_str;
use crate::rpc::{self, OutgoingRequest, RequestId};
use crate::transport::{run_writer, spawn_agent, Outbox, OutboxError, SpawnError};
use crate::view::{Drained, ViewOptions};

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
    /// stdout when the host may read it (`read_on_host`).
    #[cfg(unix)]
    host_stdout: HostStdout,
}

#[cfg(unix)]
use super::host_reader::HostStdout;

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
        let (queue, queue_end) = HostQueue::new(config.in_flight_batches);
        let shared = Arc::new(Shared {
            rt: rt.clone(),
            life: Lifecycle::new(agent.pid, agent.control),
            wire: Wire::new(outbox, Tracer::new(config.trace.clone())),
            requests: Requests::new(&config),
            queue,
            stderr: StderrLog::new(config.stderr_tail_bytes),
            builtins: Builtins::new(config.builtins.clone()),
            views: Default::default(),
        });

        rt.spawn(run_delivery(
            queue_end.events,
            sink,
            queue_end.slots,
            queue_end.budget,
            Arc::new(AtomicBool::new(false)),
            BatchLimits {
                max_messages: config.batch_max_messages.max(1),
                max_bytes: config.batch_max_bytes.max(1),
            },
            queue_end.waiting,
        ));
        rt.spawn(run_writer(writer_queue));
        rt.spawn(run_timeouts(
            Arc::downgrade(&shared),
            Arc::clone(&shared.requests.timeouts),
        ));
        #[cfg(unix)]
        let host_stdout = HostStdout::default();
        // The host's own copy of the fd (tokio's goes with `agent.stdout`);
        // without one (out of fds), the reader task reads as usual.
        #[cfg(unix)]
        let fds = config
            .read_on_host
            .then(|| {
                let fd = std::os::fd::AsFd::as_fd(&agent.stdout);
                Some((fd.try_clone_to_owned().ok()?, fd.try_clone_to_owned().ok()?))
            })
            .flatten();
        #[cfg(unix)]
        let reader = if let Some((host_fd, core_fd)) = fds {
            let (ended, _has_ended) = tokio::sync::oneshot::channel();
            drop(agent.stdout);
            *host_stdout.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(super::host_reader::HostSide {
                    fd: Some(host_fd),
                    reader: super::host_reader::HostReader::new(
                        config.max_line_bytes,
                        BatchLimits {
                            max_messages: config.batch_max_messages.max(1),
                            max_bytes: config.batch_max_bytes.max(1),
                        },
                        ended,
                    ),
                });
            // Created on the runtime: its fd is registered there.
            rt.spawn(super::host_reader::run_core_reader(
                core_fd,
                Arc::clone(&host_stdout),
                shared.clone(),
            ))
        } else {
            rt.spawn(run_reader(
                agent.stdout,
                shared.clone(),
                config.max_line_bytes,
                config.batch_max_messages,
            ))
        };
        #[cfg(not(unix))]
        let reader = rt.spawn(run_reader(
            agent.stdout,
            shared.clone(),
            config.max_line_bytes,
            config.batch_max_messages,
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
                #[cfg(unix)]
                host_stdout: Arc::clone(&host_stdout),
            },
        ));
        Ok(Self {
            shared,
            #[cfg(unix)]
            host_stdout,
        })
    }

    pub fn pid(&self) -> u32 {
        self.shared.pid()
    }

    /// `read_on_host`: read the agent's stdout once, on the
    /// host's thread, when its event loop finds it readable (see
    /// `host_reader`). [`super::Fed::Full`]: stop polling, the core reads.
    #[cfg(unix)]
    pub fn host_read(&self) -> super::Fed {
        // What a line starts (a built-in terminal and its tasks) needs the
        // runtime's context.
        let _rt = self.shared.rt.enter();
        let mut host = self.host_stdout.lock().unwrap_or_else(|e| e.into_inner());
        match host.as_mut() {
            Some(super::host_reader::HostSide {
                fd: Some(fd),
                reader,
            }) => reader.host_read(fd, &self.shared),
            _ => super::Fed::Full,
        }
    }

    /// The raw stdout fd the host polls for readability (it reads through
    /// [`Self::host_read`]); None when the core reads it.
    #[cfg(unix)]
    pub fn host_stdout_fd(&self) -> Option<i32> {
        use std::os::fd::AsRawFd;
        let host = self.host_stdout.lock().unwrap_or_else(|e| e.into_inner());
        host.as_ref()?.fd.as_ref().map(|fd| fd.as_raw_fd())
    }

    /// The host polls stdout (from `host_stdout_fd`) and may be given it.
    #[cfg(unix)]
    pub fn host_polls_stdout(&self) {
        let mut host = self.host_stdout.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(side) = host.as_mut() {
            side.reader.set_host_polls(true);
        }
    }

    /// The host no longer polls stdout: the core reads it, and the host's
    /// copy of the fd is closed.
    #[cfg(unix)]
    pub fn close_host_stdout(&self) {
        let mut host = self.host_stdout.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(side) = host.as_mut() {
            side.reader.set_host_polls(false);
            side.fd = None;
        }
    }

    /// Whether the host reads stdout now (after a batch it was delivered:
    /// the core may have given the fd back).
    #[cfg(unix)]
    pub fn stdout_on_host(&self) -> bool {
        let host = self.host_stdout.lock().unwrap_or_else(|e| e.into_inner());
        host.as_ref().is_some_and(|side| side.reader.on_host())
    }

    /// A handle that does not keep the connection alive.
    pub fn downgrade(&self) -> WeakConnection {
        WeakConnection {
            shared: Arc::downgrade(&self.shared),
            #[cfg(unix)]
            host_stdout: Arc::clone(&self.host_stdout),
        }
    }

    /// The exit report, once the agent is gone.
    pub fn exit_info(&self) -> Option<ExitInfo> {
        self.shared.life.exit().cloned()
    }

    fn check_open(&self) -> Result<(), CallError> {
        if self.shared.life.is_closing() {
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
    ) -> Result<RequestId, CallError> {
        self.check_open()?;
        check_json_text(params)?;
        let shared = &self.shared;
        let id = shared.requests.ids.next();
        let at = Instant::now();
        shared.requests.outgoing.insert(
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
            shared.requests.outgoing.take(id);
            if shared.views.any() {
                // Never sent: a view must not show this prompt as running.
                if let Some(event) = shared.views.on_response(id, None) {
                    shared.emit(event);
                }
            }
            return Err(self.send_failed(e));
        }
        if let Some(timeout) = timeout.filter(|d| !d.is_zero()) {
            shared.arm_request_timeout(id, timeout);
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
                pid = self.shared.pid(),
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
    pub fn abandon(&self, id: RequestId, notify_agent: bool) -> bool {
        let taken = self.shared.requests.outgoing.take(id).is_some();
        if taken {
            self.shared.give_up(id, notify_agent);
        }
        taken
    }

    /// Answer the agent's request `token` with a result (JSON text).
    /// Results of known methods are checked; a malformed one is replaced
    /// by the method's failure reply. False if it was already answered.
    pub fn respond(&self, token: u64, result: &str) -> bool {
        let Some(req) = self.shared.requests.incoming.take(token) else {
            return false;
        };
        self.view_settled(token);
        self.shared
            .send_reply(&req, acp::sanitize_reply(&req.method, result))
    }

    /// The full params of agent request `token` while it waits, if its
    /// handler was given them cut (see `acp::bounded_request`).
    pub fn full_params(&self, token: u64) -> Option<std::sync::Arc<str>> {
        self.shared.requests.incoming.full_params(token)
    }

    /// The full result of our request `id`, when the host was given it cut
    /// (see `acp::bounded_result`): taken once, by whoever handles the answer.
    pub fn take_full_result(&self, id: RequestId) -> Option<String> {
        self.shared.requests.cut_results.take(id)
    }

    /// Drop the full results the host did not take (it is done with this
    /// connection).
    pub fn forget_full_results(&self) {
        self.shared.requests.cut_results.clear();
    }

    /// Answer the agent's request `token` with an error. Permission and
    /// elicitation requests are answered `cancelled` instead: agents treat
    /// an error there as a failed tool call.
    pub fn respond_error(&self, token: u64, code: i64, message: &str, data: Option<&str>) -> bool {
        let Some(req) = self.shared.requests.incoming.take(token) else {
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
        let Some(req) = self.shared.requests.incoming.take(token) else {
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
            .requests
            .incoming
            .take_session(session_id, acp::is_cancellable);
        // Settle events are queued before anything reaches the agent, so
        // the host sees them before the prompt turn's `cancelled` answer.
        for (token, _) in &taken {
            for event in self.shared.settled(*token, "cancelled") {
                self.shared.emit(event);
            }
        }
        let params = format!(r#"{{"sessionId":{}}}"#, json_str(session_id));
        self.notify(methods::SESSION_CANCEL, Some(&params))?;
        for (_, req) in &taken {
            self.shared
                .send_reply(req, self.shared.requests.cancelled_reply(&req.method));
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
        self.shared.queue.ack();
    }

    /// Graceful stop: stdin EOF (while stdout is still read), then SIGTERM
    /// and SIGKILL to the process group after the configured graces. The
    /// `exit` event reports the end.
    pub fn close(&self) {
        // Why first: an agent that exits the moment it sees EOF must be
        // reported "closed", not "exited".
        self.shared.life.request_stop("closed");
        self.shared.wire.outbox.close();
    }

    /// Immediate SIGKILL of the agent and everything it started,
    /// synchronously: for exit hooks, where nothing asynchronous will run
    /// any more.
    pub fn kill(&self) {
        // Reason first, so the exit is reported as "killed" however fast
        // the process dies; the supervisor sends no SIGTERM for this reason
        // (and leaves stdin open until the agent is gone).
        self.shared.life.kill();
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
        self.shared.requests.outgoing.len()
    }

    /// The recent-message history, oldest first, as a JSON array of trace
    /// records (see the `trace` module).
    pub fn history_json(&self) -> String {
        self.shared.wire.tracer.history_json()
    }

    /// Counters and pending requests as a JSON object, for status panels:
    /// `{pid, messagesIn, messagesOut, bytesIn, bytesOut, noiseLines,
    /// pendingRequests: {method: n}, pendingAgentRequests: {method: n}}`.
    pub fn status_json(&self) -> String {
        let c = &self.shared.wire.tracer.counters;
        let counts = |pairs: Vec<(String, usize)>| {
            let body: Vec<String> = pairs
                .iter()
                .map(|(m, n)| format!("{}:{n}", json_str(m)))
                .collect();
            format!("{{{}}}", body.join(","))
        };
        format!(
            r#"{{"pid":{},"messagesIn":{},"messagesOut":{},"bytesIn":{},"bytesOut":{},"noiseLines":{},"stderrDropped":{},"refusedAgentRequests":{},"pendingRequests":{},"pendingAgentRequests":{}}}"#,
            self.shared.pid(),
            c.messages_in.load(Ordering::Relaxed),
            c.messages_out.load(Ordering::Relaxed),
            c.bytes_in.load(Ordering::Relaxed),
            c.bytes_out.load(Ordering::Relaxed),
            self.noise_lines(),
            self.shared.stderr.dropped(),
            self.shared.requests.refused(),
            counts(self.shared.requests.outgoing.count_by(|r| &r.method)),
            counts(self.shared.requests.incoming.count_by(|r| &r.method)),
        )
    }

    /// The last bytes the agent wrote to stderr (the ring behind
    /// `ExitInfo::stderr_tail`), while it runs or after.
    pub fn stderr_tail(&self) -> String {
        self.shared.stderr.tail()
    }

    /// Non-JSON lines seen on stdout so far.
    pub fn noise_lines(&self) -> u64 {
        self.shared.wire.noise_lines()
    }

    /// Open a live view of `session_id` (or return the one already open):
    /// from now on its `session/update`s are folded in the core, and
    /// delivered one by one as well only with `forward`. Open it before
    /// `session/load`/`session/resume` to fold their replay.
    pub fn open_view(&self, session_id: &str, options: ViewOptions, forward: bool) -> u32 {
        self.shared.views.open(session_id, options, forward)
    }

    /// Fold a `session/new|load|resume` result (modes, config options)
    /// into view `id`; false if the view or the JSON is not valid.
    pub fn seed_view(&self, id: u32, result: &str) -> bool {
        self.shared.views.seed(id, result)
    }

    /// The whole state of view `id` after draining what changed, in the
    /// same hold of the views, so a copy of it stays exact under later
    /// changes; the host emits the drains first.
    pub fn view_snapshot(&self, id: u32, max_text: usize) -> Option<ViewSnapshot> {
        self.shared.views.snapshot(id, max_text)
    }

    /// What changed in view `id` since the last drain, at most about
    /// `max_text` bytes of message text; `Ok(None)` when nothing did.
    /// Unless `wait`, a reader busy folding into the views is not waited
    /// for: `Err(ViewBusy)`, try again later.
    pub fn drain_view(
        &self,
        id: u32,
        max_text: usize,
        wait: bool,
    ) -> Result<Option<Drained>, ViewBusy> {
        self.shared.views.drain(id, max_text, wait)
    }

    /// Fold a stored view (JSON text) into view `id` after what it holds;
    /// with `interrupted`, a notice marks the stored last prompt turn as
    /// cut. How many entries were restored; `None` if the view is gone or
    /// the JSON not valid.
    pub fn restore_view(&self, id: u32, stored: &str, interrupted: Option<&str>) -> Option<usize> {
        self.shared.views.restore(id, stored, interrupted)
    }

    /// The whole state of view `id` as one JSON text, with its revision,
    /// unless it is still at revision `since` (or the view is gone).
    pub fn view_json_since(&self, id: u32, since: u64) -> Option<(u64, String)> {
        self.shared.views.json_since(id, since)
    }

    /// Close view `id`: its session's updates are delivered one by one
    /// again. False if it was not open.
    pub fn close_view(&self, id: u32) -> bool {
        self.shared.views.close(id)
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
pub struct WeakConnection {
    shared: std::sync::Weak<Shared>,
    /// Only a line framer's state once the host has taken the fd.
    #[cfg(unix)]
    host_stdout: HostStdout,
}

impl WeakConnection {
    /// The connection, if it still exists.
    pub fn upgrade(&self) -> Option<Connection> {
        self.shared.upgrade().map(|shared| Connection {
            shared,
            #[cfg(unix)]
            host_stdout: Arc::clone(&self.host_stdout),
        })
    }

    /// Kill the agent if the connection still exists and is not done.
    pub fn kill(&self) {
        if let Some(conn) = self.upgrade() {
            if conn.shared.life.exit().is_none() {
                conn.kill();
            }
        }
    }
}
