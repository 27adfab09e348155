//! The one place that knows about ThreadsafeFunction generics: JSON text
//! goes to a JS callback `(text: string) => void`, from any thread.

use napi::bindgen_prelude::{Function, ToNapiValue};
use napi::threadsafe_function::{
    ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use std::sync::{RwLock, RwLockReadGuard};

use napi::{sys, Env, Result, Status};

use acp_core::connection::{Batch, InTransit};
use acp_core::view::DrainText;
use acp_core::DeliverySink;

/// Weak: it does not keep Node alive unless [`JsTextCallback::set_ref`] says so.
type TextFn = ThreadsafeFunction<JsText, UnknownReturnValue, JsText, Status, false, true>;

/// A string for JS. ASCII text (almost every batch: JSON escapes what is
/// not) is handed over as Latin-1, a plain copy, skipping V8's UTF-8 decode.
pub struct JsText {
    /// Its own string, or a view's text shared with the view's entry.
    text: DrainText,
    ascii: bool,
    /// Lend a long ASCII text to V8 instead of copying it (see
    /// [`external_latin1`]): only for texts JS keeps, such as a view's
    /// message text. A short-lived one (a batch, parsed and dropped) would
    /// stay allocated until V8 collects its string, which V8 schedules by
    /// its own heap: a flood of batches would grow the peak RSS.
    lend: bool,
    /// A batch's: dropped when the JS thread takes it.
    in_transit: Option<InTransit>,
}

impl JsText {
    pub fn new(text: String) -> Self {
        let ascii = text.is_ascii();
        Self {
            text: DrainText::Owned(text),
            ascii,
            lend: false,
            in_transit: None,
        }
    }

    /// A text JS keeps (a view's message text): lent to V8 when long (see
    /// the `lend` field), shared with the view's entry when the drain
    /// shares it.
    pub fn kept(text: DrainText) -> Self {
        Self {
            ascii: text.as_str().is_ascii(),
            text,
            lend: true,
            in_transit: None,
        }
    }
}

impl From<Batch> for JsText {
    /// The core already knows whether the batch is ASCII.
    fn from(batch: Batch) -> Self {
        Self {
            text: DrainText::Owned(batch.text),
            ascii: batch.ascii,
            lend: false,
            in_transit: Some(batch.in_transit),
        }
    }
}

impl ToNapiValue for JsText {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let text = val.text;
        if !val.ascii {
            return match text {
                DrainText::Owned(text) => String::to_napi_value(env, text),
                shared => <&str>::to_napi_value(env, shared.as_str()),
            };
        }
        if val.lend && text.as_str().len() >= EXTERNAL_MIN_BYTES {
            match external_latin1(env, text) {
                Ok(value) => return Ok(value),
                Err(text) => return latin1_copy(env, text.as_str()),
            }
        }
        latin1_copy(env, text.as_str())
    }
}

/// Kept texts this long are lent to V8 rather than copied: a UI keeps
/// them, and a copy lives in V8's young generation, where every
/// collection until it is promoted copies it again, on the JS thread.
/// Lent, V8 moves a string header, not the text. Shorter ones cost more
/// to lend than to copy.
const EXTERNAL_MIN_BYTES: usize = acp_core::view::APART_MIN_BYTES;

/// Whether this Node has Node-API 10's external strings (Node ≥ 18.18 and
/// ≥ 20.4, experimental there), looked up once: napi-sys answers a call to
/// a function the host lacks with an error and a line on stderr. Set to
/// false as well if a call fails.
static EXTERNAL_STRINGS: std::sync::LazyLock<std::sync::atomic::AtomicBool> =
    std::sync::LazyLock::new(|| {
        std::sync::atomic::AtomicBool::new(host_has(b"node_api_create_external_string_latin1\0"))
    });

/// Whether the host process (node, electron) exports `symbol`.
fn host_has(symbol: &[u8]) -> bool {
    #[cfg(unix)]
    let host = libloading::os::unix::Library::this();
    #[cfg(windows)]
    let Ok(host) = libloading::os::windows::Library::this() else {
        return false;
    };
    // SAFETY: only looked up, never called through this pointer.
    unsafe { host.get::<unsafe extern "C" fn()>(symbol).is_ok() }
}

/// Lend `text` (ASCII) to V8 as an external Latin-1 string: V8 reads it in
/// place and the finalizer drops it (a shared text: this string's share).
/// Gives the text back when this Node cannot.
unsafe fn external_latin1(
    env: sys::napi_env,
    text: DrainText,
) -> std::result::Result<sys::napi_value, DrainText> {
    use std::sync::atomic::Ordering;
    if !EXTERNAL_STRINGS.load(Ordering::Relaxed) {
        return Err(text);
    }
    unsafe extern "C" fn free_text(
        env: napi::sys::node_api_basic_env,
        _data: *mut std::ffi::c_void,
        hint: *mut std::ffi::c_void,
    ) {
        let text = Box::from_raw(hint.cast::<DrainText>());
        let len = text.as_str().len();
        drop(text);
        external_memory(env.cast(), -(len as i64));
        crate::trim::freed(len);
    }
    // The bytes stay where they are when the box moves: a String's (or the
    // shared String's) heap buffer, never written again.
    let boxed = Box::new(text);
    let (ptr, len) = {
        let s = boxed.as_str();
        (s.as_ptr(), s.len())
    };
    let hint = Box::into_raw(boxed);
    // V8 sees a few bytes of string header: told of the text, it collects
    // these strings as their bytes add up, not only as its own heap does.
    external_memory(env, len as i64);
    let mut out = std::ptr::null_mut();
    let mut copied = false;
    let status = napi_sys::node_api_create_external_string_latin1(
        env,
        ptr.cast(),
        len as isize,
        Some(free_text),
        hint.cast(),
        &mut out,
        &mut copied,
    );
    if status != sys::Status::napi_ok {
        // Not taken: the text is still ours.
        EXTERNAL_STRINGS.store(false, Ordering::Relaxed);
        external_memory(env, -(len as i64));
        return Err(*Box::from_raw(hint));
    }
    // Taken, or copied and already freed by the finalizer.
    Ok(out)
}

/// Tell V8 that `change` bytes of native memory are now held (or, when
/// negative, let go) by JS values.
unsafe fn external_memory(env: sys::napi_env, change: i64) {
    let mut total = 0;
    sys::napi_adjust_external_memory(env, change, &mut total);
}

unsafe fn latin1_copy(env: sys::napi_env, text: &str) -> Result<sys::napi_value> {
    let mut out = std::ptr::null_mut();
    let status =
        sys::napi_create_string_latin1(env, text.as_ptr().cast(), text.len() as isize, &mut out);
    if status != sys::Status::napi_ok {
        return Err(napi::Error::new(
            Status::from(status),
            "cannot create a JS string",
        ));
    }
    Ok(out)
}

/// A JS function that takes one string, callable from any thread, until
/// [`JsTextCallback::release`].
pub struct JsTextCallback {
    /// A threadsafe function holds its JS function through a strong
    /// reference that V8 cannot trace: the callback leads back to the
    /// object holding this, so the pair is never collected until the
    /// function is released. A read lock for calls and refs: the JS
    /// thread's `setRef` must not wait for a delivery in progress.
    tsfn: RwLock<Option<TextFn>>,
}

impl JsTextCallback {
    pub fn new(callback: Function<String, UnknownReturnValue>) -> Result<Self> {
        let tsfn = callback
            .build_threadsafe_function::<JsText>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(|ctx: ThreadsafeCallContext<JsText>| {
                let mut text = ctx.value;
                // Taken by the JS thread: no longer on its way.
                drop(text.in_transit.take());
                Ok(text)
            })?;
        Ok(Self {
            tsfn: RwLock::new(Some(tsfn)),
        })
    }

    fn tsfn(&self) -> RwLockReadGuard<'_, Option<TextFn>> {
        self.tsfn.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue a call on the JS thread; false once JS is gone or the
    /// callback released.
    pub fn send(&self, text: JsText) -> bool {
        self.tsfn()
            .as_ref()
            .is_some_and(|f| f.call(text, ThreadsafeFunctionCallMode::NonBlocking) == Status::Ok)
    }

    /// Let the JS function go (calls already queued still run): nothing
    /// is sent after this.
    pub fn release(&self) {
        let tsfn = self.tsfn.write().unwrap_or_else(|e| e.into_inner()).take();
        drop(tsfn);
    }

    /// Keep the Node event loop alive (`true`) while calls are pending, or
    /// let it exit (`false`), like `socket.ref()` / `socket.unref()`.
    pub fn set_ref(&self, env: &Env, keep_alive: bool) -> Result<()> {
        let tsfn = self.tsfn();
        let Some(tsfn) = tsfn.as_ref().filter(|f| !f.aborted()) else {
            return Ok(());
        };
        // SAFETY: called on the JS thread that owns the env and the tsfn.
        let status = unsafe {
            if keep_alive {
                napi::sys::napi_ref_threadsafe_function(env.raw(), tsfn.raw())
            } else {
                napi::sys::napi_unref_threadsafe_function(env.raw(), tsfn.raw())
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
