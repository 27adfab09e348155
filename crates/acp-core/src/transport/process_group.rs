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

/// How a process ended: its exit code, or the signal that killed it.
/// On Windows a tree stopped by [`TreeControl`](super::TreeControl) exits
/// with [`windows_job::KILLED`], reported as `SIGKILL` (as Node does for a
/// child it killed), so a killed agent is told from one that failed.
pub fn exit_parts(status: &std::process::ExitStatus) -> (Option<i32>, Option<String>) {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        (status.code(), status.signal().map(signal_name))
    }
    #[cfg(windows)]
    {
        match status.code() {
            Some(windows_job::KILLED) => (None, Some("SIGKILL".to_string())),
            code => (code, None),
        }
    }
    #[cfg(not(any(unix, windows)))]
    {
        (status.code(), None)
    }
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
pub(crate) mod windows_job {
    //! Windows has no process groups: each agent is put in a Job Object
    //! with KILL_ON_JOB_CLOSE. Terminating the job stops the whole tree, and
    //! if the host dies its handle closes and Windows kills the tree too.
    //! Everything goes through handles, never a pid: a handle names one
    //! process (or job) for as long as it is open, and while a handle to
    //! the leader is open Windows does not give its pid to another process.

    use windows_sys::Win32::Foundation::{
        CloseHandle, DuplicateHandle, DUPLICATE_SAME_ACCESS, FALSE, HANDLE,
    };
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
        SetInformationJobObject, TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    };
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, TerminateProcess};

    /// The exit code of every process of a tree we stop ("ACPK"): told
    /// apart from a process that exits 1 by itself.
    pub const KILLED: i32 = 0x4143_504B;

    /// One agent's tree: its job (absent when Windows refused one, e.g. a
    /// host in a job that forbids nesting) and our own handle to its leader
    /// (tokio closes the child's handle once it has waited for it).
    /// Handles are kept as integers: raw handles are not `Send`.
    #[derive(Debug)]
    pub struct Job {
        job: Option<usize>,
        leader: Option<usize>,
    }

    impl Job {
        /// Take hold of the freshly spawned `process` and put it in a new
        /// job.
        pub fn adopt(process: HANDLE) -> Job {
            Job {
                leader: duplicate(process),
                job: new_job(process),
            }
        }

        /// Stop the tree (or, without a job, the leader alone). Harmless
        /// once they have ended: the handles still name them.
        pub fn terminate(&self) -> bool {
            // SAFETY: handles owned by self, open until Drop.
            unsafe {
                match (self.job, self.leader) {
                    (Some(job), _) => TerminateJobObject(job as HANDLE, KILLED as u32) != 0,
                    (None, Some(leader)) => TerminateProcess(leader as HANDLE, KILLED as u32) != 0,
                    (None, None) => false,
                }
            }
        }
    }

    /// Our own handle to `process`, kept until the tree is dropped.
    fn duplicate(process: HANDLE) -> Option<usize> {
        let mut leader: HANDLE = std::ptr::null_mut();
        // SAFETY: duplicating a handle we own into our own process, into a
        // live out-pointer.
        let ok = unsafe {
            let me = GetCurrentProcess();
            DuplicateHandle(
                me,
                process,
                me,
                &mut leader,
                0,
                FALSE,
                DUPLICATE_SAME_ACCESS,
            )
        };
        (ok != 0).then_some(leader as usize)
    }

    /// A kill-on-close job holding `process`, if Windows allows one.
    fn new_job(process: HANDLE) -> Option<usize> {
        // SAFETY: plain Win32 calls on handles we own; the info struct is
        // zero-initialised as the API allows; the job is closed on failure
        // or in Drop.
        unsafe {
            let job = CreateJobObjectW(std::ptr::null(), std::ptr::null());
            if job.is_null() {
                return None;
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
                return None;
            }
            Some(job as usize)
        }
    }

    impl Drop for Job {
        fn drop(&mut self) {
            // SAFETY: each handle was opened in adopt and is closed once.
            unsafe {
                for handle in [self.job, self.leader].into_iter().flatten() {
                    CloseHandle(handle as HANDLE);
                }
            }
        }
    }
}
