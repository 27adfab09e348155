//! Outside Linux: the process leads its own process group (Unix) or Job
//! Object (Windows, kill-on-close) and is signalled directly (also on Linux
//! with `ACP_NATIVE_PROCESS_TREE=group`). There is no
//! reaper: after a host SIGKILL, only Windows' job handle closing stops
//! the tree, and a group signalled right after its leader was reaped could
//! in principle be a reused id (see README, "Lifecycle guarantees").

use std::io;
use std::process::{ExitStatus, Stdio};

use tokio::process::{Child, Command};

use super::{Cwd, LaunchSpec, Launched, StdioShape};
use crate::transport::process_group::{signal_group, GroupSignal};
use crate::transport::spawn::SpawnError;

pub(super) struct Tree {
    pub pid: u32,
    child: Child,
}

impl Tree {
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// No reaper: nothing to wait for once the process was waited for.
    pub async fn gone(&mut self) {}
}

#[derive(Clone)]
pub(super) struct Control {
    pid: u32,
}

impl Control {
    pub fn terminate(&self) {
        signal_group(self.pid, GroupSignal::Terminate);
    }
    pub fn kill(&self) {
        signal_group(self.pid, GroupSignal::Kill);
    }
    pub fn release(&self) {
        self.kill();
    }
}

pub(super) fn launch(spec: &LaunchSpec<'_>) -> Result<Launched, SpawnError> {
    let mut cmd = Command::new(spec.program);
    cmd.args(spec.args).kill_on_drop(false);
    if spec.clear_env {
        cmd.env_clear();
    }
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    match &spec.cwd {
        Cwd::Inherit => {}
        Cwd::Path(path) => {
            cmd.current_dir(path);
        }
        #[cfg(unix)]
        Cwd::Dir { fd, .. } => {
            use std::os::fd::AsRawFd;
            let fd = fd.as_raw_fd();
            // SAFETY: fchdir is async-signal-safe; the descriptor stays
            // open (close-on-exec only) until the exec.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::fchdir(fd) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
    }
    match spec.stdio {
        StdioShape::Agent => {
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
        }
        StdioShape::Terminal => {
            cmd.stdin(Stdio::null()).stdout(Stdio::piped());
            merge_stderr_into_stdout(&mut cmd);
        }
    }
    configure_platform(&mut cmd);

    let fail = |source: io::Error| {
        let where_ = match &spec.cwd {
            Cwd::Path(cwd) if !cwd.is_dir() => format!(" in missing directory {}", cwd.display()),
            _ => String::new(),
        };
        SpawnError::new(spec.program, source, where_)
    };
    let mut child = cmd.spawn().map_err(fail)?;
    let pid = child.id().unwrap_or_default();
    #[cfg(windows)]
    if let Some(handle) = child.raw_handle() {
        crate::transport::process_group::windows_tree::adopt(pid, handle as _);
    }
    let stdin = child.stdin.take();
    let stderr = child.stderr.take();
    let Some(stdout) = child.stdout.take() else {
        return Err(fail(io::Error::other("stdio pipes were not created")));
    };
    if spec.stdio == StdioShape::Agent && (stdin.is_none() || stderr.is_none()) {
        return Err(fail(io::Error::other("stdio pipes were not created")));
    }
    Ok(Launched {
        tree: super::ProcessTree(super::TreeImpl::Group(Tree { pid, child })),
        control: super::TreeControl(super::ControlImpl::Group(Control { pid })),
        stdin,
        stdout,
        stderr,
    })
}

/// Both streams into one pipe, so the output interleaves exactly as the
/// command wrote it.
#[cfg(unix)]
fn merge_stderr_into_stdout(cmd: &mut Command) {
    cmd.stderr(Stdio::null());
    // SAFETY: runs in the forked child after its stdio is set up and before
    // exec; dup2 is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::dup2(1, 2) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Without `dup2` before exec: two pipes, merged in arrival order.
#[cfg(not(unix))]
fn merge_stderr_into_stdout(cmd: &mut Command) {
    cmd.stderr(Stdio::piped());
}

/// Its own process group on Unix (so a signal reaches what it started);
/// on Linux also killed when the spawning thread dies.
#[cfg(unix)]
fn configure_platform(cmd: &mut Command) {
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: the closure runs in the forked child before exec and only
    // calls async-signal-safe functions (prctl, getppid, kill, getpid).
    unsafe {
        let parent = libc::getpid();
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            // The parent may have died between fork and prctl.
            if libc::getppid() != parent {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            Ok(())
        });
    }
}

#[cfg(windows)]
fn configure_platform(cmd: &mut Command) {
    // CREATE_NEW_PROCESS_GROUP: console signals aimed at the host do not
    // reach the agent; the tree is stopped explicitly instead.
    cmd.creation_flags(0x0000_0200);
}

#[cfg(not(any(unix, windows)))]
fn configure_platform(_cmd: &mut Command) {}
