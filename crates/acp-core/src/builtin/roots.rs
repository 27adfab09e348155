//! Path confinement: which file a requested path really names, and whether
//! that file lies inside one of the allowed roots.
//!
//! The path is made absolute against the session's cwd, then the deepest
//! ancestor that exists is canonicalized (every symlink and `..` resolved
//! by the OS), and that real path must lie under a canonicalized root. The
//! rest of the path, which does not exist yet, may only hold plain names.
//! So `..`, absolute paths elsewhere and symlinks that point out are all
//! refused, and whether a file outside exists is never revealed.
//!
//! This is the check; [`super::confined`] then opens the result one
//! component at a time without following symlinks, so a directory swapped
//! for a symlink after the check is refused too.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::error::BuiltinError;

/// A path that passed the check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The canonical root it lies in.
    pub root: PathBuf,
    /// Components below `root` that exist (canonical names, no symlinks).
    pub existing: Vec<OsString>,
    /// Components after those that do not exist yet (plain names).
    pub missing: Vec<OsString>,
}

impl Target {
    /// The full path (for messages and for platforms without `openat`).
    pub fn path(&self) -> PathBuf {
        let mut p = self.root.clone();
        p.extend(&self.existing);
        p.extend(&self.missing);
        p
    }

    pub fn exists(&self) -> bool {
        self.missing.is_empty()
    }
}

/// Where requests of one session may reach.
#[derive(Debug, Clone)]
pub struct Scope {
    pub roots: Vec<PathBuf>,
    /// Relative paths are taken against this (the session's cwd).
    pub base: PathBuf,
}

impl Scope {
    pub fn resolve(&self, requested: &str) -> Result<Target, BuiltinError> {
        resolve(&self.roots, &self.base, requested)
    }
}

pub fn resolve(roots: &[PathBuf], base: &Path, requested: &str) -> Result<Target, BuiltinError> {
    if requested.is_empty() {
        return Err(BuiltinError::invalid("path is empty"));
    }
    if requested.contains('\0') {
        return Err(BuiltinError::invalid("path contains a NUL byte"));
    }
    let asked = Path::new(requested);
    #[cfg(windows)]
    if let Some(why) = super::windows_names::refusal(asked) {
        return Err(BuiltinError::invalid(format!("{requested} {why}")));
    }
    let full = if asked.is_absolute() {
        asked.to_path_buf()
    } else {
        base.join(asked)
    };
    let roots: Vec<PathBuf> = roots
        .iter()
        .filter_map(|r| std::fs::canonicalize(r).ok())
        .collect();
    if roots.is_empty() {
        return Err(BuiltinError::not_found(
            "none of the allowed root directories exists",
        ));
    }

    let components: Vec<Component<'_>> = full.components().collect();
    let (real, tail) = deepest_existing(&components);
    if let Some(next) = tail.first() {
        // It is there but does not resolve: a dangling symlink (or a loop).
        // Whether its target exists is none of the agent's business.
        let entry: PathBuf = components[..components.len() - tail.len()]
            .iter()
            .chain(std::iter::once(next))
            .collect();
        if std::fs::symlink_metadata(&entry).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(BuiltinError::outside_roots(requested));
        }
    }
    let mut missing = Vec::with_capacity(tail.len());
    for c in tail {
        match c {
            Component::Normal(name) => missing.push(name.to_os_string()),
            // `a/missing/../b`: what `..` means depends on a directory that
            // is not there; refuse rather than guess.
            _ => return Err(BuiltinError::outside_roots(requested)),
        }
    }
    // The longest root wins, so nested roots report the closer one.
    let root = roots
        .iter()
        .filter(|r| real.starts_with(r))
        .max_by_key(|r| r.as_os_str().len())
        .ok_or_else(|| BuiltinError::outside_roots(requested))?;
    let existing = real
        .strip_prefix(root)
        .expect("starts_with was checked")
        .components()
        .map(|c| c.as_os_str().to_os_string())
        .collect();
    Ok(Target {
        root: root.clone(),
        existing,
        missing,
    })
}

/// Canonicalize the longest prefix of `components` that exists; returns it
/// and the components after it.
fn deepest_existing<'a>(components: &'a [Component<'a>]) -> (PathBuf, &'a [Component<'a>]) {
    for k in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..k].iter().collect();
        if let Ok(real) = std::fs::canonicalize(&prefix) {
            return (real, &components[k..]);
        }
    }
    // Not even the filesystem root resolves: nothing exists.
    (PathBuf::new(), components)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Tree {
        dir: PathBuf,
    }

    impl Tree {
        /// root/ (the allowed root), root/src/a.txt, outside/secret.txt,
        /// root/out -> ../outside, root/inner -> src, root/abs -> /etc.
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("acp-roots-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("root/src")).unwrap();
            std::fs::create_dir_all(dir.join("outside")).unwrap();
            std::fs::write(dir.join("root/src/a.txt"), "a").unwrap();
            std::fs::write(dir.join("outside/secret.txt"), "s").unwrap();
            symlink("../outside", dir.join("root/out")).unwrap();
            symlink("src", dir.join("root/inner")).unwrap();
            symlink("/etc", dir.join("root/abs")).unwrap();
            symlink("../outside/nope", dir.join("root/dangling")).unwrap();
            Self { dir }
        }

        fn root(&self) -> PathBuf {
            self.dir.join("root")
        }

        fn resolve(&self, p: &str) -> Result<Target, BuiltinError> {
            resolve(&[self.root()], &self.root(), p)
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn reason(r: Result<Target, BuiltinError>) -> &'static str {
        r.map(|_| "ok").unwrap_or_else(|e| e.reason)
    }

    #[test]
    fn inside_paths_resolve_to_canonical_components() {
        let t = Tree::new("inside");
        let real_root = std::fs::canonicalize(t.root()).unwrap();
        let abs = t.root().join("src/a.txt");
        let got = t.resolve(abs.to_str().unwrap()).unwrap();
        assert_eq!(got.root, real_root);
        assert_eq!(got.existing, ["src", "a.txt"]);
        assert!(got.exists());
        // Relative to the session cwd, with `..` that stays inside, and
        // through a symlink that stays inside.
        assert_eq!(
            t.resolve("src/../src/a.txt").unwrap().existing,
            ["src", "a.txt"]
        );
        assert_eq!(t.resolve("inner/a.txt").unwrap().existing, ["src", "a.txt"]);
        // New files and directories: the missing tail is kept.
        let new = t.resolve("src/new/deeper/b.txt").unwrap();
        assert_eq!(new.existing, ["src"]);
        assert_eq!(new.missing, ["new", "deeper", "b.txt"]);
    }

    #[test]
    fn escapes_are_refused_whether_or_not_the_target_exists() {
        let t = Tree::new("escape");
        for p in [
            "../outside/secret.txt",
            "../outside/nope.txt",
            "src/../../outside/secret.txt",
            "out/secret.txt",
            "out/nope.txt",
            "out",
            "abs/passwd",
            "/etc/passwd",
            "/etc/definitely-not-here",
            "/",
            "src/missing/../../../outside/secret.txt",
            "dangling",
            "dangling/x",
        ] {
            assert_eq!(reason(t.resolve(p)), "outsideRoots", "{p}");
        }
        let outside = t.dir.join("outside/secret.txt");
        assert_eq!(reason(t.resolve(outside.to_str().unwrap())), "outsideRoots");
        // A sibling whose name starts with the root's is not inside it.
        std::fs::create_dir_all(t.dir.join("rootx")).unwrap();
        let sibling = t.dir.join("rootx/f");
        assert_eq!(reason(t.resolve(sibling.to_str().unwrap())), "outsideRoots");
    }

    #[test]
    fn bad_input_is_invalid_params() {
        let t = Tree::new("bad");
        assert_eq!(reason(t.resolve("")), "invalidParams");
        assert_eq!(reason(t.resolve("a\0b")), "invalidParams");
        let none = resolve(&[t.dir.join("nope")], &t.root(), "x");
        assert_eq!(reason(none), "notFound");
    }
}
