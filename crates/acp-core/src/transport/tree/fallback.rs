//! Outside Linux: the process leads its own process group (Unix) or Job
//! Object (Windows, kill-on-close) and is signalled directly (also on Linux
//! with `ACP_NATIVE_PROCESS_TREE=group`). There is no reaper: after a host
//! SIGKILL, only Windows' job handle closing stops the tree.
//!
//! Never a signal to an id that may have been reused. On Unix the leader
//! is not reaped until the tree is released (its exit is seen with
//! `waitid(WNOWAIT)`, which leaves it a zombie), and nothing is signalled
//! after the release: while the leader is unreaped its pid, which is also
//! the group's id, cannot be handed to another process. On Windows nothing
//! is addressed by pid at all: the job and the leader are held by handle
//! until both the tree and its controls are dropped.

use std::io;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;

use tokio::process::{Child, Command};
use tokio::sync::watch;

use super::{Cwd, LaunchSpec, Launched, StdioShape};
use crate::transport::process_group::GroupSignal;
use crate::transport::spawn::SpawnError;

pub(super) struct Tree {
    pub pid: u32,
    /// Reaped in [`Tree::gone`] only, once released.
    child: Child,
    shared: Arc<Shared>,
    /// The leader's status, seen without reaping it (Unix).
    #[cfg(unix)]
    exit: watch::Receiver<Option<Result<ExitStatus, i32>>>,
}

impl Tree {
    /// The leader's exit; it stays unreaped (see the module's doc).
    #[cfg(unix)]
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self.exit.wait_for(Option::is_some).await {
            Ok(seen) => match *seen {
                Some(Ok(status)) => Ok(status),
                Some(Err(errno)) => Err(io::Error::from_raw_os_error(errno)),
                None => unreachable!("waited for Some"),
            },
            Err(_) => Err(io::Error::other("the exit watcher ended early")),
        }
    }

    /// The leader's exit (tokio closes its handle; [`Group`] keeps one).
    #[cfg(not(unix))]
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Once the tree is released (nothing signals it any more) and its
    /// leader has ended: reap the leader.
    pub async fn gone(&mut self) {
        let mut released = self.shared.released.subscribe();
        let _ = released.wait_for(|r| *r).await;
        let _ = self.child.wait().await;
    }
}

impl Drop for Tree {
    /// Dropped before [`Tree::gone`]: tokio reaps the leader in the
    /// background from here on, so no signal may follow.
    fn drop(&mut self) {
        self.shared.release();
    }
}

/// Signals the group while it is not released. Dropping the last clone
/// releases it (as on Linux, where that closes the lifeline).
#[derive(Clone)]
pub(super) struct Control(Arc<Anchor>);

struct Anchor(Arc<Shared>);

impl Drop for Anchor {
    fn drop(&mut self) {
        self.0.release();
    }
}

impl Control {
    pub fn terminate(&self) {
        self.shared().signal(GroupSignal::Terminate);
    }
    pub fn kill(&self) {
        self.shared().signal(GroupSignal::Kill);
    }
    pub fn release(&self) {
        self.shared().release();
    }
    fn shared(&self) -> &Shared {
        &(self.0).0
    }
}

/// What the tree and its controls share.
struct Shared {
    group: Group,
    /// `true` means released: the leader may be reaped, and nothing is
    /// signalled any more.
    released: watch::Sender<bool>,
}

impl Shared {
    /// Under the channel's lock, so the leader cannot be reaped meanwhile.
    fn signal(&self, signal: GroupSignal) {
        self.released.send_if_modified(|released| {
            if !*released {
                self.group.signal(signal);
            }
            false
        });
    }

    /// Kill the group unless released, and mark it released.
    fn release(&self) {
        self.released.send_if_modified(|released| {
            if *released {
                return false;
            }
            self.group.signal(GroupSignal::Kill);
            *released = true;
            true
        });
    }
}

/// What a signal reaches: the process group the leader leads (Unix), or
/// its job (Windows).
struct Group {
    #[cfg(unix)]
    pid: u32,
    #[cfg(windows)]
    job: Option<crate::transport::process_group::windows_job::Job>,
}

impl Group {
    #[cfg(unix)]
    fn of(child: &Child, pid: u32) -> Group {
        let _ = child;
        Group { pid }
    }

    #[cfg(windows)]
    fn of(child: &Child, _pid: u32) -> Group {
        use crate::transport::process_group::windows_job::Job;
        let job = child.raw_handle().map(|h| Job::adopt(h as _));
        Group { job }
    }

    #[cfg(not(any(unix, windows)))]
    fn of(_child: &Child, _pid: u32) -> Group {
        Group {}
    }

    /// Resume the leader, created suspended so that it runs in its job
    /// from its first instruction (or alone, where Windows refused a job).
    #[cfg(windows)]
    fn start(&self, pid: u32) -> io::Result<()> {
        match &self.job {
            Some(job) => job.start(pid),
            None => Err(io::Error::other("no handle to the agent process")),
        }
    }

    fn signal(&self, signal: GroupSignal) {
        #[cfg(unix)]
        crate::transport::process_group::signal_group(self.pid, signal);
        #[cfg(windows)]
        if let Some(job) = &self.job {
            let _ = signal; // no graceful stop for a job: both terminate
            job.terminate();
        }
        #[cfg(not(any(unix, windows)))]
        let _ = signal;
    }
}

/// A thread per process waits for its exit without reaping it (no async
/// form of `waitid(WNOWAIT)` in tokio); a small stack, blocked in one call.
#[cfg(unix)]
fn watch_exit(pid: u32) -> io::Result<watch::Receiver<Option<Result<ExitStatus, i32>>>> {
    let (tx, rx) = watch::channel(None);
    std::thread::Builder::new()
        .name("acp-exit-watch".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let seen = wait_unreaped(pid).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO));
            tx.send_replace(Some(seen));
        })?;
    Ok(rx)
}

/// Blocks until `pid` (our child) has exited, and leaves it a zombie.
#[cfg(unix)]
fn wait_unreaped(pid: u32) -> io::Result<ExitStatus> {
    use std::os::unix::process::ExitStatusExt;
    // Backs off while the leader is reported stopped: 1 s at most.
    let mut pause = std::time::Duration::from_millis(50);
    loop {
        // SAFETY: a zeroed siginfo_t is valid; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid on our own child, into a live siginfo_t.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r != 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        // SAFETY: filled by waitid for a SIGCHLD.
        let status = unsafe { info.si_status() };
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let status = info.si_status;
        // As a wait status: the exit code in the second byte, or the
        // signal in the low seven bits (0x80: a core was dumped).
        let raw = match info.si_code {
            libc::CLD_EXITED => (status & 0xff) << 8,
            libc::CLD_KILLED => status & 0x7f,
            libc::CLD_DUMPED => (status & 0x7f) | 0x80,
            // A stop reported despite WEXITED (seen on macOS): not an end.
            _ => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_secs(1));
                continue;
            }
        };
        return Ok(ExitStatus::from_raw(raw));
    }
}

pub(super) fn launch(spec: &LaunchSpec<'_>) -> Result<Launched, SpawnError> {
    #[cfg(windows)]
    let program = {
        use crate::transport::windows_program as wp;
        let found = wp::resolve(spec.program, spec.env, spec.clear_env);
        if wp::is_batch(&found) {
            wp::check_batch_args(&found, spec.args)
                .map_err(|e| SpawnError::new(spec.program, e, String::new()))?;
        }
        found
    };
    #[cfg(not(windows))]
    let program = spec.program;
    let mut cmd = Command::new(program);
    #[cfg(windows)]
    if spec.verbatim_args {
        for arg in spec.args {
            cmd.raw_arg(arg);
        }
    } else {
        cmd.args(spec.args);
    }
    #[cfg(not(windows))]
    cmd.args(spec.args);
    cmd.kill_on_drop(false);
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
    #[cfg(all(test, windows))]
    if let Some(hook) = BEFORE_JOB.get() {
        hook(pid);
    }
    let group = Group::of(&child, pid);
    // Not started after all: the group goes (its leader is not reaped yet).
    let abandon = |e: io::Error| {
        group.signal(GroupSignal::Kill);
        Err(fail(e))
    };
    // Created suspended (configure_platform): it runs once in its job.
    #[cfg(windows)]
    if let Err(e) = group.start(pid) {
        return abandon(e);
    }
    let stdin = child.stdin.take();
    let stderr = child.stderr.take();
    let Some(stdout) = child.stdout.take() else {
        return abandon(io::Error::other("stdio pipes were not created"));
    };
    if spec.stdio == StdioShape::Agent && (stdin.is_none() || stderr.is_none()) {
        return abandon(io::Error::other("stdio pipes were not created"));
    }
    #[cfg(unix)]
    let exit = match watch_exit(pid) {
        Ok(exit) => exit,
        Err(e) => return abandon(e),
    };
    let shared = Arc::new(Shared {
        group,
        released: watch::Sender::new(false),
    });
    Ok(Launched {
        tree: super::ProcessTree(super::TreeImpl::Group(Tree {
            pid,
            child,
            shared: shared.clone(),
            #[cfg(unix)]
            exit,
        })),
        control: super::TreeControl(super::ControlImpl::Group(Control(Arc::new(Anchor(shared))))),
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
    use windows_sys::Win32::System::Threading::{CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED};
    // CREATE_NEW_PROCESS_GROUP: console signals aimed at the host do not
    // reach the agent; the tree is stopped explicitly instead.
    // CREATE_SUSPENDED: it runs only once it is in its job (launch), so
    // nothing it starts can be created outside the job.
    cmd.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_SUSPENDED);
}

#[cfg(all(test, windows))]
thread_local! {
    /// Tests only: runs between the spawn and the job, to hold that
    /// instant open (`job_tests`).
    static BEFORE_JOB: std::cell::Cell<Option<fn(u32)>> = const { std::cell::Cell::new(None) };
}

#[cfg(not(any(unix, windows)))]
fn configure_platform(_cmd: &mut Command) {}

/// The group spawn on Linux (`ACP_NATIVE_PROCESS_TREE=group`): real
/// processes, and a stranger forced onto a released pid.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::time::Duration;

    use tokio::io::{AsyncBufReadExt, BufReader};

    use super::*;
    use crate::transport::tree::test_support::{sh_args, sh_spec, until};
    use crate::transport::tree::{ProcessTree, TreeControl};

    fn start(
        script: &str,
    ) -> (
        ProcessTree,
        TreeControl,
        BufReader<tokio::process::ChildStdout>,
    ) {
        let args = sh_args(script);
        let launched = launch(&sh_spec(&args)).unwrap();
        (
            launched.tree,
            launched.control,
            BufReader::new(launched.stdout),
        )
    }

    /// One-letter state from /proc/<pid>/stat, or None if no such pid.
    fn state(pid: u32) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat[stat.rfind(')')? + 2..].chars().next()
    }

    /// Is `pid` a live process (not a zombie)?
    fn running(pid: u32) -> bool {
        !matches!(state(pid), None | Some('Z' | 'X'))
    }

    /// Is `pid` still a child of ours waiting to be reaped?
    fn unreaped_child(pid: u32) -> bool {
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: a non-blocking peek at our own child.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid,
                &mut info,
                libc::WEXITED | libc::WNOWAIT | libc::WNOHANG,
            )
        };
        r == 0
    }

    #[tokio::test]
    async fn an_exit_is_reported_and_the_leader_kept_until_released() {
        let (mut tree, control, _out) = start("exit 3");
        let pid = tree.pid();
        assert_eq!(tree.wait().await.unwrap().code(), Some(3));
        // Seen, not reaped: the pid (the group's id) is still held.
        assert_eq!(state(pid), Some('Z'));
        assert!(unreaped_child(pid));
        control.terminate(); // reaches an empty group: harmless
        control.release();
        tree.gone().await;
        assert!(!unreaped_child(pid), "reaped once released");
        assert_eq!(tree.wait().await.unwrap().code(), Some(3), "wait() again");
    }

    #[tokio::test]
    async fn a_signal_death_is_reported_as_such() {
        let (mut tree, control, _out) = start("kill -KILL $$");
        assert_eq!(tree.wait().await.unwrap().signal(), Some(libc::SIGKILL));
        let (mut tree2, control2, _out2) = start("kill -TERM $$");
        assert_eq!(tree2.wait().await.unwrap().signal(), Some(libc::SIGTERM));
        control.release();
        control2.release();
        tree.gone().await;
        tree2.gone().await;
    }

    #[tokio::test]
    async fn what_the_leader_left_in_its_group_goes_on_release() {
        let (mut tree, control, mut out) = start("sleep 1000 </dev/null >/dev/null & echo $!");
        let mut line = String::new();
        out.read_line(&mut line).await.unwrap();
        let left: u32 = line.trim().parse().unwrap();
        assert_eq!(tree.wait().await.unwrap().code(), Some(0));
        assert!(running(left), "still running after its leader");
        control.release();
        until("the leftover is killed", || !running(left)).await;
        tree.gone().await;
    }

    #[tokio::test]
    async fn dropping_the_last_control_releases() {
        let (mut tree, control, _out) = start("sleep 1000");
        let pid = tree.pid();
        let clone = control.clone();
        drop(control);
        assert!(running(pid), "a clone is left");
        drop(clone);
        let ended = tokio::time::timeout(Duration::from_secs(15), tree.wait()).await;
        assert_eq!(
            ended.expect("killed").unwrap().signal(),
            Some(libc::SIGKILL)
        );
        tree.gone().await;
        assert!(!unreaped_child(pid));
    }

    /// A stranger forced onto `pid` (via ns_last_pid, root only) in a group
    /// of its own: its pid, or None if the machine took the pid first.
    fn stranger_at(pid: u32) -> Option<u32> {
        for _ in 0..100 {
            let script = format!(
                "echo {} > /proc/sys/kernel/ns_last_pid; setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!",
                pid - 1
            );
            let out = std::process::Command::new("sh")
                .args(["-c", &script])
                .output()
                .ok()?;
            let got: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().ok()?;
            if got == pid {
                return Some(pid);
            }
            // SAFETY: our own grandchild, just started, not yet reapable by
            // anyone but init (its parent shell has exited).
            unsafe { libc::kill(got as i32, libc::SIGKILL) };
        }
        None
    }

    #[tokio::test]
    async fn a_released_pid_given_to_a_stranger_is_never_signalled() {
        let last = std::fs::read("/proc/sys/kernel/ns_last_pid").unwrap_or_default();
        if std::fs::write("/proc/sys/kernel/ns_last_pid", &last).is_err() {
            eprintln!("skipped: needs root to write /proc/sys/kernel/ns_last_pid");
            return;
        }
        let (mut tree, control, _out) = start("exit 0");
        let pid = tree.pid();
        tree.wait().await.unwrap();
        assert!(
            stranger_at(pid).is_none(),
            "an unreleased leader's pid was reused"
        );
        control.release();
        tree.gone().await;
        let Some(stranger) = stranger_at(pid) else {
            eprintln!("skipped: the machine took the pid first, 100 times");
            return;
        };
        control.terminate();
        control.kill();
        control.release();
        drop(control);
        drop(tree);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let status = std::fs::read_to_string(format!("/proc/{stranger}/status")).unwrap();
        // No signal pending (a SIGKILL just sent may not have landed yet).
        let untouched = status.lines().all(|l| {
            match l
                .strip_prefix("SigPnd:")
                .or_else(|| l.strip_prefix("ShdPnd:"))
            {
                Some(mask) => u64::from_str_radix(mask.trim(), 16) == Ok(0),
                None => true,
            }
        });
        let alive = running(stranger);
        // SAFETY: the stranger is ours (started above); done with it.
        unsafe { libc::kill(stranger as i32, libc::SIGKILL) };
        assert!(
            alive && untouched,
            "the stranger at {stranger} was signalled"
        );
    }
}

/// The Job Object on Windows: what the agent starts in its very first
/// instant is in the job too (it is created suspended, resumed in it).
#[cfg(all(test, windows))]
mod job_tests {
    use std::time::{Duration, Instant};

    use windows_sys::Win32::Foundation::{CloseHandle, FALSE, INVALID_HANDLE_VALUE, WAIT_OBJECT_0};
    use windows_sys::Win32::System::Diagnostics::ToolHelp::{
        CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W,
        TH32CS_SNAPPROCESS,
    };
    use windows_sys::Win32::System::Threading::{
        OpenProcess, TerminateProcess, WaitForSingleObject, PROCESS_SYNCHRONIZE, PROCESS_TERMINATE,
    };

    use super::*;

    /// `ACP_TEST_TIME_SCALE`: how much slower than native this run is
    /// (Wine: scripts/platform-test.mjs). Stretches guards only.
    fn scale() -> u32 {
        std::env::var("ACP_TEST_TIME_SCALE")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1)
    }

    /// A running `exe` whose parent is `parent`, from a system snapshot.
    fn child_of(parent: u32, exe: &str) -> Option<u32> {
        // SAFETY: our own snapshot handle, closed below; the entry is
        // zeroed with its size set, as the API requires.
        unsafe {
            let snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
            if snapshot == INVALID_HANDLE_VALUE {
                return None;
            }
            let mut entry: PROCESSENTRY32W = std::mem::zeroed();
            entry.dwSize = std::mem::size_of::<PROCESSENTRY32W>() as u32;
            let mut found = None;
            let mut more = Process32FirstW(snapshot, &mut entry) != 0;
            while more && found.is_none() {
                let len = entry.szExeFile.iter().position(|&c| c == 0).unwrap_or(0);
                let name = String::from_utf16_lossy(&entry.szExeFile[..len]);
                if entry.th32ParentProcessID == parent && name.eq_ignore_ascii_case(exe) {
                    found = Some(entry.th32ProcessID);
                }
                more = Process32NextW(snapshot, &mut entry) != 0;
            }
            CloseHandle(snapshot);
            found
        }
    }

    fn wait_for_child(parent: u32, exe: &str, within: Duration) -> Option<u32> {
        let until = Instant::now() + within;
        loop {
            if let Some(pid) = child_of(parent, exe) {
                return Some(pid);
            }
            if Instant::now() > until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Between the spawn and the job: wait until the agent, if it can run
    /// already, has started its child (or a while, if it cannot).
    fn hold_until_child(pid: u32) {
        let _ = wait_for_child(pid, "ping.exe", Duration::from_secs(3 * u64::from(scale())));
    }

    #[tokio::test]
    async fn a_child_started_at_once_is_in_the_job() {
        // cmd.exe starts ping.exe before anything else; ping runs 10 min.
        let args = ["/d", "/c", "ping -n 600 127.0.0.1 >nul"].map(String::from);
        BEFORE_JOB.set(Some(hold_until_child));
        let launched = launch(&LaunchSpec {
            program: "cmd.exe",
            args: &args,
            verbatim_args: true,
            env: &[],
            clear_env: false,
            cwd: Cwd::Inherit,
            stdio: StdioShape::Agent,
            keep_detached: false,
        });
        BEFORE_JOB.set(None);
        let launched = launched.expect("cmd.exe starts");
        let agent = launched.tree.pid();
        let child = wait_for_child(
            agent,
            "ping.exe",
            Duration::from_secs(60 * u64::from(scale())),
        )
        .expect("cmd.exe starts ping.exe");
        // SAFETY: a handle to a live process, closed below.
        let ended = unsafe {
            let handle = OpenProcess(PROCESS_SYNCHRONIZE | PROCESS_TERMINATE, FALSE, child);
            assert!(!handle.is_null(), "ping.exe can be opened");
            launched.control.kill();
            let ended = WaitForSingleObject(handle, 30_000 * scale()) == WAIT_OBJECT_0;
            if !ended {
                TerminateProcess(handle, 1);
            }
            CloseHandle(handle);
            ended
        };
        assert!(
            ended,
            "the agent's child outlived kill(): it was started outside the agent's job"
        );
    }
}
