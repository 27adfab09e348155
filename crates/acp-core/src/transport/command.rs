use std::path::PathBuf;

/// What to run. The program is executed directly, never through a shell,
/// so arguments need no quoting.
#[derive(Debug, Clone, Default)]
pub struct AgentCommand {
    pub program: String,
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// Variables set for the agent, merged over the parent's environment
    /// unless `clear_env` is set.
    pub env: Vec<(String, String)>,
    /// Start from an empty environment instead of the parent's.
    pub clear_env: bool,
    /// Let processes that left the agent's tree (`setsid` daemons) outlive
    /// it. Off: everything the agent started dies with it.
    pub keep_detached: bool,
}
