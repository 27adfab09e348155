//! The process and its three pipes. Nothing here knows about JSON-RPC.

mod command;
mod framing;
mod process_group;
mod spawn;
mod stderr_ring;
mod writer;

pub use command::AgentCommand;
pub use framing::{Frame, LineFramer};
pub use process_group::{kill_group_now, signal_group, signal_name, GroupSignal};
pub(crate) use spawn::{adopt_spawned, configure_platform as isolate_process_tree};
pub use spawn::{spawn_agent, SpawnError, SpawnedAgent};
pub use stderr_ring::StderrRing;
pub use writer::{run_writer, Outbox, OutboxError};
