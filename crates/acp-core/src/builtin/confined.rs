//! Opening a checked [`Target`] without being fooled by a race.
//!
//! On Unix the walk starts at the root directory's descriptor and opens one
//! component at a time with `O_NOFOLLOW`: the components are canonical, so
//! any symlink met now was swapped in after the check and is refused. The
//! file itself must be a regular file (devices, FIFOs and sockets are
//! refused before they are opened, so opening has no side effect). Writes go
//! to a temporary file in the same directory, renamed over the target.

use std::fs::File;
use std::io::{self, Write};

use super::error::BuiltinError;
use super::roots::Target;

/// Open the target for reading: it must exist and be a regular file.
pub fn open_for_read(target: &Target, label: &str) -> Result<File, BuiltinError> {
    if !target.exists() {
        return Err(BuiltinError::not_found(format!("{label} does not exist")));
    }
    imp::open_for_read(target, label)
}

/// Open the target directory (a terminal's cwd) the same way: a component
/// swapped for a symlink after the check is refused, so the descriptor is
/// the directory that was checked.
#[cfg(unix)]
pub fn open_dir(target: &Target, label: &str) -> Result<std::os::fd::OwnedFd, BuiltinError> {
    imp::walk(target, &target.existing, label)
}

/// Replace (or create) the target with `content`, atomically: readers see
/// the old file or the new one, never a half-written one. Missing parent
/// directories are created.
pub fn write_atomically(target: &Target, content: &[u8], label: &str) -> Result<(), BuiltinError> {
    imp::write_atomically(target, content, label)
}

/// A name for the temporary file next to `name`.
fn temp_name(name: &std::ffi::OsStr) -> std::ffi::OsString {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".acp-{}-{n}.tmp", std::process::id()));
    tmp
}

fn write_all_synced(mut file: File, content: &[u8]) -> io::Result<()> {
    file.write_all(content)?;
    file.sync_all()
}

#[cfg(unix)]
mod imp {
    use std::ffi::{CString, OsStr};
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;

    use super::{temp_name, write_all_synced, BuiltinError, Target};

    fn c(name: &OsStr) -> io::Result<CString> {
        CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
    }

    fn fd_or_err(fd: libc::c_int) -> io::Result<OwnedFd> {
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            // SAFETY: a fresh descriptor returned by open/openat, owned here.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        }
    }

    fn open_root(target: &Target) -> io::Result<OwnedFd> {
        let path = c(target.root.as_os_str())?;
        // SAFETY: a valid C string; the result is checked.
        fd_or_err(unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })
    }

    fn open_dir_at(dir: &OwnedFd, name: &OsStr) -> io::Result<OwnedFd> {
        let name = c(name)?;
        // SAFETY: a valid descriptor and C string; the result is checked.
        fd_or_err(unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        })
    }

    /// `lstat` relative to `dir`.
    fn stat_at(dir: &OwnedFd, name: &OsStr) -> io::Result<libc::stat> {
        let name = c(name)?;
        // SAFETY: `st` is plain data the kernel fills; the result is checked.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstatat(
                dir.as_raw_fd(),
                name.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(st)
        }
    }

    fn is_kind(st: &libc::stat, kind: libc::mode_t) -> bool {
        st.st_mode & libc::S_IFMT == kind
    }

    /// An error from opening a component that was checked a moment ago: a
    /// symlink there now means someone swapped it in.
    fn walk_error(dir: &OwnedFd, name: &OsStr, err: io::Error, label: &str) -> BuiltinError {
        let swapped = err.raw_os_error() == Some(libc::ELOOP)
            || stat_at(dir, name).is_ok_and(|st| is_kind(&st, libc::S_IFLNK));
        if swapped {
            BuiltinError::outside_roots(label)
        } else {
            BuiltinError::io(label, &err)
        }
    }

    /// Open the directories `names` below the root, one at a time.
    pub(super) fn walk(
        target: &Target,
        names: &[std::ffi::OsString],
        label: &str,
    ) -> Result<OwnedFd, BuiltinError> {
        let mut dir = open_root(target).map_err(|e| BuiltinError::io(label, &e))?;
        for name in names {
            dir = open_dir_at(&dir, name).map_err(|e| walk_error(&dir, name, e, label))?;
        }
        Ok(dir)
    }

    pub fn open_for_read(target: &Target, label: &str) -> Result<File, BuiltinError> {
        let Some((name, dirs)) = target.existing.split_last() else {
            return Err(BuiltinError::not_a_file(label)); // the root itself
        };
        let dir = walk(target, dirs, label)?;
        let before = stat_at(&dir, name).map_err(|e| BuiltinError::io(label, &e))?;
        if is_kind(&before, libc::S_IFLNK) {
            return Err(BuiltinError::outside_roots(label));
        }
        if !is_kind(&before, libc::S_IFREG) {
            return Err(BuiltinError::not_a_file(label));
        }
        let cname = c(name).map_err(|e| BuiltinError::io(label, &e))?;
        // SAFETY: a valid descriptor and C string; the result is checked.
        // O_NONBLOCK: should a FIFO be swapped in, opening it cannot hang.
        let fd = fd_or_err(unsafe {
            libc::openat(
                dir.as_raw_fd(),
                cname.as_ptr(),
                libc::O_RDONLY
                    | libc::O_NOFOLLOW
                    | libc::O_NONBLOCK
                    | libc::O_NOCTTY
                    | libc::O_CLOEXEC,
            )
        })
        .map_err(|e| walk_error(&dir, name, e, label))?;
        let file = File::from(fd);
        let meta = file.metadata().map_err(|e| BuiltinError::io(label, &e))?;
        use std::os::unix::fs::MetadataExt;
        // What was opened must be what was checked.
        if !meta.is_file()
            || meta.ino() != before.st_ino as u64
            || meta.dev() != before.st_dev as u64
        {
            return Err(BuiltinError::not_a_file(label));
        }
        Ok(file)
    }

    pub fn write_atomically(
        target: &Target,
        content: &[u8],
        label: &str,
    ) -> Result<(), BuiltinError> {
        let io_err = |e: io::Error| BuiltinError::io(label, &e);
        let (name, existing_dirs, new_dirs) = if target.exists() {
            let Some((name, dirs)) = target.existing.split_last() else {
                return Err(BuiltinError::not_a_file(label));
            };
            (name, dirs, &[][..])
        } else {
            let (name, new_dirs) = target.missing.split_last().expect("missing is non-empty");
            (name, &target.existing[..], new_dirs)
        };
        let mut dir = walk(target, existing_dirs, label)?;
        for new in new_dirs {
            let cname = c(new).map_err(io_err)?;
            // SAFETY: a valid descriptor and C string; the result is checked.
            if unsafe { libc::mkdirat(dir.as_raw_fd(), cname.as_ptr(), 0o777) } != 0 {
                let err = io::Error::last_os_error();
                if err.raw_os_error() != Some(libc::EEXIST) {
                    return Err(io_err(err));
                }
            }
            dir = open_dir_at(&dir, new).map_err(|e| walk_error(&dir, new, e, label))?;
        }

        // Keep the permission bits of a file being replaced.
        let mode = match stat_at(&dir, name) {
            Ok(st) if is_kind(&st, libc::S_IFREG) => Some(st.st_mode & 0o7777),
            Ok(st) if is_kind(&st, libc::S_IFLNK) => {
                return Err(BuiltinError::outside_roots(label))
            }
            Ok(_) => return Err(BuiltinError::not_a_file(label)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err(e)),
        };

        let tmp = c(&temp_name(name)).map_err(io_err)?;
        // SAFETY: a valid descriptor and C string; the result is checked.
        let fd = fd_or_err(unsafe {
            libc::openat(
                dir.as_raw_fd(),
                tmp.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o666 as libc::c_uint,
            )
        })
        .map_err(io_err)?;
        let file = File::from(fd);
        let written = (|| {
            if let Some(mode) = mode {
                use std::os::unix::fs::PermissionsExt;
                #[allow(clippy::unnecessary_cast)] // mode_t is u16 on macOS
                file.set_permissions(std::fs::Permissions::from_mode(mode as u32))?;
            }
            write_all_synced(file, content)?;
            let cname = c(name)?;
            // SAFETY: valid descriptors and C strings; the result is checked.
            // rename replaces the directory entry: a symlink or hard link
            // put there meanwhile is replaced, never written through.
            if unsafe {
                libc::renameat(
                    dir.as_raw_fd(),
                    tmp.as_ptr(),
                    dir.as_raw_fd(),
                    cname.as_ptr(),
                )
            } != 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })();
        if let Err(e) = written {
            // SAFETY: as above; best effort.
            unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
            return Err(io_err(e));
        }
        Ok(())
    }
}

#[cfg(not(unix))]
mod imp {
    //! Without `openat`: the same checks on full paths (a race between the
    //! check and the open is not caught here).
    use std::fs::{self, File};

    use super::{temp_name, write_all_synced, BuiltinError, Target};

    pub fn open_for_read(target: &Target, label: &str) -> Result<File, BuiltinError> {
        let path = target.path();
        let meta = fs::symlink_metadata(&path).map_err(|e| BuiltinError::io(label, &e))?;
        if !meta.is_file() {
            return Err(BuiltinError::not_a_file(label));
        }
        File::open(&path).map_err(|e| BuiltinError::io(label, &e))
    }

    pub fn write_atomically(
        target: &Target,
        content: &[u8],
        label: &str,
    ) -> Result<(), BuiltinError> {
        let io_err = |e: std::io::Error| BuiltinError::io(label, &e);
        let path = target.path();
        if let Ok(meta) = fs::symlink_metadata(&path) {
            if !meta.is_file() {
                return Err(BuiltinError::not_a_file(label));
            }
        }
        let parent = path
            .parent()
            .ok_or_else(|| BuiltinError::not_a_file(label))?;
        fs::create_dir_all(parent).map_err(io_err)?;
        let name = path
            .file_name()
            .ok_or_else(|| BuiltinError::not_a_file(label))?;
        let tmp = parent.join(temp_name(name));
        let result = File::create_new(&tmp)
            .and_then(|f| write_all_synced(f, content))
            .and_then(|()| fs::rename(&tmp, &path));
        if let Err(e) = result {
            let _ = fs::remove_file(&tmp);
            return Err(io_err(e));
        }
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::builtin::roots::resolve;
    use std::path::PathBuf;

    /// The check passed, then a directory on the path was swapped for a
    /// symlink pointing out: the open must notice and refuse.
    #[test]
    fn a_directory_swapped_for_a_symlink_after_the_check_is_refused() {
        let dir = std::env::temp_dir().join(format!("acp-swap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(dir.join("outside")).unwrap();
        std::fs::write(root.join("sub/f.txt"), "inside").unwrap();
        std::fs::write(dir.join("outside/f.txt"), "outside").unwrap();
        let roots = [root.clone()];
        let read_target = resolve(&roots, &root, "sub/f.txt").unwrap();
        let write_target = resolve(&roots, &root, "sub/new.txt").unwrap();

        std::fs::rename(root.join("sub"), root.join("moved")).unwrap();
        std::os::unix::fs::symlink(dir.join("outside"), root.join("sub")).unwrap();

        let err = open_for_read(&read_target, "sub/f.txt").unwrap_err();
        assert_eq!(err.reason, "outsideRoots");
        let err = write_atomically(&write_target, b"x", "sub/new.txt").unwrap_err();
        assert_eq!(err.reason, "outsideRoots");
        assert!(!dir.join("outside/new.txt").exists());
        // The file itself swapped for a symlink: refused as well.
        let file_target = resolve(&roots, &root, "moved/f.txt").unwrap();
        std::fs::remove_file(root.join("moved/f.txt")).unwrap();
        std::os::unix::fs::symlink(dir.join("outside/f.txt"), root.join("moved/f.txt")).unwrap();
        let err = open_for_read(&file_target, "moved/f.txt").unwrap_err();
        assert_eq!(err.reason, "outsideRoots");
        let _ = std::fs::remove_dir_all(PathBuf::from(&dir));
    }
}
