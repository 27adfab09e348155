//! The code that runs in the forked reaper and, one fork further, in the
//! process it starts, up to `execve`.
//!
//! The reaper is a copy of a multithreaded host made by `fork` without
//! `exec`: another thread may have held any lock at the fork, so this file
//! makes raw system calls only. No allocation, no locks, no std I/O, no
//! panics (no slice indexing, no overflowing arithmetic), and every
//! function ends in `_exit` rather than returning into host code.
//!
//! Once the process has exec'd, the reaper unmaps the host's heaps from
//! its copy (`slim`), so it does not keep pages the host later changes.
//!
//! The reaper owns the tree: it is the parent of the process it starts
//! (so that pid, which is also the process group id, cannot be reused
//! until the reaper reaps it) and, unless the host keeps detached
//! processes, a child subreaper (so `setsid` escapes are reparented to it
//! and stay its unreaped children too). It only ever signals processes it
//! has not reaped, so it cannot signal a stranger.

use libc::{c_char, c_int, pid_t};

// The reaper's descriptors after `arrange_fds`: 0–2 are the started
// process's stdio (closed in the reaper once it has forked).
const FD_LIFELINE: c_int = 3;
const FD_STATUS: c_int = 4;
const FD_CWD: c_int = 5;
const FD_SIGNALS: c_int = 6;
const FD_EXEC_READ: c_int = 7;
const FD_EXEC_WRITE: c_int = 8;
/// Where the inherited descriptors are parked while the low ones are set.
const PARK_AT: c_int = 16;

/// Records on the status pipe: two native-endian `i32`s, (tag, value).
pub(super) const RECORD: usize = 8;
/// Value: the started process's pid.
pub(super) const TAG_STARTED: i32 = 1;
/// Value: errno. Setting up the reaper itself failed.
pub(super) const TAG_SETUP_FAILED: i32 = 2;
/// Value: errno. `fchdir` to the checked directory failed.
pub(super) const TAG_CWD_FAILED: i32 = 3;
/// Value: errno. `execve` failed.
pub(super) const TAG_EXEC_FAILED: i32 = 4;
/// Value: the raw wait status of the started process.
pub(super) const TAG_EXITED: i32 = 5;

/// Commands on the lifeline (its end-of-file means "kill everything").
pub(super) const CMD_TERMINATE: u8 = b'T';
pub(super) const CMD_KILL: u8 = b'K';

/// Rounds of "SIGKILL every child, reap them" at most: each round reaches
/// one generation deeper (orphans are reparented to us when their parent
/// dies), so this bounds the depth of a tree we clean up.
const MAX_ROUNDS: u32 = 1000;
/// Children handled per round (more are taken the next round).
const MAX_KIDS: usize = 512;

/// The inherited descriptors, in the host's numbering.
#[derive(Clone, Copy)]
pub(super) struct Fds {
    pub stdin: c_int,
    pub stdout: c_int,
    pub stderr: c_int,
    pub lifeline: c_int,
    pub status: c_int,
    pub cwd: c_int,
}

/// Everything prepared before the fork (pointers into host memory, which
/// the fork copied).
pub(super) struct Plan {
    pub path: *const c_char,
    pub argv: *const *const c_char,
    pub envp: *const *const c_char,
    pub fds: Fds,
    pub subreaper: bool,
}

/// The reaper's life. Called in the child of `fork`, with every signal
/// blocked.
///
/// # Safety
/// Only in a freshly forked child whose `plan` pointers are valid.
pub(super) unsafe fn run(plan: &Plan) -> ! {
    reset_signal_handlers();
    // A host gone mid-write is seen as EOF instead.
    ignore(libc::SIGPIPE);
    // Out of the host's process group: a signal or a terminal's ^C aimed
    // at the host's group must not take the reaper down before it cleans up.
    // (Nothing below can join this group: the child starts a session of
    // its own, and a group can only be joined from its session. So once
    // the host is gone the group is orphaned, and the kernel continues a
    // reaper that was stopped.)
    libc::setpgid(0, 0);
    // Continued when the host's thread that forked us ends (the host dies,
    // at the latest): a reaper stopped by what it runs still sees the
    // lifeline's end. A thread that ends earlier only continues a reaper
    // that is running anyway.
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGCONT as libc::c_ulong);
    if let Err((fd, errno)) = arrange_fds(&plan.fds) {
        record(fd, TAG_SETUP_FAILED, errno);
        libc::_exit(1);
    }
    if plan.subreaper {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong);
    }
    let mut chld: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut chld);
    libc::sigaddset(&mut chld, libc::SIGCHLD);
    let signals = libc::signalfd(-1, &chld, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
    let mut exec_pipe = [-1; 2];
    if !place(signals, FD_SIGNALS)
        || libc::pipe2(exec_pipe.as_mut_ptr(), libc::O_CLOEXEC) != 0
        || !place(exec_pipe[0], FD_EXEC_READ)
        || !place(exec_pipe[1], FD_EXEC_WRITE)
    {
        record(FD_STATUS, TAG_SETUP_FAILED, errno());
        libc::_exit(1);
    }

    let pid = spawn_child(plan, libc::getpid());
    if pid < 0 {
        record(FD_STATUS, TAG_SETUP_FAILED, errno());
        libc::_exit(1);
    }
    // The child's stdio and cwd are its own now: holding them here would
    // keep the host from seeing the pipes close.
    for fd in [0, 1, 2, FD_CWD, FD_EXEC_WRITE] {
        libc::close(fd);
    }
    let mut failure = [0u8; RECORD];
    if read_full(FD_EXEC_READ, &mut failure) == RECORD {
        // exec failed (the pipe is close-on-exec, so a success sends EOF).
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        let (tag, errno) = decode(&failure);
        record(FD_STATUS, tag, errno);
        libc::_exit(0);
    }
    record(FD_STATUS, TAG_STARTED, pid);
    // Closed after the report: what the reaper runs can tell from outside
    // (its `/proc/<reaper>/fd`) that the start was reported, also where
    // the memory maps are an emulator's (the tests' stoppers wait on it).
    libc::close(FD_EXEC_READ);
    slim();
    watch(Child {
        pid,
        reported: false,
        reaped: false,
    })
}

/// In the started process (sharing the reaper's memory, on its own stack;
/// descriptors, cwd and signal handlers are its own copies): lead a
/// session of its own, tie its life to the reaper, enter the checked
/// directory, exec.
unsafe fn exec_child(plan: &Plan, reaper: pid_t) -> ! {
    // SIGPIPE was ignored in the reaper; exec keeps ignored signals ignored.
    let mut dfl: libc::sigaction = std::mem::zeroed();
    dfl.sa_sigaction = libc::SIG_DFL;
    libc::sigaction(libc::SIGPIPE, &dfl, std::ptr::null_mut());
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
    if libc::getppid() != reaper {
        libc::_exit(127); // the reaper died before the prctl
    }
    // Its own session (and group, with the same id): what it starts cannot
    // join the reaper's group to keep it from being orphaned (setpgid
    // works within a session only), and has no terminal to read.
    libc::setsid();
    if libc::fchdir(FD_CWD) != 0 {
        exec_failed(TAG_CWD_FAILED);
    }
    for fd in [FD_LIFELINE, FD_STATUS, FD_CWD, FD_SIGNALS, FD_EXEC_READ] {
        libc::close(fd);
    }
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    libc::execve(plan.path, plan.argv, plan.envp);
    exec_failed(TAG_EXEC_FAILED)
}

unsafe fn exec_failed(tag: i32) -> ! {
    record(FD_EXEC_WRITE, tag, errno());
    libc::_exit(127)
}

/// The started process, as the reaper knows it.
struct Child {
    pid: pid_t,
    /// Its exit status was sent to the host.
    reported: bool,
    /// It was reaped: its pid (and group id) may belong to someone else now.
    reaped: bool,
}

impl Child {
    unsafe fn report(&mut self, info: &libc::siginfo_t) {
        if !self.reported {
            self.reported = true;
            record(FD_STATUS, TAG_EXITED, wait_status(info));
        }
    }
}

/// Wait for the host's commands, the child's exit, or the host's end.
unsafe fn watch(mut child: Child) -> ! {
    loop {
        let mut fds = [
            libc::pollfd {
                fd: FD_LIFELINE,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: FD_SIGNALS,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        if libc::poll(fds.as_mut_ptr(), 2, -1) < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            break;
        }
        let [lifeline, signals] = fds;
        if signals.revents != 0 {
            drain(FD_SIGNALS);
            on_child_exit(&mut child);
        }
        if lifeline.revents != 0 {
            let mut cmds = [0u8; 64];
            let n = libc::read(FD_LIFELINE, cmds.as_mut_ptr().cast(), cmds.len());
            if n < 0 && (errno() == libc::EINTR || errno() == libc::EAGAIN) {
                continue;
            }
            if n <= 0 {
                break; // the host is gone, or dropped the tree
            }
            let mut kill = false;
            for cmd in cmds.iter().take(n as usize) {
                match *cmd {
                    CMD_TERMINATE if !child.reaped => {
                        libc::kill(-child.pid, libc::SIGTERM);
                    }
                    CMD_KILL => kill = true,
                    _ => {}
                }
            }
            if kill {
                break;
            }
        }
    }
    kill_all(&mut child);
    libc::_exit(0)
}

/// Give back the host's memory this copy still maps.
///
/// The reaper is a copy-on-write copy of the host: every page the host
/// changes after the fork stays behind here as a private page (a host
/// rewriting a 500 MB heap would leave up to 500 MB in each reaper). From
/// here on the reaper needs only its stack, its thread block (errno) and
/// the libraries' code and data, so every private anonymous mapping (the
/// host's heaps: malloc, V8, buffers) is unmapped. Kept: mappings with a
/// file, the kernel's (`[vdso]`, …), a mapping that directly follows a
/// file mapping (a library's `.bss`), and those holding our stack or
/// thread block.
unsafe fn slim() {
    let marker = 0u8;
    let keep = [
        std::ptr::addr_of!(marker) as usize,
        libc::__errno_location() as usize,
        libc::pthread_self() as usize,
    ];
    // Unmapping while reading the map list is allowed but confusing:
    // collect a batch, unmap it, read again, until a pass finds none.
    for _ in 0..64 {
        let mut batch = [(0usize, 0usize); 256];
        let n = unmappable(&keep, &mut batch);
        for &(start, end) in batch.iter().take(n) {
            libc::munmap(start as *mut libc::c_void, end.wrapping_sub(start));
        }
        if n < batch.len() {
            return;
        }
    }
}

/// Fill `out` with the ranges `slim` may unmap; how many.
unsafe fn unmappable(keep: &[usize; 3], out: &mut [(usize, usize); 256]) -> usize {
    let fd = libc::open(
        c"/proc/self/maps".as_ptr(),
        libc::O_RDONLY | libc::O_CLOEXEC,
    );
    if fd < 0 {
        return 0;
    }
    let mut buf = [0u8; 4096];
    let mut have = 0usize;
    let mut n = 0usize;
    let mut prev_file_end = 0usize;
    'read: while let Some(rest) = buf.get_mut(have..) {
        let got = libc::read(fd, rest.as_mut_ptr().cast(), rest.len());
        if got <= 0 {
            break;
        }
        have += got as usize;
        let mut line_start = 0usize;
        while let Some(len) = buf
            .get(line_start..have)
            .and_then(|b| b.iter().position(|c| *c == b'\n'))
        {
            let Some(line) = buf.get(line_start..line_start + len) else {
                break 'read;
            };
            if let Some(m) = parse_mapping(line) {
                let anonymous = m.inode == 0
                    && (m.name.is_empty() || m.name == b"[heap]" || m.name.starts_with(b"[anon:"));
                let bss = prev_file_end == m.start;
                let ours = keep.iter().any(|a| (m.start..m.end).contains(a));
                if m.private && anonymous && !bss && !ours {
                    if let Some(slot) = out.get_mut(n) {
                        *slot = (m.start, m.end);
                        n += 1;
                    } else {
                        break 'read;
                    }
                }
                prev_file_end = if m.inode != 0 { m.end } else { 0 };
            }
            line_start += len + 1;
        }
        if line_start == 0 && have == buf.len() {
            break; // a line longer than the buffer: stop here (keep the rest)
        }
        buf.copy_within(line_start..have, 0);
        have -= line_start;
    }
    libc::close(fd);
    n
}

struct Mapping<'a> {
    start: usize,
    end: usize,
    private: bool,
    inode: u64,
    name: &'a [u8],
}

/// One `/proc/self/maps` line: `start-end perms offset dev inode   name`.
fn parse_mapping(line: &[u8]) -> Option<Mapping<'_>> {
    let mut fields = line.splitn(6, |c| *c == b' ');
    let range = fields.next()?;
    let perms = fields.next()?;
    let _offset = fields.next()?;
    let _dev = fields.next()?;
    let inode = fields.next()?;
    let name = fields.next().unwrap_or(b"");
    let dash = range.iter().position(|c| *c == b'-')?;
    let start = parse_num(range.get(..dash)?, 16)?;
    let end = parse_num(range.get(dash + 1..)?, 16)?;
    let start_of_name = name.iter().position(|c| *c != b' ').unwrap_or(name.len());
    Some(Mapping {
        start: start as usize,
        end: end as usize,
        private: perms.get(3) == Some(&b'p'),
        inode: parse_num(inode, 10)?,
        name: name.get(start_of_name..)?,
    })
}

fn parse_num(digits: &[u8], radix: u32) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        let x = (d as char).to_digit(radix)?;
        v = v.checked_mul(radix as u64)?.checked_add(x as u64)?;
    }
    Some(v)
}

/// SIGCHLD: report the child's exit, but leave it a zombie (its pid keeps
/// the process group id ours); reap the other children that ended.
unsafe fn on_child_exit(child: &mut Child) {
    if !child.reported {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let options = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        if libc::waitid(libc::P_PID, child.pid as libc::id_t, &mut info, options) == 0
            && info.si_pid() == child.pid
        {
            child.report(&info);
        }
    }
    let mut kids = [0 as pid_t; MAX_KIDS];
    if let Some(n) = children(&mut kids) {
        for &kid in kids.iter().take(n) {
            if kid != child.pid {
                libc::waitpid(kid, std::ptr::null_mut(), libc::WNOHANG);
            }
        }
    }
}

/// SIGKILL the child's group (while the child is unreaped, so the group id
/// is still ours) and every child of ours, reap them, and go again until
/// none is left: orphans of the killed ones are reparented to us meanwhile.
unsafe fn kill_all(child: &mut Child) {
    let mut kids = [0 as pid_t; MAX_KIDS];
    for _ in 0..MAX_ROUNDS {
        if !child.reaped {
            libc::kill(-child.pid, libc::SIGKILL);
        }
        let Some(n) = children(&mut kids) else {
            // No /proc: the group and the child only.
            if !child.reaped {
                libc::kill(child.pid, libc::SIGKILL);
                reap(child.pid, child);
            }
            while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
            return;
        };
        if n == 0 {
            return;
        }
        for &kid in kids.iter().take(n) {
            libc::kill(kid, libc::SIGKILL);
        }
        for &kid in kids.iter().take(n) {
            reap(kid, child);
        }
    }
}

/// Wait for `pid` (a child of ours that was just sent SIGKILL) and reap it.
/// The started process is reported before it is reaped: a reaper stopped
/// in between leaves a zombie whose status the host can still read.
unsafe fn reap(pid: pid_t, child: &mut Child) {
    let mut info: libc::siginfo_t = std::mem::zeroed();
    let wait = |info: &mut libc::siginfo_t, options: c_int| loop {
        let r = libc::waitid(libc::P_PID, pid as libc::id_t, info, options);
        if r == 0 || errno() != libc::EINTR {
            break r == 0;
        }
    };
    if pid == child.pid {
        if wait(&mut info, libc::WEXITED | libc::WNOWAIT) {
            child.report(&info);
        }
        wait(&mut info, libc::WEXITED);
        child.reaped = true;
    } else {
        wait(&mut info, libc::WEXITED);
    }
}

/// Our children, live or zombie, from `/proc/thread-self/children` (the
/// reaper has one thread). None without `/proc`.
unsafe fn children(out: &mut [pid_t; MAX_KIDS]) -> Option<usize> {
    let fd = libc::open(
        c"/proc/thread-self/children".as_ptr(),
        libc::O_RDONLY | libc::O_CLOEXEC,
    );
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 4096];
    let len = read_full(fd, &mut buf);
    libc::close(fd);
    // A number cut by a full buffer is left for the next round.
    let complete = if len == buf.len() {
        buf.iter().rposition(|b| *b == b' ').unwrap_or(0)
    } else {
        len
    };
    let mut n = 0;
    let mut pid: pid_t = 0;
    let mut digits = false;
    for &b in buf.iter().take(complete) {
        if b.is_ascii_digit() {
            pid = pid.wrapping_mul(10).wrapping_add((b - b'0') as pid_t);
            digits = true;
        } else if digits {
            if let Some(slot) = out.get_mut(n) {
                *slot = pid;
                n += 1;
            }
            pid = 0;
            digits = false;
        }
    }
    if digits {
        if let Some(slot) = out.get_mut(n) {
            *slot = pid;
            n += 1;
        }
    }
    Some(n)
}

/// Park every inherited descriptor high, set 0–5, close everything else
/// (including every descriptor of the host: its other agents' lifelines
/// must not be held open by us). Err: where to report, and the errno.
unsafe fn arrange_fds(fds: &Fds) -> Result<(), (c_int, c_int)> {
    let from = [
        fds.stdin,
        fds.stdout,
        fds.stderr,
        fds.lifeline,
        fds.status,
        fds.cwd,
    ];
    let mut parked = [-1; 6];
    for (slot, fd) in parked.iter_mut().zip(from) {
        *slot = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, PARK_AT);
        if *slot < 0 {
            return Err((fds.status, errno()));
        }
    }
    for (target, fd) in (0..).zip(parked) {
        // dup2 clears close-on-exec on the target, as stdio needs.
        if libc::dup2(fd, target) < 0 {
            return Err((parked[4], errno()));
        }
    }
    close_from(FD_CWD + 1);
    Ok(())
}

/// `close_range(first, ~0)`, or a loop on kernels before 5.9.
unsafe fn close_from(first: c_int) {
    if libc::syscall(
        libc::SYS_close_range,
        first as libc::c_uint,
        !0 as libc::c_uint,
        0,
    ) == 0
    {
        return;
    }
    let mut limit: libc::rlimit = std::mem::zeroed();
    let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
        limit.rlim_cur.min(1 << 20) as c_int
    } else {
        1024
    };
    for fd in first..max {
        libc::close(fd);
    }
}

/// Move `fd` to `target` (false if `fd` is invalid or the move failed).
unsafe fn place(fd: c_int, target: c_int) -> bool {
    if fd < 0 {
        return false;
    }
    if fd == target {
        return true;
    }
    let moved = libc::dup3(fd, target, libc::O_CLOEXEC) == target;
    libc::close(fd);
    moved
}

/// Every handler the host installed runs host code: back to the defaults.
unsafe fn reset_signal_handlers() {
    let mut dfl: libc::sigaction = std::mem::zeroed();
    dfl.sa_sigaction = libc::SIG_DFL;
    for sig in 1..65 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            libc::sigaction(sig, &dfl, std::ptr::null_mut());
        }
    }
}

unsafe fn ignore(sig: c_int) {
    let mut ign: libc::sigaction = std::mem::zeroed();
    ign.sa_sigaction = libc::SIG_IGN;
    libc::sigaction(sig, &ign, std::ptr::null_mut());
}

/// Start the child as `vfork` does: sharing our memory (no copy of the
/// host's page tables, which the reaper still maps at this point), on a
/// stack of its own, with us suspended until it has exec'd or exited.
/// (No `pthread_atfork` handlers run, unlike `fork`.)
unsafe fn spawn_child(plan: &Plan, reaper: pid_t) -> pid_t {
    const STACK: usize = 256 * 1024;
    let stack = libc::mmap(
        std::ptr::null_mut(),
        STACK,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
        -1,
        0,
    );
    if stack == libc::MAP_FAILED {
        return -1;
    }
    let args = ChildArgs { plan, reaper };
    // Stacks grow down on every Linux target we build; 16-byte aligned.
    let top = (stack as usize).wrapping_add(STACK) & !15;
    let pid = libc::clone(
        child_main,
        top as *mut libc::c_void,
        libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
        std::ptr::addr_of!(args) as *mut libc::c_void,
    );
    libc::munmap(stack, STACK);
    pid
}

struct ChildArgs<'a> {
    plan: &'a Plan,
    reaper: pid_t,
}

extern "C" fn child_main(arg: *mut libc::c_void) -> c_int {
    // SAFETY: `arg` is the `ChildArgs` on the reaper's stack, which stays
    // put while the reaper is suspended (CLONE_VFORK).
    unsafe {
        let args = &*(arg as *const ChildArgs<'_>);
        exec_child(args.plan, args.reaper)
    }
}

unsafe fn record(fd: c_int, tag: i32, value: i32) {
    let mut rec = [0u8; RECORD];
    let (t, v) = rec.split_at_mut(4);
    t.copy_from_slice(&tag.to_ne_bytes());
    v.copy_from_slice(&value.to_ne_bytes());
    // RECORD < PIPE_BUF: one write, never split.
    while libc::write(fd, rec.as_ptr().cast(), RECORD) < 0 && errno() == libc::EINTR {}
}

/// (tag, value) of a record.
pub(super) fn decode(rec: &[u8; RECORD]) -> (i32, i32) {
    let [a, b, c, d, e, f, g, h] = *rec;
    (
        i32::from_ne_bytes([a, b, c, d]),
        i32::from_ne_bytes([e, f, g, h]),
    )
}

/// Read until `buf` is full or EOF; the count read.
unsafe fn read_full(fd: c_int, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while let Some(rest) = buf.get_mut(got..) {
        if rest.is_empty() {
            break;
        }
        let n = libc::read(fd, rest.as_mut_ptr().cast(), rest.len());
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            break;
        }
        got += n as usize;
    }
    got
}

/// Empty the signalfd (non-blocking).
unsafe fn drain(fd: c_int) {
    let mut buf = [0u8; 1024];
    while libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) > 0 {}
}

/// A `waitid` result as the raw status `waitpid` would give.
unsafe fn wait_status(info: &libc::siginfo_t) -> i32 {
    let status = info.si_status();
    match info.si_code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        libc::CLD_KILLED => status & 0x7f,
        libc::CLD_DUMPED => (status & 0x7f) | 0x80,
        _ => 0,
    }
}

fn errno() -> c_int {
    // SAFETY: the calling thread's errno slot.
    unsafe { *libc::__errno_location() }
}
