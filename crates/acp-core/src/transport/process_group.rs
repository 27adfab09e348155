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
    //!
    //! The leader is created suspended and resumed only once it is in its
    //! job ([`Job::start`]): a process it starts in its first instant is
    //! then in the job too, never outside it.

    use windows_sys::Win32::Foundation::{
        CloseHandle, DuplicateHandle, DUPLICATE_SAME_ACCESS, FALSE, HANDLE, INVALID_HANDLE_VALUE,
    };
    use windows_sys::Win32::System::Diagnostics::ToolHelp::{
        CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
    };
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
        SetInformationJobObject, TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    };
    use windows_sys::Win32::System::Threading::{
        GetCurrentProcess, OpenThread, ResumeThread, TerminateProcess, THREAD_SUSPEND_RESUME,
    };

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

        /// Let the leader run: resume the threads of the process `pid`
        /// (created suspended, and held by our handle, so the pid is its).
        /// A new process has one thread; resuming one that is not
        /// suspended does nothing.
        pub fn start(&self, pid: u32) -> std::io::Result<()> {
            let mut resumed = 0;
            for thread in threads_of(pid)? {
                // SAFETY: a thread id from a snapshot of our own child,
                // opened, resumed and closed here.
                unsafe {
                    let handle = OpenThread(THREAD_SUSPEND_RESUME, FALSE, thread);
                    if handle.is_null() {
                        continue;
                    }
                    if ResumeThread(handle) != u32::MAX {
                        resumed += 1;
                    }
                    CloseHandle(handle);
                }
            }
            if resumed == 0 {
                return Err(std::io::Error::other(
                    "the agent was created suspended and could not be resumed",
                ));
            }
            Ok(())
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

    /// The ids of the threads of process `pid`, from a system snapshot.
    fn threads_of(pid: u32) -> std::io::Result<Vec<u32>> {
        // SAFETY: the snapshot handle is ours and closed below; the entry
        // is zeroed with its size set, as the API requires.
        unsafe {
            let snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
            if snapshot == INVALID_HANDLE_VALUE {
                return Err(std::io::Error::last_os_error());
            }
            let mut entry: THREADENTRY32 = std::mem::zeroed();
            entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
            let mut threads = Vec::new();
            let mut more = Thread32First(snapshot, &mut entry) != 0;
            while more {
                if entry.th32OwnerProcessID == pid {
                    threads.push(entry.th32ThreadID);
                }
                more = Thread32Next(snapshot, &mut entry) != 0;
            }
            CloseHandle(snapshot);
            Ok(threads)
        }
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
