use std::io;
use std::process::Stdio;

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use super::AgentCommand;

/// The agent could not be started.
#[derive(Debug, thiserror::Error)]
#[error("cannot spawn `{program}`{where_}: {source} ({errno})")]
pub struct SpawnError {
    pub program: String,
    /// `ENOENT`, `EACCES`, … (the Node convention), or `EIO` when unknown.
    pub errno: &'static str,
    where_: String,
    #[source]
    pub source: io::Error,
}

/// A running agent with its three pipes taken out.
pub struct SpawnedAgent {
    pub child: Child,
    pub pid: u32,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

/// Spawn the agent in its own process group (so that stopping it also stops
/// whatever it spawned) with all three stdio streams piped.
///
/// Must be called inside a tokio runtime context. On Linux the child also
/// gets `PR_SET_PDEATHSIG(SIGKILL)`: it dies with the thread that spawned
/// it, so call this from a thread that lives as long as the host.
pub fn spawn_agent(spec: &AgentCommand) -> Result<SpawnedAgent, SpawnError> {
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    if spec.clear_env {
        cmd.env_clear();
    }
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    configure_platform(&mut cmd);

    let fail = |source: io::Error| {
        let where_ = match &spec.cwd {
            Some(cwd) if !cwd.is_dir() => format!(" in missing directory {}", cwd.display()),
            _ => String::new(),
        };
        SpawnError {
            program: spec.program.clone(),
            errno: errno_name(&source),
            where_,
            source,
        }
    };
    let mut child = cmd.spawn().map_err(fail)?;
    let pid = child.id().unwrap_or_default();
    #[cfg(windows)]
    if let Some(handle) = child.raw_handle() {
        super::process_group::windows_tree::adopt(pid, handle as _);
    }
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(fail(io::Error::other("stdio pipes were not created")));
    };
    #[cfg(target_os = "linux")]
    widen_pipe(&stdout);
    Ok(SpawnedAgent {
        child,
        pid,
        stdin,
        stdout,
        stderr,
    })
}

/// A 64 KiB pipe makes a flooding agent and the reader take turns 256
/// small lines at a time; 1 MiB (the unprivileged maximum) lets each side
/// run longer per wakeup. Best effort: the default still works.
#[cfg(target_os = "linux")]
fn widen_pipe(stdout: &ChildStdout) {
    use std::os::fd::AsRawFd;
    const PIPE_BYTES: libc::c_int = 1 << 20;
    // SAFETY: fcntl on a pipe fd we own; failure is harmless.
    unsafe {
        libc::fcntl(stdout.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES);
    }
}

/// Put a command we are about to spawn in its own process tree (a process
/// group on Unix, tied to the host's life on Linux).
#[cfg(unix)]
pub(crate) fn configure_platform(cmd: &mut Command) {
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: the closure runs in the forked child before exec and only
    // calls async-signal-safe functions (prctl, getppid, raise).
    unsafe {
        let parent = libc::getpid();
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            // The parent may have died between fork and prctl.
            if libc::getppid() != parent {
                libc::raise(libc::SIGKILL);
            }
            Ok(())
        });
    }
}

#[cfg(windows)]
pub(crate) fn configure_platform(cmd: &mut Command) {
    // CREATE_NEW_PROCESS_GROUP: console signals aimed at the host do not
    // reach the agent; the tree is stopped explicitly instead.
    cmd.creation_flags(0x0000_0200);
}

#[cfg(not(any(unix, windows)))]
pub(crate) fn configure_platform(_cmd: &mut Command) {}

/// After spawning a command set up by [`configure_platform`]: on Windows,
/// put it in a kill-on-close job so `signal_group` can stop its tree.
pub(crate) fn adopt_spawned(child: &Child) {
    #[cfg(windows)]
    if let (Some(pid), Some(handle)) = (child.id(), child.raw_handle()) {
        super::process_group::windows_tree::adopt(pid, handle as _);
    }
    #[cfg(not(windows))]
    let _ = child;
}

fn errno_name(err: &io::Error) -> &'static str {
    match err.kind() {
        io::ErrorKind::NotFound => "ENOENT",
        io::ErrorKind::PermissionDenied => "EACCES",
        _ => match err.raw_os_error() {
            #[cfg(unix)]
            Some(libc::ENOEXEC) => "ENOEXEC",
            #[cfg(unix)]
            Some(libc::ENOTDIR) => "ENOTDIR",
            #[cfg(unix)]
            Some(libc::EMFILE) => "EMFILE",
            _ => "EIO",
        },
    }
}
