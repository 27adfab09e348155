//! Everything the forked reaper needs, prepared before the fork: after it
//! nothing may allocate, so the program is found on `PATH` here and argv
//! and the environment become NUL-terminated C arrays.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use libc::c_char;

/// What `execve` gets: the resolved path and the two pointer arrays (the
/// pointers point into the owned strings kept alongside).
pub(super) struct ExecPlan {
    pub path: CString,
    _argv: Vec<CString>,
    _envp: Vec<CString>,
    pub argv: Vec<*const c_char>,
    pub envp: Vec<*const c_char>,
}

/// glibc's `execvp` default when `PATH` is unset.
const DEFAULT_PATH: &str = "/bin:/usr/bin";

impl ExecPlan {
    /// `program` is found on the child's `PATH` (as `execvp` would do, but
    /// here, so a miss can name the directories searched). Relative names
    /// resolve against `cwd`, the directory the child will start in.
    pub fn new(
        program: &str,
        args: &[String],
        env: Vec<(OsString, OsString)>,
        cwd: RawFd,
    ) -> io::Result<Self> {
        let path_var = env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone());
        let path = find_program(program, path_var.as_deref(), cwd)?;
        let argv: Vec<CString> = std::iter::once(program.as_bytes().to_vec())
            .chain(args.iter().map(|a| a.as_bytes().to_vec()))
            .map(c_string)
            .collect::<io::Result<_>>()?;
        let envp: Vec<CString> = env
            .into_iter()
            .map(|(k, v)| {
                let mut kv = k.into_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                c_string(kv)
            })
            .collect::<io::Result<_>>()?;
        let ptrs = |v: &[CString]| {
            v.iter()
                .map(|s| s.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        };
        Ok(Self {
            path,
            argv: ptrs(&argv),
            envp: ptrs(&envp),
            _argv: argv,
            _envp: envp,
        })
    }
}

fn c_string(bytes: Vec<u8>) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an argument or environment entry contains a NUL byte",
        )
    })
}

/// The child's environment: the host's (unless `clear`) with `overrides`
/// set over it in order, a later entry winning.
pub(super) fn child_env(clear: bool, overrides: &[(String, String)]) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = if clear {
        Vec::new()
    } else {
        std::env::vars_os().collect()
    };
    for (k, v) in overrides {
        let k = OsString::from(k);
        match env.iter_mut().find(|(name, _)| *name == k) {
            Some(slot) => slot.1 = v.into(),
            None => env.push((k, v.into())),
        }
    }
    env
}

/// A name with a slash is used as given; a bare name is looked up in each
/// `PATH` directory. The miss names the `PATH` searched.
fn find_program(program: &str, path_var: Option<&OsStr>, cwd: RawFd) -> io::Result<CString> {
    if program.contains('/') {
        return c_string(program.as_bytes().to_vec());
    }
    let searched = path_var.unwrap_or(OsStr::new(DEFAULT_PATH));
    let mut not_executable = None;
    for dir in searched.as_bytes().split(|b| *b == b':') {
        // An empty entry means the current directory, as in execvp.
        let mut candidate = if dir.is_empty() {
            b".".to_vec()
        } else {
            dir.to_vec()
        };
        candidate.push(b'/');
        candidate.extend_from_slice(program.as_bytes());
        let Ok(candidate) = CString::new(candidate) else {
            continue;
        };
        match probe(cwd, &candidate) {
            Probe::Runnable => return Ok(candidate),
            Probe::NotExecutable => {
                not_executable.get_or_insert(candidate);
            }
            Probe::Missing => {}
        }
    }
    let searched = searched.to_string_lossy();
    let unset = if path_var.is_none() {
        " (PATH is unset)"
    } else {
        ""
    };
    Err(match not_executable {
        Some(found) => io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not executable (searched PATH {searched}{unset})",
                found.to_string_lossy()
            ),
        ),
        None => io::Error::new(
            io::ErrorKind::NotFound,
            format!("not found in any PATH directory (PATH {searched}{unset})"),
        ),
    })
}

enum Probe {
    Runnable,
    NotExecutable,
    Missing,
}

/// Is `path` (relative ones taken against `cwd`) a file we may execute?
fn probe(cwd: RawFd, path: &CString) -> Probe {
    // SAFETY: a valid descriptor and C string; `st` is plain data.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstatat(cwd, path.as_ptr(), &mut st, 0) != 0
            || st.st_mode & libc::S_IFMT != libc::S_IFREG
        {
            return Probe::Missing;
        }
        if libc::faccessat(cwd, path.as_ptr(), libc::X_OK, 0) == 0 {
            Probe::Runnable
        } else {
            Probe::NotExecutable
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here() -> RawFd {
        libc::AT_FDCWD
    }

    #[test]
    fn a_bare_name_is_found_on_path() {
        let path = find_program("sh", Some(OsStr::new("/nonexistent:/bin:/usr/bin")), here());
        assert!(path.unwrap().to_bytes().ends_with(b"/sh"));
    }

    #[test]
    fn a_miss_names_the_path_searched() {
        let err = find_program("no-such-agent-xyz", Some(OsStr::new("/a:/b")), here()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains("PATH /a:/b"), "{err}");
    }

    #[test]
    fn a_name_with_a_slash_is_not_searched() {
        let path = find_program("./x", Some(OsStr::new("/bin")), here()).unwrap();
        assert_eq!(path.to_bytes(), b"./x");
    }

    #[test]
    fn later_overrides_win_and_clear_starts_empty() {
        let env = child_env(true, &[("A".into(), "1".into()), ("A".into(), "2".into())]);
        assert_eq!(env, vec![(OsString::from("A"), OsString::from("2"))]);
    }
}
