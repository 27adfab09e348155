//! Agent requests the built-in handlers answer: in Rust, never through the
//! host. They sit in the incoming table like any other request, so
//! `$/cancel_request` and the end of the connection settle them the same
//! way (and stop the work); the handler timeout does not apply (a
//! `terminal/wait_for_exit` may rightly take long).

use std::sync::Arc;

use serde_json::value::RawValue;

use super::shared::Shared;
use crate::acp::Reply;
use crate::builtin::Started;

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
            shared.incoming.set_timer(token, task.abort_handle());
        }
    }
    true
}

/// Taken already if the request was cancelled or the connection ended.
fn answer(shared: &Arc<Shared>, token: u64, reply: Reply) {
    if let Some(req) = shared.incoming.take(token) {
        if let Reply::Error { code, message, .. } = &reply {
            // Refusals (an escape attempt among them) belong in the logs.
            tracing::warn!(pid = shared.pid, method = %req.method, code, "built-in refused: {message}");
        }
        shared.send_reply(&req, reply);
    }
}
