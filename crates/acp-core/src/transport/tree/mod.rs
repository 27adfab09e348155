//! A process we start and everything it starts, as one unit that dies
//! with the host and is only ever signalled while provably ours.
//!
//! Linux: a per-process reaper forked from the host (see `linux`,
//! `reaper`). Elsewhere: the process leads its own process group (a Job
//! Object on Windows), signalled directly; see `fallback` and README.

mod fallback;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod procfs;
#[cfg(target_os = "linux")]
mod program;
#[cfg(target_os = "linux")]
mod reaper;
#[cfg(target_os = "linux")]
mod takeover;
#[cfg(all(test, target_os = "linux"))]
mod test_support;

use std::io;
use std::path::Path;
use std::process::ExitStatus;

use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use super::spawn::SpawnError;

/// Which pipes the process gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdioShape {
    /// stdin, stdout and stderr each piped to the host.
    Agent,
    /// stdin from /dev/null, stderr into the same pipe as stdout.
    Terminal,
}

/// Where the process starts.
pub enum Cwd<'a> {
    /// The host's current directory.
    Inherit,
    /// A path, looked up when the process is started.
    Path(&'a Path),
    /// A directory already opened (and checked) by the caller: the process
    /// enters this very directory, whatever the path names by then.
    #[cfg(unix)]
    Dir {
        fd: std::os::fd::OwnedFd,
        /// For messages only.
        path: &'a Path,
    },
}

/// What to start.
pub struct LaunchSpec<'a> {
    /// Run directly (no shell); a bare name is looked up on the child's PATH.
    pub program: &'a str,
    pub args: &'a [String],
    /// Windows: put `args` on the command line as they are, unquoted (for
    /// cmd.exe, which parses its line itself). Ignored elsewhere.
    pub verbatim_args: bool,
    /// Set over the host's environment (or an empty one), a later entry
    /// winning.
    pub env: &'a [(String, String)],
    pub clear_env: bool,
    pub cwd: Cwd<'a>,
    pub stdio: StdioShape,
    /// Leave processes that left the tree (`setsid` daemons) running when
    /// the tree is killed. Default: they go too.
    pub keep_detached: bool,
}

/// A started tree, its handles and its pipes.
pub struct Launched {
    pub tree: ProcessTree,
    pub control: TreeControl,
    pub stdin: Option<ChildStdin>,
    pub stdout: ChildStdout,
    pub stderr: Option<ChildStderr>,
}

/// What went wrong with the process that guards the tree (the Linux
/// reaper), for the exit report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeTrouble {
    /// The reaper did not act on a kill within its grace (`stopped`: it
    /// was stopped, typically by what it runs): the host killed the tree
    /// itself.
    Unresponsive { stopped: bool },
    /// The reaper was killed by someone else, by `signal`: the started
    /// process died with it, but what that process started was left to
    /// the system. `escaped`: the live processes that may be those.
    Killed { signal: i32, escaped: Vec<Escaped> },
}

/// A process that may have outlived its tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escaped {
    pub pid: u32,
    pub command: String,
}

/// Start `spec`. Must run inside a tokio runtime.
pub fn launch(spec: &LaunchSpec<'_>) -> Result<Launched, SpawnError> {
    #[cfg(target_os = "linux")]
    if reaper_enabled() {
        return linux::launch(spec);
    }
    fallback::launch(spec)
}

/// `ACP_NATIVE_PROCESS_TREE=group` (read once) starts plain process
/// groups on Linux too: to measure what the reaper costs, or as an escape
/// hatch on a system where forking the host misbehaves.
#[cfg(target_os = "linux")]
fn reaper_enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED
        .get_or_init(|| std::env::var_os("ACP_NATIVE_PROCESS_TREE").is_none_or(|v| v != "group"))
}

enum TreeImpl {
    #[cfg(target_os = "linux")]
    Reaper(linux::Tree),
    Group(fallback::Tree),
}

#[derive(Clone)]
enum ControlImpl {
    #[cfg(target_os = "linux")]
    Reaper(linux::Control),
    Group(fallback::Control),
}

/// Waits for the started process.
pub struct ProcessTree(TreeImpl);

impl ProcessTree {
    /// The started process's pid (also its process group id). For reports
    /// only: never signal it directly, use [`TreeControl`].
    pub fn pid(&self) -> u32 {
        match &self.0 {
            #[cfg(target_os = "linux")]
            TreeImpl::Reaper(t) => t.pid,
            TreeImpl::Group(t) => t.pid,
        }
    }

    /// Resolves when the started process has exited (what it started may
    /// still run: [`TreeControl::kill`] ends that).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match &mut self.0 {
            #[cfg(target_os = "linux")]
            TreeImpl::Reaper(t) => t.wait().await,
            TreeImpl::Group(t) => t.wait().await,
        }
    }

    /// What went wrong with the tree's reaper, known once [`Self::gone`]
    /// resolved. None in group mode.
    pub fn trouble(&self) -> Option<TreeTrouble> {
        match &self.0 {
            #[cfg(target_os = "linux")]
            TreeImpl::Reaper(t) => t.trouble(),
            TreeImpl::Group(_) => None,
        }
    }

    /// Resolves once the tree is released ([`TreeControl::release`], or
    /// the last control dropped) and its leader reaped: on Linux the
    /// reaper killed the rest and was reaped; in group mode the group was
    /// killed and the leader, kept a zombie until then, reaped.
    pub async fn gone(&mut self) {
        match &mut self.0 {
            #[cfg(target_os = "linux")]
            TreeImpl::Reaper(t) => t.gone().await,
            TreeImpl::Group(t) => t.gone().await,
        }
    }
}

/// Stops the tree. Cheap to clone; dropping the last clone releases the
/// tree as [`TreeControl::release`] does.
#[derive(Clone)]
pub struct TreeControl(ControlImpl);

impl TreeControl {
    /// SIGTERM to the started process's group.
    pub fn terminate(&self) {
        match &self.0 {
            #[cfg(target_os = "linux")]
            ControlImpl::Reaper(c) => c.terminate(),
            ControlImpl::Group(c) => c.terminate(),
        }
    }

    /// SIGKILL to everything in the tree. Synchronous (safe from exit
    /// hooks); the exit status is still reported. Allocation-free unless
    /// the Linux reaper is stopped: the host then kills the tree itself.
    pub fn kill(&self) {
        match &self.0 {
            #[cfg(target_os = "linux")]
            ControlImpl::Reaper(c) => c.kill(),
            ControlImpl::Group(c) => c.kill(),
        }
    }

    /// [`TreeControl::kill`], and let go of the tree: later calls do
    /// nothing. (On Linux this closes the lifeline, one descriptor.)
    pub fn release(&self) {
        match &self.0 {
            #[cfg(target_os = "linux")]
            ControlImpl::Reaper(c) => c.release(),
            ControlImpl::Group(c) => c.release(),
        }
    }
}
