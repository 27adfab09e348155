//! The one place that knows about ThreadsafeFunction generics: JSON text
//! goes to a JS callback `(text: string) => void`, from any thread.

use napi::bindgen_prelude::{Function, ToNapiValue};
use napi::threadsafe_function::{
    ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::{sys, Env, Result, Status};

use acp_core::connection::Batch;
use acp_core::DeliverySink;

/// Weak: it does not keep Node alive unless [`JsTextCallback::set_ref`] says so.
type TextFn = ThreadsafeFunction<JsText, UnknownReturnValue, JsText, Status, false, true>;

/// A string for JS. ASCII text (almost every batch: JSON escapes what is
/// not) is handed over as Latin-1, a plain copy, skipping V8's UTF-8 decode.
pub struct JsText {
    text: String,
    ascii: bool,
}

impl JsText {
    pub fn new(text: String) -> Self {
        let ascii = text.is_ascii();
        Self { text, ascii }
    }
}

impl From<Batch> for JsText {
    /// The core already knows whether the batch is ASCII.
    fn from(batch: Batch) -> Self {
        Self {
            text: batch.text,
            ascii: batch.ascii,
        }
    }
}

impl ToNapiValue for JsText {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let text = val.text;
        if !val.ascii {
            return String::to_napi_value(env, text);
        }
        let mut out = std::ptr::null_mut();
        let status = sys::napi_create_string_latin1(
            env,
            text.as_ptr().cast(),
            text.len() as isize,
            &mut out,
        );
        if status != sys::Status::napi_ok {
            return Err(napi::Error::new(
                Status::from(status),
                "cannot create a JS string",
            ));
        }
        Ok(out)
    }
}

/// A JS function that takes one string, callable from any thread.
pub struct JsTextCallback {
    tsfn: TextFn,
}

impl JsTextCallback {
    pub fn new(callback: Function<String, UnknownReturnValue>) -> Result<Self> {
        let tsfn = callback
            .build_threadsafe_function::<JsText>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(|ctx: ThreadsafeCallContext<JsText>| Ok(ctx.value))?;
        Ok(Self { tsfn })
    }

    /// Queue a call on the JS thread; false once JS is gone.
    pub fn send(&self, text: JsText) -> bool {
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
    fn deliver(&self, batch: Batch) -> bool {
        self.0.send(batch.into())
    }
}
