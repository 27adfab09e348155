//! The session store: sessions that survive the host and the agent, in
//! one SQLite file (WAL mode) in a directory the host chooses.
//!
//! - [`schema`]: opening the file, its schema and version, and refusing a
//!   file that is not ours (or is newer than we know);
//! - [`record`]: what a session row and a journal record hold;
//! - [`writer`]: the one thread that writes, batched; a flood coalesces to
//!   the latest view instead of queueing every change;
//! - [`query`]: list, search, get, export, delete (readers never wait for
//!   the writer: WAL);
//! - [`retention`]: the bounds (count, bytes, age) and the pruning;
//! - [`transcript`]: the searchable text of a session;
//! - [`views`]: a session's stored view, written in place;
//! - [`error`]: the typed errors.
//!
//! The schema is documented for users in docs/sessions-store.md: change
//! both together, and bump [`schema::SCHEMA_VERSION`].

mod error;
mod query;
mod record;
mod retention;
mod schema;
mod transcript;
mod views;
mod writer;

pub use error::StoreError;
pub use query::{ListOptions, SessionSummary, MAX_LIST};
pub use record::{new_store_id, now_ms, JournalKind, NewSession, SessionPatch};
pub use retention::Retention;
pub use schema::{APPLICATION_ID, FILE_NAME, SCHEMA_VERSION};
pub use writer::{Feed, FeedPoll, Store, StoreOptions, StoreStats};
