//! Session views: the `session/update` stream of one session folded into a
//! typed state a UI can render, plus what changed since the host last
//! looked, so it can render incrementally without diffing.
//!
//! - [`state`]: the folded state of a session and what it counts;
//! - [`fold`]: the rules that fold one update at a time, in order;
//! - [`json`]: the state as JSON (snapshots, and the pieces drains write);
//! - [`copy`]: the whole state as one JSON text, its texts escaped
//!   after the views' lock is let go (a session store's copy);
//! - [`changes`]: the coalesced change description since the last drain;
//! - [`lent`]: message text a drain shares with the host, not copies;
//! - [`apart`]: long strings of tool calls and blocks a drain carries
//!   apart from its JSON;
//! - [`fast`], [`scan`]: the hot path, a plain-text chunk folded without
//!   a JSON tree (from the params, or from the whole line in one pass);
//! - [`replay`]: fold a recording (trace records) offline, the same way;
//! - [`size`]: the byte count of what a view keeps (`max_total_bytes`);
//! - [`bounded`]: what a view parses of an agent's value, within its limits.
//!
//! The fold is the contract shared with the plain JS reference fold in
//! `lib/session-fold.js`; a property test folds the same random streams in
//! both and compares the results, so change one only with the other.

mod apart;
mod bounded;
mod changes;
pub(crate) mod copy;
mod fast;
mod fold;
mod json;
mod lent;
mod replay;
mod restore;
mod route;
mod scan;
mod size;
mod state;
mod unescape;

pub use apart::APART_MIN_BYTES;
pub(crate) use bounded::{measure, parse as parse_bounded, short_enough, Caps, OMITTED};
pub use changes::Drained;
pub use copy::WholeCopy;
#[cfg(test)]
pub(crate) use fast::TextParams;
pub use fast::{ParamsUpdate, UpdateParams};
pub use lent::{DrainText, LEND_MIN_BYTES};
pub use replay::fold_recording;
pub(crate) use route::update_line;
pub(crate) use scan::{scan_text_line, Shape, TextLine};
pub(crate) use size::ITEM;
pub(crate) use state::EntryKind;
pub use state::{SessionState, ViewOptions};
