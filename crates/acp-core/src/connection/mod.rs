//! One live agent: the tasks that read, write and supervise it, and the
//! calls a host makes on it. Everything the agent says reaches the host as
//! ordered batches of JSON text through a [`DeliverySink`].

mod builtin_route;
mod config;
mod cut_results;
mod delivery;
mod event;
mod exit;
mod handle;
mod host_queue;
#[cfg(unix)]
#[cfg(unix)]
mod host_reader;
mod lifecycle;
mod reader;
mod requests;
mod shared;
mod stderr;
mod stderr_log;
mod supervisor;
mod text_run;
mod trace;
mod views;
mod wire;
mod worker_slice;

pub use config::ConnectionConfig;
pub use delivery::{Batch, DeliverySink, InTransit};
pub use event::{Event, ItemKind};
pub use exit::ExitInfo;
pub use handle::{CallError, Connection, WeakConnection};
#[cfg(unix)]
#[cfg(unix)]
pub use host_reader::Fed;
pub use trace::TraceConfig;
pub use views::{ViewBusy, ViewSnapshot};
pub use worker_slice::worker_parked;
