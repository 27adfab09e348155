use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};

/// One small tokio runtime for every connection in this process: the work
/// is I/O-bound, and two workers keep reading off the JS thread.
pub fn handle() -> Handle {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("acp-native")
                .enable_all()
                .build()
                .expect("cannot start the acp-native runtime")
        })
        .handle()
        .clone()
}
