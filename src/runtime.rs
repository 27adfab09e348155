use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};

/// One small tokio runtime for every connection in this process. The work
/// is I/O-bound: one worker keeps reading off the JS thread, and keeping the
/// reader, delivery and writer tasks on one thread avoids cross-thread
/// wakeups, which cost a flood more than a second worker gains. File work
/// runs on the blocking pool.
pub fn handle() -> Handle {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("acp-native")
                .on_thread_park(acp_core::connection::worker_parked)
                .on_thread_start(crate::arena::reserve_on_first_thread)
                .enable_all()
                .build()
                .expect("cannot start the acp-native runtime")
        })
        .handle()
        .clone()
}
