//! Starting a process tree on Linux: the host forks a reaper (no exec),
//! which starts the process and owns everything below it; see `reaper`.
//!
//! The host keeps two pipe ends: the lifeline (commands to the reaper;
//! its end-of-file, which the kernel delivers however the host dies, means
//! "kill everything") and the status pipe (the started pid, then its exit
//! status). It signals no pid of the tree itself while the reaper acts;
//! when the reaper does not (stopped by what it runs), see `takeover`.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::watch;

use super::procfs;
use super::program::{child_env, ExecPlan};
use super::reaper::{self, decode, Fds, Plan, RECORD};
use super::takeover::{self, Known};
use super::{Cwd, LaunchSpec, Launched, StdioShape, TreeTrouble};
use crate::transport::spawn::SpawnError;

/// How long the reaper may take to act on a kill before the host kills
/// the tree itself (see `takeover`). The reaper acts in microseconds; a
/// stopped one never does.
const REAPER_GRACE: Duration = Duration::from_millis(500);

/// The host's side of one reaper.
pub(super) struct Tree {
    pub pid: u32,
    exit: watch::Receiver<Option<Option<ExitStatus>>>,
    reaper: Arc<Reaper>,
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

    pub fn trouble(&self) -> Option<TreeTrouble> {
        lock(&self.reaper.trouble).clone()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One reaper as the host knows it, shared by the tree, its controls and
/// the two tasks that follow it.
struct Reaper {
    known: Known,
    /// True once reaped: from then on its pid may name anyone, so it is
    /// never signalled again (checked and set under this lock).
    reaped: Mutex<bool>,
    /// A kill was asked (a command, the lifeline closed): the reaper has
    /// [`REAPER_GRACE`] to end.
    kill_asked: watch::Sender<bool>,
    /// The reaper was reaped.
    done: watch::Sender<bool>,
    /// Set when the host killed the tree itself: the leader's wait status,
    /// if it could be read.
    forced: Mutex<Option<Option<i32>>>,
    trouble: Mutex<Option<TreeTrouble>>,
}

impl Reaper {
    /// Our child, while it is not reaped (async-signal-safe `kill`).
    fn signal(&self, sig: libc::c_int) {
        let reaped = lock(&self.reaped);
        if !*reaped {
            // SAFETY: our own unreaped child: its pid cannot be reused.
            unsafe { libc::kill(self.known.reaper, sig) };
        }
    }

    fn ask_kill(&self) {
        self.kill_asked.send_replace(true);
    }

    /// Blocks until the reaper has exited, reaps it: its wait status.
    fn reap(&self) -> Option<i32> {
        let pid = self.known.reaper;
        loop {
            // SAFETY: a zeroed siginfo_t is valid; waitid on our own child
            // leaves it unreaped (WNOWAIT), so no lock is held meanwhile.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let r = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if r == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break;
            }
        }
        let mut reaped = lock(&self.reaped);
        let mut status = 0;
        let got = loop {
            // SAFETY: our own child, which has exited: does not block.
            let r = unsafe { libc::waitpid(pid, &mut status, 0) };
            if r >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break r;
            }
        };
        *reaped = true;
        (got == pid).then_some(status)
    }

    /// The reaper did not end within its grace: kill the tree without it,
    /// then the reaper.
    /// `seen_stopped`: the caller saw it stopped a moment ago.
    fn take_over(&self, seen_stopped: bool) {
        let Some(now) = procfs::stat(self.known.reaper).filter(|s| s.live()) else {
            return; // it has just ended on its own
        };
        let stopped = seen_stopped || matches!(now.state, b'T' | b't');
        tracing::warn!(
            reaper = self.known.reaper,
            stopped,
            "the reaper did not act on a kill; the host kills the tree itself"
        );
        *lock(&self.trouble) = Some(TreeTrouble::Unresponsive { stopped });
        let status = takeover::kill_tree(&self.known);
        *lock(&self.forced) = Some(status);
        self.signal(libc::SIGKILL);
    }
}

/// The lifeline's write end; closing it (the last clone dropped, or
/// [`Control::release`]) tells the reaper to kill everything.
#[derive(Clone)]
pub(super) struct Control(Arc<Lifeline>);

struct Lifeline {
    fd: Mutex<Option<OwnedFd>>,
    reaper: Arc<Reaper>,
}

impl Drop for Lifeline {
    /// The end of the lifeline (closed right after this) is a kill.
    fn drop(&mut self) {
        self.reaper.ask_kill();
        self.reaper.signal(libc::SIGCONT);
    }
}

impl Control {
    /// One byte, non-blocking, allocation-free: safe from exit hooks. Then
    /// SIGCONT: a reaper stopped by what it runs acts on it all the same.
    fn send(&self, cmd: u8) {
        let fd = lock(&self.0.fd);
        if let Some(fd) = fd.as_ref() {
            // SAFETY: a write of one byte from a live buffer to our own fd,
            // kept open by the lock.
            unsafe {
                libc::write(fd.as_raw_fd(), (&cmd as *const u8).cast(), 1);
            }
        }
        drop(fd);
        self.0.reaper.signal(libc::SIGCONT);
    }
    pub fn terminate(&self) {
        self.send(reaper::CMD_TERMINATE);
    }
    /// A reaper seen stopped before the kill is sent may be stopped again
    /// right after the SIGCONT (by a helper that does so in a loop): the
    /// host then kills the tree itself, here, as an exit hook (after which
    /// nothing asynchronous runs) needs.
    pub fn kill(&self) {
        let reaper = &self.0.reaper;
        let stopped = procfs::stat(reaper.known.reaper).is_some_and(|s| s.state == b'T');
        self.send(reaper::CMD_KILL);
        reaper.ask_kill();
        if stopped && !*lock(&reaper.reaped) {
            reaper.take_over(true);
        }
    }
    pub fn release(&self) {
        self.kill();
        lock(&self.0.fd).take();
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
    let got = read_started(status_host.as_raw_fd(), reaper_pid, &mut first);
    let (tag, value) = decode(&first);
    if got != Some(RECORD) || tag != reaper::TAG_STARTED {
        if got.is_none() {
            // Stopped (by what it started, before it could say so): kill
            // that without it, then the reaper.
            takeover::kill_tree(&Known {
                reaper: reaper_pid,
                leader: None,
                everything: true,
            });
            // SAFETY: our own child, not reaped yet.
            unsafe { libc::kill(reaper_pid, libc::SIGKILL) };
        }
        let ended = reap_now(reaper_pid);
        let source = match got {
            Some(RECORD) => io::Error::from_raw_os_error(value),
            _ if got.is_some() && libc::WIFSIGNALED(ended) => io::Error::other(format!(
                "the reaper process was killed by {} before starting the command",
                crate::transport::signal_name(libc::WTERMSIG(ended))
            )),
            Some(_) => io::Error::other("the reaper process ended before starting the command"),
            None => io::Error::other("the reaper process was stopped before starting the command"),
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
    // Seen now, while it cannot have been reaped (the reaper reaps it only
    // after a kill): the leader the takeover may signal.
    let leader = procfs::stat(value).filter(|s| s.ppid == reaper_pid);
    let reaper = Arc::new(Reaper {
        known: Known {
            reaper: reaper_pid,
            leader,
            everything: !spec.keep_detached,
        },
        reaped: Mutex::new(false),
        kill_asked: watch::Sender::new(false),
        done: watch::Sender::new(false),
        forced: Mutex::new(None),
        trouble: Mutex::new(None),
    });

    set_nonblocking(life_host.as_raw_fd());
    widen_pipe(out_host.as_raw_fd());
    let io = |e: io::Error| plain(e);
    let status = pipe::Receiver::from_owned_fd(status_host).map_err(io)?;
    let (exit_tx, exit) = watch::channel(None);
    tokio::spawn(watchdog(reaper.clone()));
    tokio::spawn(follow(status, reaper.clone(), exit_tx));

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
        tree: super::ProcessTree(super::TreeImpl::Reaper(Tree {
            pid,
            exit,
            reaper: reaper.clone(),
        })),
        control: super::TreeControl(super::ControlImpl::Reaper(Control(Arc::new(Lifeline {
            fd: Mutex::new(Some(life_host)),
            reaper,
        })))),
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

/// How long the reaper may be seen stopped before it said the command
/// started (continued every [`START_POLL`] meanwhile), and how long it may
/// take at all.
const START_STOPPED: Duration = Duration::from_secs(1);
const START_AT_MOST: Duration = Duration::from_secs(60);
const START_POLL: Duration = Duration::from_millis(20);

/// The reaper's first record (the count read; fewer than [`RECORD`] if it
/// ended first). None if it stayed stopped past [`START_STOPPED`] (what it
/// started can stop it before it reports) or did not answer within
/// [`START_AT_MOST`].
fn read_started(fd: RawFd, reaper_pid: libc::pid_t, buf: &mut [u8; RECORD]) -> Option<usize> {
    let started = std::time::Instant::now();
    let mut stopped = Duration::ZERO;
    let readable = |wait: Duration| {
        let mut poll = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one live pollfd.
        let r = unsafe { libc::poll(&mut poll, 1, wait.as_millis() as libc::c_int) };
        r != 0 && (r > 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted)
    };
    loop {
        if readable(START_POLL) {
            return Some(read_blocking(fd, buf));
        }
        if procfs::stat(reaper_pid).is_some_and(|s| matches!(s.state, b'T' | b't')) {
            // Stopped after it reported (looked at again now that it is
            // stopped): the report is read, the stop left to the tree.
            if readable(Duration::ZERO) {
                return Some(read_blocking(fd, buf));
            }
            stopped += START_POLL;
            // SAFETY: our own child, not reaped yet.
            unsafe { libc::kill(reaper_pid, libc::SIGCONT) };
        }
        if stopped > START_STOPPED || started.elapsed() > START_AT_MOST {
            return None;
        }
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

/// Reap the reaper (it is exiting or has exited): its wait status.
fn reap_now(pid: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    // SAFETY: our own child, not reaped yet.
    unsafe {
        while libc::waitpid(pid, &mut status, 0) < 0
            && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
        {}
    }
    status
}

/// Read the reaper's reports until it exits, then reap it. A reaper
/// killed by someone else (it only ever exits) is reported with what may
/// have escaped.
async fn follow(
    mut status: pipe::Receiver,
    reaper: Arc<Reaper>,
    exit: watch::Sender<Option<Option<ExitStatus>>>,
) {
    use std::os::unix::process::ExitStatusExt;
    let mut rec = [0u8; RECORD];
    while status.read_exact(&mut rec).await.is_ok() {
        if let (reaper::TAG_EXITED, raw) = decode(&rec) {
            exit.send_replace(Some(Some(ExitStatus::from_raw(raw))));
        }
    }
    // The reaper closes the pipe only by exiting.
    let r = reaper.clone();
    let ended = tokio::task::spawn_blocking(move || {
        let ended = r.reap();
        let forced = lock(&r.forced).is_some();
        let killed = ended
            .filter(|s| libc::WIFSIGNALED(*s) && !forced)
            .map(|s| libc::WTERMSIG(s));
        if let Some(signal) = killed {
            let escaped = r.known.leader.as_ref().map(takeover::escaped);
            let escaped = escaped.unwrap_or_default();
            tracing::warn!(
                reaper = r.known.reaper,
                signal,
                ?escaped,
                "the reaper was killed: what it ran was left to the system"
            );
            *lock(&r.trouble) = Some(TreeTrouble::Killed { signal, escaped });
        }
    })
    .await;
    let _ = ended;
    if exit.borrow().is_none() {
        let forced = lock(&reaper.forced).flatten();
        exit.send_replace(Some(forced.map(ExitStatus::from_raw)));
    }
    reaper.done.send_replace(true);
}

/// Past a kill, gives the reaper [`REAPER_GRACE`] to end, then has the
/// host kill the tree itself.
async fn watchdog(reaper: Arc<Reaper>) {
    let mut asked = reaper.kill_asked.subscribe();
    let mut done = reaper.done.subscribe();
    tokio::select! {
        _ = asked.wait_for(|a| *a) => {}
        _ = done.wait_for(|d| *d) => return,
    }
    tokio::select! {
        _ = tokio::time::sleep(REAPER_GRACE) => {}
        _ = done.wait_for(|d| *d) => return,
    }
    let r = reaper.clone();
    let _ = tokio::task::spawn_blocking(move || r.take_over(false)).await;
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use tokio::io::{AsyncBufReadExt, BufReader};

    use super::*;
    use crate::transport::tree::test_support::{sh_args, sh_spec, until};
    use crate::transport::tree::TreeImpl;

    /// The reaper, stopped for good (as by a helper that stops it again
    /// and again): the host kills the tree itself, `setsid` daemon and
    /// background child included, and reports the leader's SIGKILL.
    #[tokio::test]
    async fn a_stopped_reaper_is_taken_over() {
        let script = "setsid sh -c 'sleep 1000 & exit'; sleep 1000 & echo ready; exec sleep 1000";
        let args = sh_args(script);
        let launched = launch(&sh_spec(&args)).unwrap();
        let mut out = BufReader::new(launched.stdout);
        let mut line = String::new();
        out.read_line(&mut line).await.unwrap();
        assert_eq!(line, "ready\n");
        let mut tree = launched.tree;
        let TreeImpl::Reaper(t) = &tree.0 else {
            unreachable!("the reaper is on by default")
        };
        let reaper = t.reaper.clone();
        let pid = reaper.known.reaper;
        until("the daemon, the child and the leader run", || {
            takeover::below(pid).iter().filter(|s| s.live()).count() == 3
        })
        .await;
        let members = takeover::below(pid);
        // SAFETY: our own child, unreaped (the reaper is reaped by `follow`
        // only once it has exited).
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        until("the reaper is stopped", || {
            procfs::stat(pid).is_some_and(|s| s.state == b'T')
        })
        .await;
        let r = reaper.clone();
        tokio::task::spawn_blocking(move || r.take_over(false))
            .await
            .unwrap();
        for m in &members {
            let gone = procfs::stat(m.pid).is_none_or(|s| s.start != m.start || !s.live());
            assert!(gone, "{m:?} survived");
        }
        let status = tree.wait().await.unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        tree.gone().await;
        assert_eq!(
            tree.trouble(),
            Some(TreeTrouble::Unresponsive { stopped: true })
        );
        drop(launched.control);
    }
}
