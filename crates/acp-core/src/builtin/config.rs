//! What the host switched on. Both capabilities are off unless configured.

use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct BuiltinConfig {
    /// Serve `fs/read_text_file` (and `fs/write_text_file` unless read-only).
    pub fs: Option<FsConfig>,
    /// Serve the five `terminal/*` methods.
    pub terminals: Option<TerminalConfig>,
    /// Agent → client methods the host answers itself at spawn time; a host
    /// handler always wins over a built-in (see `Builtins::set_host_handler`).
    pub host_methods: Vec<String>,
    /// Blocking built-in work (file I/O, terminal output replies) running
    /// at once for this connection, at most; more waits its turn.
    pub max_jobs: usize,
}

/// The default of [`BuiltinConfig::max_jobs`].
pub const DEFAULT_MAX_JOBS: usize = 2;

impl Default for BuiltinConfig {
    fn default() -> Self {
        Self {
            fs: None,
            terminals: None,
            host_methods: Vec::new(),
            max_jobs: DEFAULT_MAX_JOBS,
        }
    }
}

#[derive(Debug, Clone)]
pub struct FsConfig {
    /// Directories the agent may read and write under. Empty: the cwd of
    /// the session the request names.
    pub roots: Vec<PathBuf>,
    /// Largest file content read or written, in bytes.
    pub max_file_bytes: usize,
    /// Serve reads only; `fs/write_text_file` is left to the host.
    pub read_only: bool,
    /// Bytes a read may scan to reach its `line` (skipped lines are read
    /// too): a huge or sparse file cannot keep a thread busy for long.
    pub max_scan_bytes: u64,
}

impl Default for FsConfig {
    fn default() -> Self {
        Self {
            roots: Vec::new(),
            max_file_bytes: 10 * 1024 * 1024,
            read_only: false,
            max_scan_bytes: 256 * 1024 * 1024,
        }
    }
}

#[derive(Debug, Clone)]
pub struct TerminalConfig {
    /// Directories a terminal's cwd must lie in. Empty: the session's cwd.
    pub roots: Vec<PathBuf>,
    /// Terminals created and not yet released, at most.
    pub max_terminals: usize,
    /// Output kept when the agent gives no `outputByteLimit`.
    pub default_output_byte_limit: usize,
    /// The most output an agent may ask to keep per terminal.
    pub max_output_byte_limit: usize,
    /// Output all open terminals keep together, at most: a terminal's
    /// limit is cut to what is left (refused when nothing is).
    pub max_total_output_bytes: usize,
    /// Variables set for every command, over the host's environment (the
    /// request's own `env` goes on top).
    pub env: Vec<(String, String)>,
    /// Run a `command` sent without `args` as a shell command line (see
    /// `shell`). Off: such a line is refused, a bare program still runs.
    pub shell: bool,
}

impl Default for TerminalConfig {
    fn default() -> Self {
        Self {
            roots: Vec::new(),
            max_terminals: 32,
            default_output_byte_limit: 1024 * 1024,
            max_output_byte_limit: 16 * 1024 * 1024,
            max_total_output_bytes: 64 * 1024 * 1024,
            env: Vec::new(),
            shell: true,
        }
    }
}
