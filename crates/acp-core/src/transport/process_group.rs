//! Stopping the agent and everything it started: the agent leads its own
//! process group, so a signal to the group reaches `npx`/`sh` wrappers'
//! grandchildren too.

/// The two signals of the stop sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupSignal {
    Terminate,
    Kill,
}

/// Send `signal` to the process group led by `pid`. Returns false when no
/// process of the group is left.
#[cfg(unix)]
pub fn signal_group(pid: u32, signal: GroupSignal) -> bool {
    if pid == 0 {
        return false;
    }
    let sig = match signal {
        GroupSignal::Terminate => libc::SIGTERM,
        GroupSignal::Kill => libc::SIGKILL,
    };
    // SAFETY: kill(2) with a negative pid addresses a process group.
    unsafe { libc::kill(-(pid as libc::pid_t), sig) == 0 }
}

#[cfg(not(unix))]
pub fn signal_group(pid: u32, _signal: GroupSignal) -> bool {
    windows_tree::kill_tree(pid)
}

/// Synchronous, allocation-free SIGKILL of the whole group: safe to call
/// from an exit hook while the process is going down.
pub fn kill_group_now(pid: u32) -> bool {
    signal_group(pid, GroupSignal::Kill)
}

/// `SIGTERM`-style name for a signal number.
pub fn signal_name(sig: i32) -> String {
    #[cfg(unix)]
    {
        let name = match sig {
            libc::SIGHUP => "SIGHUP",
            libc::SIGINT => "SIGINT",
            libc::SIGQUIT => "SIGQUIT",
            libc::SIGILL => "SIGILL",
            libc::SIGABRT => "SIGABRT",
            libc::SIGBUS => "SIGBUS",
            libc::SIGFPE => "SIGFPE",
            libc::SIGKILL => "SIGKILL",
            libc::SIGSEGV => "SIGSEGV",
            libc::SIGPIPE => "SIGPIPE",
            libc::SIGALRM => "SIGALRM",
            libc::SIGTERM => "SIGTERM",
            libc::SIGUSR1 => "SIGUSR1",
            libc::SIGUSR2 => "SIGUSR2",
            _ => return format!("SIG{sig}"),
        };
        name.to_string()
    }
    #[cfg(not(unix))]
    {
        format!("SIG{sig}")
    }
}

#[cfg(windows)]
mod windows_tree {
    /// Without a Job Object handle here, fall back to `taskkill /T /F`,
    /// which walks the tree by parent pid.
    pub fn kill_tree(pid: u32) -> bool {
        std::process::Command::new("taskkill")
            .args(["/PID", &pid.to_string(), "/T", "/F"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    }
}

#[cfg(not(any(unix, windows)))]
mod windows_tree {
    pub fn kill_tree(_pid: u32) -> bool {
        false
    }
}
