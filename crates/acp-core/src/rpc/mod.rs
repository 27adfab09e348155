//! JSON-RPC 2.0 over the framed lines: what a line is, how ours are built,
//! and who is still waiting for an answer.

mod ascii;
mod codes;
mod deadlines;
mod envelope;
mod given_up;
mod id;
mod json_text;
mod outgoing;
mod pending;

pub use ascii::all_ascii;
pub use codes::ErrorCode;
pub use deadlines::{Deadline, Deadlines};
pub use envelope::{classify, Inbound, Invalid};
pub use given_up::GivenUp;
pub use id::{AgentRequestId, RequestId, RequestIds};
pub use json_text::{
    floor_char_boundary, json_str, json_str_len, push_json_str, push_json_str_in_pieces,
    ENVELOPE_SLACK,
};
pub use outgoing::{error_response, notification, request, response};
pub use pending::{Full, IncomingRequest, IncomingTable, OutgoingRequest, OutgoingTable, Timer};
