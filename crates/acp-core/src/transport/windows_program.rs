//! Windows: which file a program name runs, and whether its arguments can
//! reach it intact.
//!
//! Rust's `Command` looks a bare name up as `name.exe` only, so what npm
//! installs (`npx.cmd`, `agent.cmd` shims) would not be found. Here a name
//! is looked up the way cmd.exe does: each directory of the child's PATH in
//! turn, each PATHEXT extension in turn. The current directory is never
//! searched: a workspace could plant an `agent.cmd` there.
//!
//! A batch file (`.cmd`/`.bat`) runs through cmd.exe, which reads its
//! command line as syntax. Rust's std (1.77 and later) quotes every
//! argument so none is (`&`, `|`, `^`, `%`, `!`, quotes and spaces come out
//! verbatim), and refuses what no quoting can carry: a line break, where
//! cmd.exe would end the command. That refusal is made here first, naming
//! the argument.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// cmd.exe's default when PATHEXT is unset.
const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// The file `program` names for a child with `env` (set over the host's
/// environment, or an empty one): an existing file, or `program` unchanged
/// (std then reports it missing, or finds it in the system directories).
pub(crate) fn resolve(program: &str, env: &[(String, String)], clear_env: bool) -> PathBuf {
    let var = |name: &str| child_var(name, env, clear_env);
    let exts: Vec<String> = var("PATHEXT")
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_else(|| DEFAULT_PATHEXT.to_string())
        .split(';')
        .filter(|e| e.starts_with('.') && e.len() > 1)
        .map(str::to_string)
        .collect();
    let given = Path::new(program);
    let has_dir = program.contains(['\\', '/']) || given.is_absolute() || given.has_root();
    if has_dir {
        return find_in(given, &exts).unwrap_or_else(|| given.to_path_buf());
    }
    if let Some(path) = var("PATH") {
        for dir in std::env::split_paths(&path) {
            // An empty or relative entry would search the current directory.
            if !dir.is_absolute() {
                continue;
            }
            if let Some(found) = find_in(&dir.join(program), &exts) {
                return found;
            }
        }
    }
    given.to_path_buf()
}

/// `base` itself if it has an extension and is a file, else `base` + the
/// first extension of `exts` that is a file.
fn find_in(base: &Path, exts: &[String]) -> Option<PathBuf> {
    if base.extension().is_some() && base.is_file() {
        return Some(base.to_path_buf());
    }
    exts.iter().find_map(|ext| {
        let mut name = base.as_os_str().to_os_string();
        name.push(ext);
        let path = PathBuf::from(name);
        path.is_file().then_some(path)
    })
}

/// The child's value of `name` (case-insensitive, as on Windows): the last
/// entry of `env` wins, else the host's unless the environment is cleared.
fn child_var(name: &str, env: &[(String, String)], clear_env: bool) -> Option<OsString> {
    match env.iter().rev().find(|(k, _)| k.eq_ignore_ascii_case(name)) {
        Some((_, v)) => Some(v.into()),
        None if clear_env => None,
        None => std::env::var_os(name),
    }
}

/// Does `path` run through cmd.exe?
pub(crate) fn is_batch(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("cmd") || e.eq_ignore_ascii_case("bat"))
}

/// An error if an argument cannot be passed to the batch file `path`
/// intact (see the module's doc).
pub(crate) fn check_batch_args(path: &Path, args: &[String]) -> io::Result<()> {
    match args.iter().position(|a| a.contains(['\r', '\n'])) {
        None => Ok(()),
        Some(i) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "argument {} holds a line break, which cannot be passed to a batch file ({}) \
                 safely: cmd.exe would end the command there; run the program it starts \
                 (e.g. node and its script) directly",
                i + 1,
                path.display()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory on a test's `Path`, removed when the test ends.
    struct Dir(tempfile::TempDir);

    impl Dir {
        fn new(name: &str) -> Self {
            let dir = tempfile::Builder::new()
                .prefix(&format!("acp-prog-{name}-"))
                .tempdir()
                .unwrap();
            Self(dir)
        }
        fn path(&self) -> &Path {
            self.0.path()
        }
        fn file(&self, name: &str) -> PathBuf {
            let path = self.path().join(name);
            std::fs::write(&path, "@echo off\r\n").unwrap();
            path
        }
    }

    /// Windows names are case-insensitive: `agent` + `.EXE` is `agent.exe`.
    fn same(a: PathBuf, b: PathBuf) -> bool {
        a.to_string_lossy()
            .eq_ignore_ascii_case(&b.to_string_lossy())
    }

    fn path_env(dirs: &[&Path]) -> Vec<(String, String)> {
        let joined = std::env::join_paths(dirs).unwrap();
        vec![("Path".into(), joined.to_string_lossy().into_owned())]
    }

    #[test]
    fn a_bare_name_is_found_through_path_and_pathext_in_order() {
        let (a, b) = (Dir::new("a"), Dir::new("b"));
        let cmd = b.file("agent.cmd");
        b.file("agent.bat");
        let env = path_env(&[a.path(), b.path()]);
        // PATHEXT's order: .BAT before .CMD by default.
        assert!(same(
            resolve("agent", &env, false),
            b.path().join("agent.bat")
        ));
        let exe = a.file("agent.exe");
        let found = resolve("agent", &env, false);
        assert!(same(found, exe.clone()), "an earlier directory wins");
        let mut env = env;
        env.push(("PATHEXT".into(), ".CMD;.EXE".into()));
        assert!(same(resolve("agent", &env, false), exe.clone()));
        let explicit = resolve("agent.cmd", &env, false);
        assert!(same(explicit, cmd.clone()), "an explicit extension");
        assert!(is_batch(&cmd) && is_batch(Path::new("X.BAT")) && !is_batch(&exe));
    }

    #[test]
    fn paths_take_an_extension_and_unknown_names_pass_through() {
        let d = Dir::new("p");
        let cmd = d.file("tool.cmd");
        let given = d.path().join("tool");
        assert!(same(resolve(given.to_str().unwrap(), &[], false), cmd));
        assert_eq!(
            resolve("no-such-agent", &path_env(&[d.path()]), false),
            PathBuf::from("no-such-agent")
        );
        // Not searched: a relative PATH entry (the current directory).
        let rel = vec![("PATH".into(), ".".to_string())];
        assert_eq!(resolve("tool", &rel, true), PathBuf::from("tool"));
    }

    #[test]
    fn a_line_break_cannot_reach_a_batch_file() {
        let ok = ["a b".to_string(), "&|^%!\"".to_string()];
        assert!(check_batch_args(Path::new("x.cmd"), &ok).is_ok());
        let bad = ["a".to_string(), "b\r\nc".to_string()];
        let err = check_batch_args(Path::new("x.cmd"), &bad).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(
            err.to_string().starts_with("argument 2 holds a line break"),
            "{err}"
        );
    }
}
