//! `acp-core`: a napi-free Agent Client Protocol client.
//!
//! Three layers, each usable and testable on its own:
//! - [`transport`]: spawn and supervise the agent process, frame NDJSON on
//!   its stdout, write lines to its stdin, drain its stderr into a ring.
//! - [`rpc`]: JSON-RPC 2.0 envelopes, classification of inbound lines,
//!   the tables of requests waiting for an answer in both directions.
//! - [`acp`]: ACP v1 method names, capability derivation, protocol-version
//!   checks and the "cancelled" replies the spec requires.
//!
//! [`builtin`] answers the agent's `fs/*` and `terminal/*` requests when
//! the host switches them on.
//!
//! [`connection`] wires the three together and hands everything the agent
//! says to a [`connection::DeliverySink`] as ordered batches of JSON text.
//!
//! [`vocabulary`] names every error code and client event, once.

pub mod acp;
pub mod builtin;
pub mod connection;
pub mod rpc;
pub mod store;
pub mod transport;
pub mod view;
pub mod vocabulary;

pub use connection::{Connection, ConnectionConfig, DeliverySink, ExitInfo};
pub use transport::AgentCommand;
