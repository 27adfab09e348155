//! The one place that knows about ThreadsafeFunction generics: JSON text
//! goes to a JS callback `(text: string) => void`, from any thread.

use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::{Env, Result, Status};

use acp_core::DeliverySink;

/// Weak: it does not keep Node alive unless [`JsTextCallback::set_ref`] says so.
type TextFn = ThreadsafeFunction<String, UnknownReturnValue, String, Status, false, true>;

/// A JS function that takes one string, callable from any thread.
pub struct JsTextCallback {
    tsfn: TextFn,
}

impl JsTextCallback {
    pub fn new(callback: Function<String, UnknownReturnValue>) -> Result<Self> {
        let tsfn = callback
            .build_threadsafe_function::<String>()
            .callee_handled::<false>()
            .weak::<true>()
            .build()?;
        Ok(Self { tsfn })
    }

    /// Queue a call on the JS thread; false once JS is gone.
    pub fn send(&self, text: String) -> bool {
        self.tsfn
            .call(text, ThreadsafeFunctionCallMode::NonBlocking)
            == Status::Ok
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

/// Batches of a connection go to its `onBatch` callback.
pub struct JsBatchSink(pub JsTextCallback);

impl DeliverySink for JsBatchSink {
    fn deliver(&self, batch: String) -> bool {
        self.0.send(batch)
    }
}
