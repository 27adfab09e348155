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

    use std::io;

    use windows_sys::Win32::Foundation::{
        CloseHandle, DuplicateHandle, DUPLICATE_SAME_ACCESS, FALSE, HANDLE,
    };
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
        SetInformationJobObject, TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    };
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, TerminateProcess};

    /// One agent's tree: its job (absent when Windows refused one, e.g. a
    /// host in a job that forbids nesting) and our own handle to its leader
    /// (tokio closes the child's handle once it has waited for it).
    /// Handles are kept as integers: raw handles are not `Send`.
    #[derive(Debug)]
    pub struct Job {
        job: Option<usize>,
        leader: usize,
    }

    impl Job {
        /// Take hold of the freshly spawned `process` and put it in a new
        /// job.
        pub fn adopt(process: HANDLE) -> io::Result<Job> {
            let mut leader: HANDLE = std::ptr::null_mut();
            // SAFETY: plain Win32 calls on handles we own; the info struct
            // is zero-initialised as the API allows; each handle created
            // here is closed once, on failure or in Drop.
            unsafe {
                let me = GetCurrentProcess();
                if DuplicateHandle(
                    me,
                    process,
                    me,
                    &mut leader,
                    0,
                    FALSE,
                    DUPLICATE_SAME_ACCESS,
                ) == 0
                {
                    return Err(io::Error::last_os_error());
                }
                let job = CreateJobObjectW(std::ptr::null(), std::ptr::null());
                if job.is_null() {
                    return Ok(Job {
                        job: None,
                        leader: leader as usize,
                    });
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
                    return Ok(Job {
                        job: None,
                        leader: leader as usize,
                    });
                }
                Ok(Job {
                    job: Some(job as usize),
                    leader: leader as usize,
                })
            }
        }

        /// Stop the tree (or, without a job, the leader alone). Harmless
        /// once they have ended: the handles still name them.
        pub fn terminate(&self) -> bool {
            // SAFETY: handles owned by self, open until Drop.
            unsafe {
                match self.job {
                    Some(job) => TerminateJobObject(job as HANDLE, 1) != 0,
                    None => TerminateProcess(self.leader as HANDLE, 1) != 0,
                }
            }
        }
    }

    impl Drop for Job {
        fn drop(&mut self) {
            // SAFETY: each handle was opened in adopt and is closed once.
            unsafe {
                if let Some(job) = self.job {
                    CloseHandle(job as HANDLE);
                }
                CloseHandle(self.leader as HANDLE);
            }
        }
    }
}
