//! The one place that knows about ThreadsafeFunction generics: batches of
//! JSON text go to a JS callback `(batch: string) => void`.

use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::{Env, Result, Status};

use acp_core::DeliverySink;

/// Weak: an idle connection does not keep Node alive; see [`JsBatchSink::set_ref`].
type BatchFn = ThreadsafeFunction<String, UnknownReturnValue, String, Status, false, true>;

pub struct JsBatchSink {
    tsfn: BatchFn,
}

impl JsBatchSink {
    pub fn new(callback: Function<String, UnknownReturnValue>) -> Result<Self> {
        let tsfn = callback
            .build_threadsafe_function::<String>()
            .callee_handled::<false>()
            .weak::<true>()
            .build()?;
        Ok(Self { tsfn })
    }

    /// Keep the Node event loop alive (`true`) while calls are pending, or
    /// let it exit (`false`), like `socket.ref()` / `socket.unref()`.
    pub fn set_ref(&self, env: &Env, keep_alive: bool) -> Result<()> {
        if self.tsfn.aborted() {
            return Ok(());
        }
        // SAFETY: called on the JS thread that owns the env and the tsfn.
        let status = unsafe {
            if keep_alive {
                napi::sys::napi_ref_threadsafe_function(env.raw(), self.tsfn.raw())
            } else {
                napi::sys::napi_unref_threadsafe_function(env.raw(), self.tsfn.raw())
            }
        };
        match status {
            napi::sys::Status::napi_ok => Ok(()),
            s => Err(napi::Error::new(
                Status::from(s),
                "cannot change the connection's ref",
            )),
        }
    }
}

impl DeliverySink for JsBatchSink {
    fn deliver(&self, batch: String) -> bool {
        self.tsfn
            .call(batch, ThreadsafeFunctionCallMode::NonBlocking)
            == Status::Ok
    }
}
