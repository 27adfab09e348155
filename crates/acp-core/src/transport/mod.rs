//! The process and its three pipes. Nothing here knows about JSON-RPC.

mod command;
mod framing;
mod process_group;
mod spawn;
mod stderr_ring;
mod tree;
#[cfg(windows)]
mod windows_program;
mod writer;

pub use command::AgentCommand;
pub use framing::{Frame, LineFramer};
#[cfg(unix)]
pub use process_group::signal_group;
pub use process_group::{exit_parts, signal_name, GroupSignal};
pub use spawn::{spawn_agent, SpawnError, SpawnedAgent};
pub use stderr_ring::StderrRing;
pub use tree::{
    launch, Cwd, Escaped, LaunchSpec, Launched, ProcessTree, StdioShape, TreeControl, TreeTrouble,
};
pub use writer::{run_writer, Outbox, OutboxError};
