use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use acp_core::rpc::RequestId;
use acp_core::{Connection, ConnectionConfig};
use napi::bindgen_prelude::{External, Function};
use napi::threadsafe_function::UnknownReturnValue;
use napi::Env;
use napi_derive::napi;

use crate::cleanup;
use crate::errors::{call_error, spawn_error, Result};
use crate::options::ConnectionOptions;
use crate::runtime;
use crate::sink::{JsBatchSink, JsText, JsTextCallback};
use acp_core::view::DrainText;

/// Low-level connection to one agent process. Use `AcpClient` from the
/// package instead; this class is its engine and may change.
///
/// Everything the agent says arrives at `onBatch` as a JSON array of items
/// (see `acp_core::connection::Event`); the callback must call `ack()`
/// once per batch when done with it.
#[napi]
pub struct AgentConnection {
    pub(crate) conn: Connection,
    sink: Arc<JsBatchSink>,
    /// Registration with the environment's cleanup hook.
    cleanup_key: u64,
    /// stdout polled on this thread (`readStdoutHere`).
    #[cfg(unix)]
    poll: std::cell::RefCell<Option<crate::host_poll::HostPoll>>,
}

impl Drop for AgentConnection {
    fn drop(&mut self) {
        cleanup::forget(self.cleanup_key);
        // Its views, history and buffers go with it.
        crate::trim::soon();
    }
}

#[napi]
impl AgentConnection {
    /// Spawn the agent. Throws an error with `code: 'ERR_ACP_SPAWN'` (and
    /// the OS error name, e.g. `ENOENT`, as `cause.message`) if it cannot.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        options: ConnectionOptions,
        on_batch: Function<String, UnknownReturnValue>,
    ) -> Result<Self> {
        let sink = Arc::new(JsBatchSink(
            JsTextCallback::new(on_batch).map_err(crate::errors::internal)?,
        ));
        let config: ConnectionConfig = options.into();
        let conn =
            Connection::spawn(config, sink.clone(), &runtime::handle()).map_err(spawn_error)?;
        let cleanup_key =
            cleanup::register(&env, conn.downgrade()).map_err(crate::errors::internal)?;
        Ok(Self {
            conn,
            sink,
            cleanup_key,
            #[cfg(unix)]
            poll: Default::default(),
        })
    }

    /// Send a request; returns its id. `params` is JSON text.
    #[napi]
    pub fn request(
        &self,
        method: String,
        params: Option<String>,
        timeout_ms: Option<f64>,
    ) -> Result<i64> {
        let timeout = timeout_ms.and_then(crate::options::millis);
        self.conn
            .request(&method, params.as_deref(), timeout)
            .map(|id| id.get() as i64)
            .map_err(call_error)
    }

    #[napi]
    pub fn notify(&self, method: String, params: Option<String>) -> Result<()> {
        self.conn
            .notify(&method, params.as_deref())
            .map_err(call_error)
    }

    /// Stop waiting for request `id`; with `notifyAgent`, send `$/cancel_request`.
    #[napi]
    pub fn abandon(&self, id: i64, notify_agent: bool) -> bool {
        self.conn.abandon(RequestId::new(id as u64), notify_agent)
    }

    /// Answer agent request `token` with a result (JSON text).
    #[napi]
    pub fn respond(&self, token: i64, result: String) -> bool {
        self.conn.respond(token as u64, &result)
    }

    /// Answer agent request `token` with a JSON-RPC error.
    #[napi]
    pub fn respond_error(
        &self,
        token: i64,
        code: i64,
        message: String,
        data: Option<String>,
    ) -> bool {
        self.conn
            .respond_error(token as u64, code, &message, data.as_deref())
    }

    /// The agent's full params (JSON text) of request `token` while it
    /// waits, when its handler was given them cut; null otherwise.
    #[napi]
    pub fn full_params(&self, token: i64) -> Option<String> {
        self.conn.full_params(token as u64).map(|p| p.to_string())
    }

    /// The full result (JSON text) of our request `id` whose answer came
    /// cut (`{resultBytes, result}`), taken once: as an opaque handle that
    /// holds the text until it is collected (V8 is told its size), read
    /// with `fullResultText`. Null if there is none (taken, or released).
    #[napi]
    pub fn take_full_result(&self, id: i64) -> Option<External<FullResult>> {
        let text = self.conn.take_full_result(RequestId::new(id as u64))?;
        let size = text.len();
        Some(External::new_with_size_hint(FullResult::new(text), size))
    }

    /// Answer agent request `token` with the error the host chose (a thrown
    /// `RpcError`): as it is, except that a permission or elicitation
    /// request gets its cancelled outcome (the core's rule).
    #[napi]
    pub fn respond_chosen_error(
        &self,
        token: i64,
        code: i64,
        message: String,
        data: Option<String>,
    ) -> bool {
        self.conn
            .respond_chosen_error(token as u64, code, &message, data.as_deref())
    }

    /// `session/cancel` plus cancelled answers to the session's open requests.
    #[napi]
    pub fn cancel_session(&self, session_id: String) -> Result<u32> {
        self.conn
            .cancel_session(&session_id)
            .map(|n| n as u32)
            .map_err(call_error)
    }

    /// One delivered batch has been processed.
    #[napi]
    pub fn ack(&self) {
        self.conn.ack();
    }

    /// Graceful stop; the `exit` item reports the end.
    #[napi]
    pub fn close(&self) {
        self.conn.close();
    }

    /// SIGKILL the agent's process group now (synchronous).
    #[napi]
    pub fn kill(&self) {
        self.conn.kill();
    }

    /// `readOnHost` (Linux, macOS): read the agent's stdout on this
    /// thread's event loop while the agent is quiet, the core's reader
    /// thread reading while it floods (and at its exit). Batches read here
    /// go to `deliver` (as if `onBatch` had them, without an `ack`); call
    /// `resumeStdout()` after each `onBatch` call. False when the core reads.
    #[napi]
    pub fn read_stdout_here(
        &self,
        env: Env,
        deliver: Function<String, UnknownReturnValue>,
    ) -> bool {
        #[cfg(unix)]
        {
            let mut poll = self.poll.borrow_mut();
            if poll.is_none() {
                // SAFETY: on the JS thread, `deliver` is a function.
                *poll = unsafe {
                    crate::host_poll::HostPoll::start(
                        env.raw(),
                        &self.conn,
                        napi::JsValue::raw(&deliver),
                    )
                };
            }
            poll.is_some()
        }
        #[cfg(not(unix))]
        {
            let _ = (env, deliver);
            false
        }
    }

    /// Read here again if the core gave stdout back.
    #[napi]
    pub fn resume_stdout(&self) {
        #[cfg(unix)]
        if let Some(poll) = self.poll.borrow_mut().as_mut() {
            poll.resume();
        }
    }

    /// Whether reading stdout here keeps Node alive.
    #[napi]
    pub fn ref_stdout(&self, on: bool) {
        #[cfg(unix)]
        if let Some(poll) = self.poll.borrow().as_ref() {
            poll.set_ref(on);
        }
        #[cfg(not(unix))]
        let _ = on;
    }

    /// Stop reading stdout here (the agent is gone): the core reads it.
    #[napi]
    pub fn stop_stdout(&self) {
        #[cfg(unix)]
        drop(self.poll.borrow_mut().take());
    }

    /// Keep Node alive while `true` (pending calls), let it exit when `false`.
    #[napi]
    pub fn set_ref(&self, env: Env, keep_alive: bool) -> napi::Result<()> {
        self.sink.0.set_ref(&env, keep_alive)
    }

    /// The agent is gone and the host is done with it (the exit item was
    /// delivered): leave the environment's cleanup hook and let `onBatch`
    /// go, so that this object and the host's state it leads to can be
    /// collected (idempotent).
    #[napi]
    pub fn release(&self) {
        cleanup::forget(self.cleanup_key);
        self.sink.0.release();
        self.conn.forget_full_results();
    }

    /// The last bytes the agent wrote to stderr (`stderrTailBytes`), read
    /// from the same ring as the exit report's.
    #[napi]
    pub fn stderr_tail(&self) -> String {
        self.conn.stderr_tail()
    }

    #[napi(getter)]
    pub fn pid(&self) -> u32 {
        self.conn.pid()
    }

    /// The exit report as JSON text, once the agent is gone.
    #[napi]
    pub fn exit_info(&self) -> Option<String> {
        self.conn.exit_info().map(|i| i.to_json())
    }

    /// The host registered (`true`) or dropped its own handler for an agent
    /// request method; a host handler wins over a built-in one.
    #[napi]
    pub fn set_host_handler(&self, method: String, handled: bool) {
        self.conn.set_host_handler(&method, handled);
    }

    /// Agent request methods the built-in fs/terminal handlers serve.
    #[napi]
    pub fn builtin_methods(&self) -> Vec<String> {
        self.conn
            .builtin_methods()
            .into_iter()
            .map(String::from)
            .collect()
    }

    /// Built-in terminals created and not yet released.
    #[napi(getter)]
    pub fn open_terminals(&self) -> u32 {
        self.conn.open_terminals() as u32
    }

    /// Recent wire messages, oldest first: a JSON array of trace records.
    #[napi]
    pub fn history_json(&self) -> String {
        self.conn.history_json()
    }

    /// Counters and pending requests by method, as JSON text.
    #[napi]
    pub fn status_json(&self) -> String {
        self.conn.status_json()
    }

    #[napi(getter)]
    pub fn noise_lines(&self) -> f64 {
        self.conn.noise_lines() as f64
    }
}

/// A full result the host was given cut (see
/// [`AgentConnection::take_full_result`]).
pub struct FullResult(Arc<String>);

/// Bytes of full results JS holds handles to.
static HELD_FULL_RESULT_BYTES: AtomicUsize = AtomicUsize::new(0);

impl FullResult {
    fn new(text: String) -> Self {
        HELD_FULL_RESULT_BYTES.fetch_add(text.len(), Ordering::Relaxed);
        Self(Arc::new(text))
    }
}

impl Drop for FullResult {
    fn drop(&mut self) {
        HELD_FULL_RESULT_BYTES.fetch_sub(self.0.len(), Ordering::Relaxed);
    }
}

/// Bytes of full results JS holds handles to (a string lent from one may
/// outlive it): for tests that they go with their results.
#[napi]
pub fn held_full_result_bytes() -> f64 {
    HELD_FULL_RESULT_BYTES.load(Ordering::Relaxed) as f64
}

/// The text of a full result handle: lent to V8 when ASCII (no copy; V8
/// reads the handle's bytes), else copied.
#[napi]
pub fn full_result_text(result: &External<FullResult>) -> JsText {
    let text = result.0.clone();
    let end = text.len();
    JsText::kept(DrainText::Shared {
        text,
        start: 0,
        end,
    })
}
