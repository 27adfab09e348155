//! `fs/read_text_file` and `fs/write_text_file`, confined to a [`Scope`].

use std::io::BufReader;

use serde::Deserialize;
use serde_json::json;

use super::confined;
use super::error::BuiltinError;
use super::lines::{read_window, WindowError};
use super::roots::Scope;

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

/// The `ReadTextFileResponse` as JSON text.
pub fn read(scope: &Scope, max_bytes: usize, p: &ReadParams) -> Result<String, BuiltinError> {
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
    let bytes =
        read_window(BufReader::new(file), p.line, p.limit, max_bytes).map_err(|e| match e {
            WindowError::TooLarge => {
                BuiltinError::too_large(&format!("the text read from {}", p.path), max_bytes)
            }
            WindowError::Io(e) => BuiltinError::io(&p.path, &e),
        })?;
    let content = String::from_utf8(bytes).map_err(|_| BuiltinError::not_utf8(&p.path))?;
    Ok(json!({ "content": content }).to_string())
}

/// The (empty) `WriteTextFileResponse` as JSON text: `{}`, an object as
/// the schema says (strict agents reject `null` there).
pub fn write(scope: &Scope, max_bytes: usize, p: &WriteParams) -> Result<String, BuiltinError> {
    if p.content.len() > max_bytes {
        return Err(BuiltinError::too_large("the content", max_bytes));
    }
    let target = scope.resolve(&p.path)?;
    confined::write_atomically(&target, p.content.as_bytes(), &p.path)?;
    Ok("{}".into())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Self {
            let d = std::env::temp_dir().join(format!("acp-fs-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(d.join("root")).unwrap();
            std::fs::create_dir_all(d.join("outside")).unwrap();
            Self(d)
        }
        fn scope(&self) -> Scope {
            Scope {
                roots: vec![self.0.join("root")],
                base: self.0.join("root"),
            }
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn rd(scope: &Scope, path: &str) -> Result<String, BuiltinError> {
        let p = ReadParams {
            session_id: "s".into(),
            path: path.into(),
            line: None,
            limit: None,
        };
        read(scope, 1024, &p)
    }

    fn wr(scope: &Scope, path: &str, content: &str) -> Result<String, BuiltinError> {
        let p = WriteParams {
            session_id: "s".into(),
            path: path.into(),
            content: content.into(),
        };
        write(scope, 1024, &p)
    }

    #[test]
    fn write_creates_parents_and_replaces_atomically() {
        let d = Dir::new("write");
        let s = d.scope();
        wr(&s, "a/b/c.txt", "héllo").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.0.join("root/a/b/c.txt")).unwrap(),
            "héllo"
        );
        assert_eq!(rd(&s, "a/b/c.txt").unwrap(), r#"{"content":"héllo"}"#);
        wr(&s, "a/b/c.txt", "second").unwrap();
        assert_eq!(rd(&s, "a/b/c.txt").unwrap(), r#"{"content":"second"}"#);
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(d.0.join("root/a/b"))
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
        let script = d.0.join("root/run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
        wr(&s, "run.sh", "new").unwrap();
        assert_eq!(
            std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
            0o750
        );

        // A hard link to a file outside: the link is replaced, the outside
        // file keeps its content.
        let outside = d.0.join("outside/victim.txt");
        std::fs::write(&outside, "precious").unwrap();
        std::fs::hard_link(&outside, d.0.join("root/hard.txt")).unwrap();
        wr(&s, "hard.txt", "agent").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");

        // A symlink pointing out is refused; a dangling one as well.
        symlink(&outside, d.0.join("root/soft.txt")).unwrap();
        assert_eq!(wr(&s, "soft.txt", "x").unwrap_err().reason, "outsideRoots");
        symlink(d.0.join("outside/new.txt"), d.0.join("root/dangling.txt")).unwrap();
        assert_eq!(
            wr(&s, "dangling.txt", "x").unwrap_err().reason,
            "outsideRoots"
        );
        assert!(!d.0.join("outside/new.txt").exists());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
    }

    #[test]
    fn only_regular_utf8_files_within_the_cap_are_read() {
        let d = Dir::new("kinds");
        let s = d.scope();
        std::fs::create_dir(d.0.join("root/sub")).unwrap();
        assert_eq!(rd(&s, "sub").unwrap_err().reason, "notAFile");
        assert_eq!(rd(&s, ".").unwrap_err().reason, "notAFile");
        assert_eq!(wr(&s, "sub", "x").unwrap_err().reason, "notAFile");
        std::fs::write(d.0.join("root/bin"), [0xff, 0xfe, 0x00]).unwrap();
        assert_eq!(rd(&s, "bin").unwrap_err().reason, "notUtf8");
        std::fs::write(d.0.join("root/big"), "x".repeat(1025)).unwrap();
        assert_eq!(rd(&s, "big").unwrap_err().reason, "tooLarge");
        assert_eq!(
            wr(&s, "w", &"x".repeat(1025)).unwrap_err().reason,
            "tooLarge"
        );
        assert_eq!(rd(&s, "missing.txt").unwrap_err().code, -32002);
        // A FIFO is refused without blocking on open.
        let fifo = d.0.join("root/fifo");
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
        symlink("/dev/zero", d.0.join("root/zero")).unwrap();
        assert_eq!(rd(&s, "zero").unwrap_err().reason, "outsideRoots");
        assert_eq!(rd(&s, "/dev/null").unwrap_err().reason, "outsideRoots");
        assert_eq!(wr(&s, "/dev/null", "x").unwrap_err().reason, "outsideRoots");
    }
}
