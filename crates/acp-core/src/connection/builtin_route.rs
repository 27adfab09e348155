//! Agent requests the built-in handlers answer: in Rust, never through the
//! host. They sit in the incoming table like any other request, so
//! `$/cancel_request` and the end of the connection settle them the same
//! way (and stop the work); the handler timeout does not apply (a
//! `terminal/wait_for_exit` may rightly take long).

use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;

use super::shared::Shared;
use crate::acp::Reply;
use crate::builtin::{lower_thread_priority, BuiltinError, Cancel, Started};
use crate::rpc::{IncomingRequest, Timer};

/// Serve request `token` here if a built-in handles `method`; false leaves
/// it to the host. Called by the reader, in wire order.
pub(super) fn try_serve(
    shared: &Arc<Shared>,
    token: u64,
    method: &str,
    params: Option<&RawValue>,
) -> bool {
    if !shared.builtins.serves(method) {
        return false;
    }
    let params = params.map_or("null", RawValue::get);
    match shared.builtins.start(method, params) {
        Started::Done(reply) => answer(shared, token, reply),
        Started::Later(work) => {
            let task_shared = Arc::clone(shared);
            let task = shared.rt.spawn(async move {
                let reply = work.await;
                answer(&task_shared, token, reply);
            });
            // Whoever settles the request first stops the work (the task
            // taking its own entry is its last step: that abort is a no-op).
            shared
                .requests
                .incoming
                .set_timer(token, Timer::Task(task.abort_handle()));
        }
        Started::Blocking(work) => {
            let task_shared = Arc::clone(shared);
            let task = shared.rt.spawn(async move {
                let cancel = Cancel::default();
                // Aborted (cancelled, closed): the work sees the flag.
                let _raise = cancel.raise_on_drop();
                let jobs = task_shared.builtins.jobs();
                let Some(slot) = jobs.slot().await else {
                    return;
                };
                let job_shared = Arc::clone(&task_shared);
                let job_cancel = cancel.clone();
                // At the work's point of no return the request becomes the
                // work's own: a `$/cancel_request` after it finds it
                // answered, so -32800 always means the work was not done.
                let claimed = Arc::new(Mutex::new(None));
                let (claim_shared, claim_into) = (Arc::clone(&task_shared), Arc::clone(&claimed));
                cancel.on_commit(move || match claim_shared.requests.incoming.take(token) {
                    Some(req) => {
                        *claim_into.lock().unwrap_or_else(|e| e.into_inner()) = Some(req);
                        true
                    }
                    None => false,
                });
                // The reply is built and written from the blocking thread
                // too: tens of megabytes of JSON never touch the worker
                // every connection shares.
                let job = jobs.run(slot, move |mut slot| {
                    lower_thread_priority();
                    if job_cancel.requested() {
                        return;
                    }
                    slot.begin(&job_cancel);
                    let reply =
                        work(&job_cancel).map_or_else(BuiltinError::into_reply, Reply::Result);
                    // An agent slow to read its reply holds its own slot,
                    // not the machine's CPU share.
                    job_cancel.end_cpu_share();
                    // Backpressure, not loss: a big reply waits (holding
                    // its slot) for an agent slow to read its stdin, until
                    // the connection ends. Not until `job_cancel`: taking
                    // the entry aborts the waiting task, which raises it.
                    let claimed = claimed.lock().unwrap_or_else(|e| e.into_inner()).take();
                    let req = match claimed {
                        Some(req) => Some(logged(&job_shared, req, &reply)),
                        None => take_answered(&job_shared, token, &reply),
                    };
                    if let Some(req) = req {
                        job_shared.send_reply_waiting(&req, reply);
                    }
                });
                let failed = match job {
                    Ok(job) => job
                        .await
                        .err()
                        .map(|e| BuiltinError::internal(format!("the built-in failed: {e}"))),
                    Err(no_thread) => Some(no_thread),
                };
                if let Some(error) = failed {
                    answer(&task_shared, token, error.into_reply());
                }
            });
            shared
                .requests
                .incoming
                .set_timer(token, Timer::Task(task.abort_handle()));
        }
    }
    true
}

/// Taken already if the request was cancelled or the connection ended.
fn answer(shared: &Arc<Shared>, token: u64, reply: Reply) {
    if let Some(req) = take_answered(shared, token, &reply) {
        shared.send_reply(&req, reply);
    }
}

/// The request `reply` answers, unless it was settled already.
fn take_answered(shared: &Shared, token: u64, reply: &Reply) -> Option<IncomingRequest> {
    let req = shared.requests.incoming.take(token)?;
    Some(logged(shared, req, reply))
}

/// Refusals (an escape attempt among them) belong in the logs.
fn logged(shared: &Shared, req: IncomingRequest, reply: &Reply) -> IncomingRequest {
    if let Reply::Error { code, message, .. } = reply {
        tracing::warn!(pid = shared.pid(), method = %req.method, code, "built-in refused: {message}");
    }
    req
}
