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
pub(crate) mod windows_tree {
    //! Windows has no process groups: each agent is put in a Job Object
    //! with KILL_ON_JOB_CLOSE. Terminating the job stops the whole tree, and
    //! if the host dies its handle closes and Windows kills the tree too.
    //! (Written for Windows; this repository's CI builds it there.)

    use std::collections::HashMap;
    use std::sync::Mutex;

    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
        SetInformationJobObject, TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    };

    /// pid → job handle (as usize: raw handles are not Send).
    static JOBS: Mutex<HashMap<u32, usize>> = Mutex::new(HashMap::new());

    /// Put the freshly spawned process `pid` (handle `process`) in a new job.
    pub fn adopt(pid: u32, process: HANDLE) -> bool {
        // SAFETY: plain Win32 calls on handles we own; the info struct is
        // zero-initialised as the API allows.
        unsafe {
            let job = CreateJobObjectW(std::ptr::null(), std::ptr::null());
            if job.is_null() {
                return false;
            }
            let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
            info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
            let ok = SetInformationJobObject(
                job,
                JobObjectExtendedLimitInformation,
                &info as *const _ as *const core::ffi::c_void,
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            ) != 0
                && AssignProcessToJobObject(job, process) != 0;
            if !ok {
                CloseHandle(job);
                return false;
            }
            JOBS.lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(pid, job as usize);
            true
        }
    }

    pub fn kill_tree(pid: u32) -> bool {
        let job = JOBS.lock().unwrap_or_else(|e| e.into_inner()).remove(&pid);
        match job {
            // SAFETY: the handle came from CreateJobObjectW and is closed once.
            Some(job) => unsafe {
                let done = TerminateJobObject(job as HANDLE, 1) != 0;
                CloseHandle(job as HANDLE);
                done
            },
            None => std::process::Command::new("taskkill")
                .args(["/PID", &pid.to_string(), "/T", "/F"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false),
        }
    }
}

#[cfg(not(any(unix, windows)))]
mod windows_tree {
    pub fn kill_tree(_pid: u32) -> bool {
        false
    }
}
