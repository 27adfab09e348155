//! `fs/read_text_file` and `fs/write_text_file`, confined to a [`Scope`].

use std::io::BufReader;

use serde::Deserialize;

use super::config::FsConfig;
use super::confined;
use super::error::BuiltinError;
use super::jobs::Cancel;
use super::lines::{read_window, Bounds, WindowError};
use super::roots::Scope;
use crate::rpc::{json_str_len, push_json_str_in_pieces, ENVELOPE_SLACK};

/// Bytes of text escaped between two checkpoints of the work.
pub(super) const ESCAPE_PIECE: usize = 256 * 1024;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadParams {
    pub session_id: String,
    pub path: String,
    pub line: Option<u64>,
    pub limit: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteParams {
    pub session_id: String,
    pub path: String,
    pub content: String,
}

/// A path written with a trailing separator names a directory: never a
/// file (`plain.txt/` must not read `plain.txt`, `newdir/` must not create
/// a file).
fn names_a_directory(path: &str) -> bool {
    let separators: &[char] = if cfg!(windows) { &['/', '\\'] } else { &['/'] };
    let dot_trimmed = path.strip_suffix('.').unwrap_or(path);
    path.ends_with(separators) || dot_trimmed.ends_with(separators)
}

/// The `ReadTextFileResponse` as JSON text.
pub fn read(
    scope: &Scope,
    cfg: &FsConfig,
    p: &ReadParams,
    cancel: &Cancel,
) -> Result<String, BuiltinError> {
    let max_bytes = cfg.max_file_bytes;
    if names_a_directory(&p.path) {
        return Err(BuiltinError::not_a_file(&p.path));
    }
    let target = scope.resolve(&p.path)?;
    let file = confined::open_for_read(&target, &p.path)?;
    if p.line.is_none() && p.limit.is_none() {
        // The whole file: refuse a big one before reading any of it.
        let len = file
            .metadata()
            .map_err(|e| BuiltinError::io(&p.path, &e))?
            .len();
        if len > max_bytes as u64 {
            return Err(BuiltinError::too_large(&p.path, max_bytes));
        }
    }
    let bounds = Bounds {
        cap: max_bytes,
        max_scan: cfg.max_scan_bytes,
        stop: &|| cancel.checkpoint(),
    };
    let bytes = read_window(
        BufReader::with_capacity(256 * 1024, file),
        p.line,
        p.limit,
        &bounds,
    )
    .map_err(|e| match e {
        WindowError::TooLarge => {
            BuiltinError::too_large(&format!("the text read from {}", p.path), max_bytes)
        }
        WindowError::ScanLimit => BuiltinError::scan_limit(&p.path, cfg.max_scan_bytes),
        WindowError::Stopped => BuiltinError::cancelled(),
        WindowError::Io(e) => BuiltinError::io(&p.path, &e),
    })?;
    let content = String::from_utf8(bytes).map_err(|_| BuiltinError::not_utf8(&p.path))?;
    cancel.check()?;
    // Escaped straight into a buffer of the exact size (plus room for the
    // envelope): no intermediate JSON value, no reallocation. In pieces,
    // between which another agent's job may take the CPU.
    let mut out = String::with_capacity(json_str_len(&content) + 16 + ENVELOPE_SLACK);
    out.push_str(r#"{"content":"#);
    if !push_json_str_in_pieces(&mut out, &content, ESCAPE_PIECE, || cancel.checkpoint()) {
        return Err(BuiltinError::cancelled());
    }
    out.push('}');
    Ok(out)
}

/// The (empty) `WriteTextFileResponse` as JSON text: `{}`, an object as
/// the schema says (strict agents reject `null` there).
pub fn write(
    scope: &Scope,
    max_bytes: usize,
    p: &WriteParams,
    cancel: &Cancel,
) -> Result<String, BuiltinError> {
    if p.content.len() > max_bytes {
        return Err(BuiltinError::too_large("the content", max_bytes));
    }
    if names_a_directory(&p.path) {
        return Err(BuiltinError::not_a_file(&p.path));
    }
    let target = scope.resolve(&p.path)?;
    // The last check is right before the rename: a cancelled write leaves
    // the old file in place.
    confined::write_atomically(&target, p.content.as_bytes(), &p.path, &|| !cancel.commit())?;
    Ok("{}".into())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    /// A root to confine to and a directory outside it, removed when the
    /// test ends.
    struct Dir(tempfile::TempDir);

    impl Dir {
        fn new(name: &str) -> Self {
            let d = tempfile::Builder::new()
                .prefix(&format!("acp-fs-{name}-"))
                .tempdir()
                .unwrap();
            std::fs::create_dir(d.path().join("root")).unwrap();
            std::fs::create_dir(d.path().join("outside")).unwrap();
            Self(d)
        }
        fn join(&self, path: &str) -> PathBuf {
            self.0.path().join(path)
        }
        fn scope(&self) -> Scope {
            Scope {
                roots: vec![self.join("root")],
                base: self.join("root"),
            }
        }
    }

    fn rd(scope: &Scope, path: &str) -> Result<String, BuiltinError> {
        let p = ReadParams {
            session_id: "s".into(),
            path: path.into(),
            line: None,
            limit: None,
        };
        let cfg = FsConfig {
            max_file_bytes: 1024,
            ..FsConfig::default()
        };
        read(scope, &cfg, &p, &Cancel::default())
    }

    fn wr(scope: &Scope, path: &str, content: &str) -> Result<String, BuiltinError> {
        let p = WriteParams {
            session_id: "s".into(),
            path: path.into(),
            content: content.into(),
        };
        write(scope, 1024, &p, &Cancel::default())
    }

    #[test]
    fn a_trailing_slash_names_a_directory() {
        let d = Dir::new("slash");
        let s = d.scope();
        wr(&s, "plain.txt", "x").unwrap();
        for path in ["plain.txt/", "plain.txt/."] {
            assert_eq!(rd(&s, path).unwrap_err().reason, "notAFile", "{path}");
        }
        assert_eq!(wr(&s, "newdir/", "x").unwrap_err().reason, "notAFile");
        assert_eq!(wr(&s, "plain.txt/", "y").unwrap_err().reason, "notAFile");
        assert!(!d.join("root/newdir").exists());
        assert_eq!(rd(&s, "plain.txt").unwrap(), r#"{"content":"x"}"#);
        // Names that merely end in dots are files.
        wr(&s, "dots..", "z").unwrap();
        assert_eq!(rd(&s, "dots..").unwrap(), r#"{"content":"z"}"#);
    }

    #[test]
    fn long_names_are_written_and_too_long_ones_say_so() {
        let d = Dir::new("names");
        let s = d.scope();
        let name = "n".repeat(244);
        wr(&s, &name, "fits").unwrap();
        assert_eq!(rd(&s, &name).unwrap(), r#"{"content":"fits"}"#);
        let name = "n".repeat(255);
        wr(&s, &name, "fits").unwrap();
        let err = wr(&s, &"n".repeat(300), "x").unwrap_err();
        assert_eq!(err.errno, Some("ENAMETOOLONG"), "{err:?}");
    }

    #[test]
    fn a_cancelled_write_leaves_the_old_file() {
        let d = Dir::new("cancel");
        let s = d.scope();
        wr(&s, "f.txt", "old").unwrap();
        let cancel = Cancel::default();
        drop(cancel.raise_on_drop());
        let p = WriteParams {
            session_id: "s".into(),
            path: "f.txt".into(),
            content: "new".into(),
        };
        assert_eq!(
            write(&s, 1024, &p, &cancel).unwrap_err().reason,
            "cancelled"
        );
        assert_eq!(rd(&s, "f.txt").unwrap(), r#"{"content":"old"}"#);
        let names: Vec<_> = std::fs::read_dir(d.join("root"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["f.txt"]);
    }

    #[test]
    fn replacing_a_setuid_file_strips_the_bits_and_keeps_the_owner() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let d = Dir::new("setuid");
        let s = d.scope();
        let f = d.join("root/tool");
        std::fs::write(&f, "old").unwrap();
        // SAFETY: plain libc call.
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            std::os::unix::fs::chown(&f, Some(4321), Some(4321)).unwrap();
        }
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o6755)).unwrap();
        wr(&s, "tool", "agent").unwrap();
        let meta = std::fs::metadata(&f).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o755);
        if root {
            assert_eq!((meta.uid(), meta.gid()), (4321, 4321));
        } else {
            eprintln!("not root: the owner part of this test is skipped");
        }
    }

    #[test]
    fn write_creates_parents_and_replaces_atomically() {
        let d = Dir::new("write");
        let s = d.scope();
        wr(&s, "a/b/c.txt", "héllo").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.join("root/a/b/c.txt")).unwrap(),
            "héllo"
        );
        assert_eq!(rd(&s, "a/b/c.txt").unwrap(), r#"{"content":"héllo"}"#);
        wr(&s, "a/b/c.txt", "second").unwrap();
        assert_eq!(rd(&s, "a/b/c.txt").unwrap(), r#"{"content":"second"}"#);
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(d.join("root/a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["c.txt"]);
    }

    #[test]
    fn write_keeps_mode_and_never_writes_through_links() {
        use std::os::unix::fs::PermissionsExt;
        let d = Dir::new("links");
        let s = d.scope();
        let script = d.join("root/run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
        wr(&s, "run.sh", "new").unwrap();
        assert_eq!(
            std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
            0o750
        );

        // A hard link to a file outside: the link is replaced, the outside
        // file keeps its content.
        let outside = d.join("outside/victim.txt");
        std::fs::write(&outside, "precious").unwrap();
        std::fs::hard_link(&outside, d.join("root/hard.txt")).unwrap();
        wr(&s, "hard.txt", "agent").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");

        // A symlink pointing out is refused; a dangling one as well.
        symlink(&outside, d.join("root/soft.txt")).unwrap();
        assert_eq!(wr(&s, "soft.txt", "x").unwrap_err().reason, "outsideRoots");
        symlink(d.join("outside/new.txt"), d.join("root/dangling.txt")).unwrap();
        assert_eq!(
            wr(&s, "dangling.txt", "x").unwrap_err().reason,
            "outsideRoots"
        );
        assert!(!d.join("outside/new.txt").exists());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
    }

    #[test]
    fn only_regular_utf8_files_within_the_cap_are_read() {
        let d = Dir::new("kinds");
        let s = d.scope();
        std::fs::create_dir(d.join("root/sub")).unwrap();
        assert_eq!(rd(&s, "sub").unwrap_err().reason, "notAFile");
        assert_eq!(rd(&s, ".").unwrap_err().reason, "notAFile");
        assert_eq!(wr(&s, "sub", "x").unwrap_err().reason, "notAFile");
        std::fs::write(d.join("root/bin"), [0xff, 0xfe, 0x00]).unwrap();
        assert_eq!(rd(&s, "bin").unwrap_err().reason, "notUtf8");
        std::fs::write(d.join("root/big"), "x".repeat(1025)).unwrap();
        assert_eq!(rd(&s, "big").unwrap_err().reason, "tooLarge");
        assert_eq!(
            wr(&s, "w", &"x".repeat(1025)).unwrap_err().reason,
            "tooLarge"
        );
        assert_eq!(rd(&s, "missing.txt").unwrap_err().code, -32002);
        // A FIFO is refused without blocking on open.
        let fifo = d.join("root/fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(rd(&s, "fifo").unwrap_err().reason, "notAFile");
        assert_eq!(wr(&s, "fifo", "x").unwrap_err().reason, "notAFile");
    }

    #[test]
    fn device_files_outside_are_refused_even_when_linked_in() {
        let d = Dir::new("dev");
        let s = d.scope();
        symlink("/dev/zero", d.join("root/zero")).unwrap();
        assert_eq!(rd(&s, "zero").unwrap_err().reason, "outsideRoots");
        assert_eq!(rd(&s, "/dev/null").unwrap_err().reason, "outsideRoots");
        assert_eq!(wr(&s, "/dev/null", "x").unwrap_err().reason, "outsideRoots");
    }
}
