//! What went over the wire, for the host's debugging: every message in both
//! directions is counted, kept in a bounded history of recent messages the
//! host can read at any time, and (only when the host asked for a live
//! trace) turned into a trace item in the ordered stream.
//!
//! - [`record`]: what one message's record holds and its JSON;
//! - [`history`]: the recent records, packed in blocks of back-to-back text;
//! - [`tracer`]: the counters, the history and the live trace of one
//!   connection.

mod history;
mod record;
#[cfg(test)]
mod tests;
mod tracer;

pub use history::TraceBatch;
pub use record::{Direction, Kind, WireMeta};
pub use tracer::{TraceConfig, Tracer};
