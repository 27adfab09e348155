//! Unix: the agent's stdout polled on the host's event loop
//! (a libuv poll handle on Node's loop), each readable turn one read by the
//! core on this thread (`Connection::host_read`), its batch dispatched at
//! once. Stopping is immediate: the read happens under the core's lock, so
//! the core can take the fd between two reads (a flood, the agent's exit)
//! and the next turn finds it gone and stops polling.

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::ptr;
use std::rc::Rc;

use acp_core::connection::Fed;
use acp_core::Connection;
use napi::bindgen_prelude::ToNapiValue;
use napi::sys;

use crate::sink::JsText;

// libuv, as Node exports it.
#[repr(C)]
struct UvLoop {
    _private: [u8; 0],
}
const UV_POLL: c_int = 8;
const UV_READABLE: c_int = 1;
type PollCb = unsafe extern "C" fn(handle: *mut c_void, status: c_int, events: c_int);
type CloseCb = unsafe extern "C" fn(handle: *mut c_void);
extern "C" {
    fn uv_handle_size(kind: c_int) -> usize;
    fn uv_poll_init(lp: *mut UvLoop, handle: *mut c_void, fd: c_int) -> c_int;
    fn uv_poll_start(handle: *mut c_void, events: c_int, cb: PollCb) -> c_int;
    fn uv_poll_stop(handle: *mut c_void) -> c_int;
    fn uv_close(handle: *mut c_void, cb: CloseCb);
    fn uv_ref(handle: *mut c_void);
    fn uv_unref(handle: *mut c_void);
}

/// What a poll turn needs; owned by the handle (its `data`, the first field
/// of every libuv handle), freed when the handle is closed.
struct Turn {
    env: sys::napi_env,
    conn: Connection,
    deliver: sys::napi_ref,
    context: sys::napi_async_context,
    polling: bool,
    /// Node waits for it when the environment goes (a worker's exit) with
    /// the handle still open: its loop must not close with it.
    env_gone: sys::napi_async_cleanup_hook_handle,
    closing: Rc<Cell<bool>>,
}

/// The poll handle; closed on drop, or when the environment goes.
pub struct HostPoll {
    handle: *mut c_void,
    closing: Rc<Cell<bool>>,
}

impl HostPoll {
    /// Poll `conn`'s stdout on `env`'s loop and hand each batch to
    /// `deliver`; None when the core reads stdout (or libuv refuses).
    ///
    /// # Safety
    /// On the JS thread of `env`, with `deliver` a function.
    pub unsafe fn start(
        env: sys::napi_env,
        conn: &Connection,
        deliver: sys::napi_value,
    ) -> Option<Self> {
        let fd = conn.host_stdout_fd()?;
        let mut lp: *mut sys::uv_loop_s = ptr::null_mut();
        if sys::napi_get_uv_event_loop(env, &mut lp) != sys::Status::napi_ok || lp.is_null() {
            return None;
        }
        let size = uv_handle_size(UV_POLL);
        // u64 words: a handle's alignment is a pointer's.
        let handle = Box::into_raw(vec![0u64; size.div_ceil(8)].into_boxed_slice()) as *mut c_void;
        if uv_poll_init(lp.cast(), handle, fd) != 0 {
            drop(Box::from_raw(ptr::slice_from_raw_parts_mut(
                handle as *mut u64,
                size.div_ceil(8),
            )));
            return None;
        }
        let mut deliver_ref = ptr::null_mut();
        sys::napi_create_reference(env, deliver, 1, &mut deliver_ref);
        let mut name = ptr::null_mut();
        sys::napi_create_string_utf8(
            env,
            c"acp-native:stdout".as_ptr(),
            usize::MAX as isize,
            &mut name,
        );
        let mut resource = ptr::null_mut();
        sys::napi_create_object(env, &mut resource);
        let mut context = ptr::null_mut();
        sys::napi_async_init(env, resource, name, &mut context);
        let closing = Rc::new(Cell::new(false));
        let turn = Box::new(Turn {
            env,
            conn: conn.clone(),
            deliver: deliver_ref,
            context,
            polling: false,
            env_gone: ptr::null_mut(),
            closing: Rc::clone(&closing),
        });
        let turn = Box::into_raw(turn);
        *(handle as *mut *mut Turn) = turn;
        sys::napi_add_async_cleanup_hook(env, Some(on_env_gone), handle, &mut (*turn).env_gone);
        let mut poll = Self { handle, closing };
        uv_unref(handle);
        conn.host_polls_stdout();
        poll.resume();
        Some(poll)
    }

    fn turn(&mut self) -> &mut Turn {
        debug_assert!(!self.closing.get());
        // SAFETY: set in `start`, freed only when the handle is closed,
        // which takes `self`; used on the JS thread only.
        unsafe { &mut **(self.handle as *mut *mut Turn) }
    }

    /// Poll again if the core gave the fd back (after a delivered batch).
    pub fn resume(&mut self) {
        if self.closing.get() {
            return;
        }
        let handle = self.handle;
        let turn = self.turn();
        if turn.polling || !turn.conn.stdout_on_host() {
            return;
        }
        // SAFETY: an open poll handle, on its loop's thread.
        turn.polling = unsafe { uv_poll_start(handle, UV_READABLE, on_readable) } == 0;
    }

    /// Keep Node's loop alive for stdout while `true`.
    pub fn set_ref(&self, on: bool) {
        if self.closing.get() {
            return;
        }
        // SAFETY: an open handle, on its loop's thread.
        unsafe {
            if on {
                uv_ref(self.handle);
            } else {
                uv_unref(self.handle);
            }
        }
    }
}

impl Drop for HostPoll {
    fn drop(&mut self) {
        if !self.closing.get() {
            // SAFETY: open, its turn too; `on_closed` frees both.
            unsafe { close(self.handle) }
        }
    }
}

/// Close the handle once (the host's drop or the environment's end).
unsafe fn close(handle: *mut c_void) {
    let turn = &mut **(handle as *mut *mut Turn);
    if turn.closing.replace(true) {
        return;
    }
    uv_poll_stop(handle);
    uv_close(handle, on_closed);
}

unsafe extern "C" fn on_env_gone(_hook: sys::napi_async_cleanup_hook_handle, handle: *mut c_void) {
    close(handle);
}

unsafe extern "C" fn on_closed(handle: *mut c_void) {
    let turn = Box::from_raw(*(handle as *mut *mut Turn));
    // Polled no more: the fd may go.
    turn.conn.close_host_stdout();
    sys::napi_remove_async_cleanup_hook(turn.env_gone);
    sys::napi_delete_reference(turn.env, turn.deliver);
    sys::napi_async_destroy(turn.env, turn.context);
    let words = uv_handle_size(UV_POLL).div_ceil(8);
    drop(Box::from_raw(ptr::slice_from_raw_parts_mut(
        handle as *mut u64,
        words,
    )));
}

unsafe extern "C" fn on_readable(handle: *mut c_void, _status: c_int, _events: c_int) {
    let turn = &mut **(handle as *mut *mut Turn);
    // An error status is read too: the read reports it.
    match turn.conn.host_read() {
        Fed::Batch(batch) => deliver(turn, batch.into()),
        Fed::Nothing => {}
        Fed::Full => {
            turn.polling = false;
            uv_poll_stop(handle);
        }
    }
}

/// Call `deliver(text)` as Node calls back from I/O: in a callback scope,
/// so that what the batch resolves runs right after (microtasks), and an
/// exception is the process's uncaught exception, as from any callback.
unsafe fn deliver(turn: &Turn, text: JsText) {
    let env = turn.env;
    let mut scope = ptr::null_mut();
    if sys::napi_open_handle_scope(env, &mut scope) != sys::Status::napi_ok {
        return;
    }
    let mut func = ptr::null_mut();
    let mut recv = ptr::null_mut();
    sys::napi_get_reference_value(env, turn.deliver, &mut func);
    sys::napi_get_global(env, &mut recv);
    if let Ok(arg) = JsText::to_napi_value(env, text) {
        let mut result = ptr::null_mut();
        let status = sys::napi_make_callback(env, turn.context, recv, func, 1, &arg, &mut result);
        if status == sys::Status::napi_pending_exception {
            let mut err = ptr::null_mut();
            sys::napi_get_and_clear_last_exception(env, &mut err);
            sys::napi_fatal_exception(env, err);
        }
    }
    sys::napi_close_handle_scope(env, scope);
}
