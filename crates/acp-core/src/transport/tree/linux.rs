//! Starting a process tree on Linux: the host forks a reaper (no exec),
//! which starts the process and owns everything below it; see `reaper`.
//!
//! The host keeps two pipe ends: the lifeline (commands to the reaper;
//! its end-of-file, which the kernel delivers however the host dies, means
//! "kill everything") and the status pipe (the started pid, then its exit
//! status). It never signals a pid itself.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::watch;

use super::program::{child_env, ExecPlan};
use super::reaper::{self, decode, Fds, Plan, RECORD};
use super::{Cwd, LaunchSpec, Launched, StdioShape};
use crate::transport::spawn::SpawnError;

/// The host's side of one reaper.
pub(super) struct Tree {
    pub pid: u32,
    exit: watch::Receiver<Option<Option<ExitStatus>>>,
}

impl Tree {
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self.exit.wait_for(Option::is_some).await {
            Ok(v) => v
                .flatten()
                .ok_or_else(|| io::Error::other("the reaper ended early")),
            Err(_) => Err(io::Error::other("the reaper ended early")),
        }
    }

    /// Resolves once the reaper has exited (after killing what was left
    /// of the tree) and was reaped: `follow` drops the sender then.
    pub async fn gone(&mut self) {
        while self.exit.changed().await.is_ok() {}
    }
}

/// The lifeline's write end; closing it (the last clone dropped, or
/// [`Control::release`]) tells the reaper to kill everything.
#[derive(Clone)]
pub(super) struct Control(Arc<Mutex<Option<OwnedFd>>>);

impl Control {
    /// One byte, non-blocking, allocation-free: safe from exit hooks.
    fn send(&self, cmd: u8) {
        let fd = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(fd) = fd.as_ref() {
            // SAFETY: a write of one byte from a live buffer to our own fd,
            // kept open by the lock.
            unsafe {
                libc::write(fd.as_raw_fd(), (&cmd as *const u8).cast(), 1);
            }
        }
    }
    pub fn terminate(&self) {
        self.send(reaper::CMD_TERMINATE);
    }
    pub fn kill(&self) {
        self.send(reaper::CMD_KILL);
    }
    pub fn release(&self) {
        self.kill();
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

fn pipe_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: pipe2 fills two fresh descriptors, owned from here on.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

fn open_dir(path: &CString) -> io::Result<OwnedFd> {
    // SAFETY: a valid C string; the result is checked.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
}

/// A 64 KiB pipe makes a flooding agent and the reader take turns 256
/// small lines at a time; 1 MiB (the unprivileged maximum) lets each side
/// run longer per wakeup. Best effort: the default still works.
fn widen_pipe(fd: RawFd) {
    const PIPE_BYTES: libc::c_int = 1 << 20;
    // SAFETY: fcntl on a pipe fd we own; failure is harmless.
    unsafe {
        libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES);
    }
}

pub(super) fn launch(spec: &LaunchSpec<'_>) -> Result<Launched, SpawnError> {
    let fail = |source: io::Error, where_: String| SpawnError::new(spec.program, source, where_);
    let plain = |source: io::Error| fail(source, String::new());

    let cwd = match &spec.cwd {
        Cwd::Inherit => open_dir(&CString::from(c".")).map_err(plain)?,
        Cwd::Path(path) => {
            let c = CString::new(path.as_os_str().as_encoded_bytes())
                .map_err(|_| plain(io::Error::from_raw_os_error(libc::EINVAL)))?;
            open_dir(&c)
                .map_err(|e| fail(e, format!(" in missing directory {}", path.display())))?
        }
        Cwd::Dir { fd, .. } => fd.try_clone().map_err(plain)?,
    };
    let env = child_env(spec.clear_env, spec.env);
    let exec = ExecPlan::new(spec.program, spec.args, env, cwd.as_raw_fd()).map_err(plain)?;

    let (stdin_child, stdin_host) = match spec.stdio {
        StdioShape::Agent => {
            let (r, w) = pipe_pair().map_err(plain)?;
            (r, Some(w))
        }
        StdioShape::Terminal => (open_dev_null().map_err(plain)?, None),
    };
    let (out_host, out_child) = pipe_pair().map_err(plain)?;
    let (err_host, err_child) = match spec.stdio {
        StdioShape::Agent => {
            let (r, w) = pipe_pair().map_err(plain)?;
            (Some(r), Some(w))
        }
        StdioShape::Terminal => (None, None),
    };
    let (life_child, life_host) = pipe_pair().map_err(plain)?;
    let (status_host, status_child) = pipe_pair().map_err(plain)?;
    let plan = Plan {
        path: exec.path.as_ptr(),
        argv: exec.argv.as_ptr(),
        envp: exec.envp.as_ptr(),
        fds: Fds {
            stdin: stdin_child.as_raw_fd(),
            stdout: out_child.as_raw_fd(),
            stderr: err_child.as_ref().unwrap_or(&out_child).as_raw_fd(),
            lifeline: life_child.as_raw_fd(),
            status: status_child.as_raw_fd(),
            cwd: cwd.as_raw_fd(),
        },
        subreaper: !spec.keep_detached,
    };

    let reaper_pid = fork_reaper(&plan).map_err(plain)?;
    drop((
        stdin_child,
        out_child,
        err_child,
        life_child,
        status_child,
        cwd,
    ));

    // The reaper answers once the process has exec'd (or failed to).
    let mut first = [0u8; RECORD];
    let got = read_blocking(status_host.as_raw_fd(), &mut first);
    let (tag, value) = decode(&first);
    if got != RECORD || tag != reaper::TAG_STARTED {
        reap_now(reaper_pid);
        let source = if got == RECORD {
            io::Error::from_raw_os_error(value)
        } else {
            io::Error::other("the reaper process ended before starting the command")
        };
        let where_ = match (tag, &spec.cwd) {
            (reaper::TAG_CWD_FAILED, Cwd::Dir { path, .. } | Cwd::Path(path)) => {
                format!(" in directory {}", path.display())
            }
            (reaper::TAG_SETUP_FAILED, _) => " (setting up its reaper)".to_string(),
            _ => String::new(),
        };
        return Err(fail(source, where_));
    }
    let pid = value as u32;

    set_nonblocking(life_host.as_raw_fd());
    widen_pipe(out_host.as_raw_fd());
    let io = |e: io::Error| plain(e);
    let status = pipe::Receiver::from_owned_fd(status_host).map_err(io)?;
    let (exit_tx, exit) = watch::channel(None);
    tokio::spawn(follow(status, reaper_pid, exit_tx));

    let stdin = match stdin_host {
        Some(w) => Some(ChildStdin::from_std(std::process::ChildStdin::from(w)).map_err(io)?),
        None => None,
    };
    let stdout = ChildStdout::from_std(std::process::ChildStdout::from(out_host)).map_err(io)?;
    let stderr = match err_host {
        Some(r) => Some(ChildStderr::from_std(std::process::ChildStderr::from(r)).map_err(io)?),
        None => None,
    };
    Ok(Launched {
        tree: super::ProcessTree(super::TreeImpl::Reaper(Tree { pid, exit })),
        control: super::TreeControl(super::ControlImpl::Reaper(Control(Arc::new(Mutex::new(
            Some(life_host),
        ))))),
        stdin,
        stdout,
        stderr,
    })
}

fn open_dev_null() -> io::Result<OwnedFd> {
    // SAFETY: a constant C string; the result is checked.
    let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Fork the reaper with every signal blocked: a host handler must not run
/// in the copy before it has reset them.
fn fork_reaper(plan: &Plan) -> io::Result<libc::pid_t> {
    // SAFETY: the child runs only `reaper::run`, which never returns and
    // makes raw system calls only; the parent restores its signal mask.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::fork();
        if pid == 0 {
            reaper::run(plan);
        }
        let err = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid < 0 {
            return Err(err);
        }
        Ok(pid)
    }
}

fn read_blocking(fd: RawFd, buf: &mut [u8; RECORD]) -> usize {
    let mut got = 0;
    while got < RECORD {
        // SAFETY: reading into the unfilled rest of `buf`.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), RECORD - got) };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            break;
        }
        got += n as usize;
    }
    got
}

/// Reap the reaper (it is exiting or has exited).
fn reap_now(pid: libc::pid_t) {
    // SAFETY: our own child, not reaped yet.
    unsafe {
        while libc::waitpid(pid, std::ptr::null_mut(), 0) < 0
            && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
        {}
    }
}

/// Read the reaper's reports until it exits, then reap it.
async fn follow(
    mut status: pipe::Receiver,
    reaper_pid: libc::pid_t,
    exit: watch::Sender<Option<Option<ExitStatus>>>,
) {
    use std::os::unix::process::ExitStatusExt;
    let mut rec = [0u8; RECORD];
    while status.read_exact(&mut rec).await.is_ok() {
        if let (reaper::TAG_EXITED, raw) = decode(&rec) {
            exit.send_replace(Some(Some(ExitStatus::from_raw(raw))));
        }
    }
    if exit.borrow().is_none() {
        exit.send_replace(Some(None));
    }
    // The reaper closes the pipe only by exiting.
    let _ = tokio::task::spawn_blocking(move || reap_now(reaper_pid)).await;
}
