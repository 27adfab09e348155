//! What the tree tests share: a spec for `sh -c <script>` as an agent,
//! and a bounded poll for a condition.

use std::time::Duration;

use super::{Cwd, LaunchSpec, StdioShape};

/// The arguments of `sh -c <script>`: kept by the caller, the spec borrows them.
pub fn sh_args(script: &str) -> [String; 2] {
    ["-c".to_string(), script.to_string()]
}

/// An agent-shaped `sh` with `args` (from [`sh_args`]), in the host's
/// environment and directory.
pub fn sh_spec(args: &[String]) -> LaunchSpec<'_> {
    LaunchSpec {
        program: "sh",
        args,
        verbatim_args: false,
        env: &[],
        clear_env: false,
        cwd: Cwd::Inherit,
        stdio: StdioShape::Agent,
        keep_detached: false,
    }
}

/// Polls `done` every 10 ms; panics naming `what` after 15 s.
pub async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..1500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not within 15 s: {what}");
}
