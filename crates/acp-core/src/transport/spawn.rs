use std::io;

use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use super::tree::{launch, Cwd, LaunchSpec, ProcessTree, StdioShape, TreeControl};
use super::AgentCommand;

/// The agent (or a terminal's command) could not be started.
#[derive(Debug, thiserror::Error)]
#[error("cannot spawn `{program}`{where_}: {source} ({errno})")]
pub struct SpawnError {
    pub program: String,
    /// `ENOENT`, `EACCES`, … (the Node convention), or `EIO` when unknown.
    pub errno: &'static str,
    where_: String,
    #[source]
    pub source: io::Error,
}

impl SpawnError {
    /// `where_` is appended to the program's name (" in missing directory …").
    pub(crate) fn new(program: &str, source: io::Error, where_: String) -> Self {
        Self {
            program: program.to_string(),
            errno: errno_name(&source),
            where_,
            source,
        }
    }
}

/// A running agent with its three pipes taken out.
pub struct SpawnedAgent {
    pub tree: ProcessTree,
    pub control: TreeControl,
    pub pid: u32,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

/// Spawn the agent with all three stdio streams piped, as a process tree
/// that dies with the host (see [`super::tree`]).
///
/// Must be called inside a tokio runtime context.
pub fn spawn_agent(spec: &AgentCommand) -> Result<SpawnedAgent, SpawnError> {
    let launched = launch(&LaunchSpec {
        program: &spec.program,
        args: &spec.args,
        verbatim_args: false,
        env: &spec.env,
        clear_env: spec.clear_env,
        cwd: match &spec.cwd {
            Some(cwd) => Cwd::Path(cwd),
            None => Cwd::Inherit,
        },
        stdio: StdioShape::Agent,
        keep_detached: spec.keep_detached,
    })?;
    let (Some(stdin), Some(stderr)) = (launched.stdin, launched.stderr) else {
        let source = io::Error::other("stdio pipes were not created");
        return Err(SpawnError::new(&spec.program, source, String::new()));
    };
    Ok(SpawnedAgent {
        pid: launched.tree.pid(),
        tree: launched.tree,
        control: launched.control,
        stdin,
        stdout: launched.stdout,
        stderr,
    })
}

fn errno_name(err: &io::Error) -> &'static str {
    match err.kind() {
        io::ErrorKind::NotFound => "ENOENT",
        io::ErrorKind::PermissionDenied => "EACCES",
        // An argument std (or a batch file check) refuses to pass.
        io::ErrorKind::InvalidInput => "EINVAL",
        _ => match err.raw_os_error() {
            #[cfg(unix)]
            Some(libc::ENOEXEC) => "ENOEXEC",
            #[cfg(unix)]
            Some(libc::ENOTDIR) => "ENOTDIR",
            #[cfg(unix)]
            Some(libc::EMFILE) => "EMFILE",
            _ => "EIO",
        },
    }
}
