//! What the host reads about processes it did not start itself (the ones
//! below a reaper), and how it signals them: `/proc/<pid>/stat`, the
//! children lists, and pidfds.
//!
//! A pid alone never names a process here: a process is its pid and its
//! start time, and a signal goes through a pidfd opened while the start
//! time read before and after the open is the same (so the pidfd names the
//! process that was seen, not one given its pid since).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use libc::pid_t;

/// One process, as seen at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stat {
    pub pid: pid_t,
    /// `R`, `S`, `T` (stopped), `Z` (zombie), …
    pub state: u8,
    pub ppid: pid_t,
    pub pgrp: pid_t,
    pub session: pid_t,
    /// Clock ticks after boot: with the pid, names one process.
    pub start: u64,
    /// Its wait status, as `waitpid` would report it (a zombie's is final).
    pub exit_code: i32,
}

impl Stat {
    /// Not yet ended (a zombie has ended, only its status is left).
    pub fn live(&self) -> bool {
        !matches!(self.state, b'Z' | b'X')
    }
}

/// `/proc/<pid>/stat`, or None if there is no such process (or no /proc).
pub(super) fn stat(pid: pid_t) -> Option<Stat> {
    let text = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

/// The fields after the command name, which may hold spaces and `)`.
fn parse_stat(pid: pid_t, text: &[u8]) -> Option<Stat> {
    let after = text.iter().rposition(|b| *b == b')')? + 2;
    let rest = std::str::from_utf8(text.get(after..)?).ok()?;
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<i64>().ok());
    Some(Stat {
        pid,
        state: *f.first()?.as_bytes().first()?,
        ppid: num(1)? as pid_t,
        pgrp: num(2)? as pid_t,
        session: num(3)? as pid_t,
        start: num(19)? as u64,
        // Field 52, since Linux 3.5.
        exit_code: num(49).unwrap_or(0) as i32,
    })
}

/// The children of `pid` (every thread's), live or zombie; None without
/// `/proc/<pid>/task/*/children` (`CONFIG_PROC_CHILDREN`).
pub(super) fn children(pid: pid_t) -> Option<Vec<pid_t>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut out = Vec::new();
    let mut any = false;
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        any = true;
        out.extend(
            text.split_ascii_whitespace()
                .filter_map(|p| p.parse::<pid_t>().ok()),
        );
    }
    any.then_some(out)
}

/// Every process's pid in `/proc`.
pub(super) fn all_pids() -> Vec<pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// The program name (`comm`) of `pid`, for reports.
pub(super) fn command(pid: pid_t) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

/// The owner of `pid`'s `/proc` entry (its real user, for a dumpable
/// process).
pub(super) fn owner(pid: pid_t) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}"))
        .ok()
        .map(|m| m.uid())
}

/// A pidfd for exactly the process `seen` (same pid, same start time);
/// Ok(None) if it is gone or its pid now names another process; Err if
/// the kernel has no pidfds (before Linux 5.3).
pub(super) fn open(seen: &Stat) -> io::Result<Option<OwnedFd>> {
    // SAFETY: a plain system call; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, seen.pid, 0) };
    if fd < 0 {
        let err = io::Error::last_os_error();
        return match err.raw_os_error() {
            Some(libc::ESRCH) => Ok(None),
            _ => Err(err),
        };
    }
    // SAFETY: a fresh descriptor, owned from here on.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // Opened before this read: if the process read now is the one seen
    // (it lived through the open), the pidfd names it.
    match stat(seen.pid) {
        Some(now) if now.start == seen.start => Ok(Some(fd)),
        _ => Ok(None),
    }
}

/// `pidfd_send_signal` with `flags` (0: the process; see [`GROUP`]).
pub(super) fn signal(fd: &OwnedFd, sig: i32, flags: u32) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a plain system call on a descriptor we own.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            flags,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `PIDFD_SIGNAL_PROCESS_GROUP` (Linux 6.9): the signal goes to the
/// process group of the pidfd's process, for as long as that process is
/// not reaped.
pub(super) const GROUP: u32 = 1 << 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_name_with_spaces_and_parens_is_skipped() {
        let mut line = b"42 (a) b (c) S 7 42 42 0 -1 0".to_vec();
        line.extend(b" 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0");
        let s = parse_stat(42, &line).unwrap();
        assert_eq!((s.state, s.ppid, s.pgrp, s.session), (b'S', 7, 42, 42));
        assert_eq!(s.start, 12345);
    }

    #[test]
    fn our_own_entry_reads() {
        let me = stat(std::process::id() as pid_t).unwrap();
        assert!(me.live());
        assert_eq!(me.ppid, unsafe { libc::getppid() });
    }
}
