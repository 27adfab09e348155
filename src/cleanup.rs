//! One environment cleanup hook per JS thread (main or worker) kills the
//! agents still running when that environment goes away. Connections
//! register here and leave when they are done or collected, so nothing
//! accumulates for the life of the process (a hook per connection would:
//! napi cannot free a removed hook's data).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use acp_core::connection::WeakConnection;
use napi::Env;

thread_local! {
    /// Live connections of this thread's environment, by registration key.
    static LIVE: RefCell<HashMap<u64, WeakConnection>> = RefCell::new(HashMap::new());
    static NEXT_KEY: Cell<u64> = const { Cell::new(1) };
    static HOOKED: Cell<bool> = const { Cell::new(false) };
}

/// Register a connection; returns the key to [`forget`] it with.
pub fn register(env: &Env, conn: WeakConnection) -> napi::Result<u64> {
    if !HOOKED.get() {
        env.add_env_cleanup_hook((), |()| {
            // The environment is going away (worker exit, natural exit):
            // kill synchronously, nothing asynchronous will run after.
            let live = LIVE.with_borrow_mut(std::mem::take);
            for conn in live.values() {
                conn.kill();
            }
            HOOKED.set(false);
        })?;
        HOOKED.set(true);
    }
    let key = NEXT_KEY.get();
    NEXT_KEY.set(key + 1);
    LIVE.with_borrow_mut(|live| live.insert(key, conn));
    Ok(key)
}

/// The connection is done (its agent exited) or was collected.
pub fn forget(key: u64) {
    // During thread teardown the registry may already be gone.
    let _ = LIVE.try_with(|live| live.borrow_mut().remove(&key));
}

/// Connections still registered on this thread (for tests of the binding).
pub fn live_count() -> usize {
    LIVE.with_borrow(HashMap::len)
}
