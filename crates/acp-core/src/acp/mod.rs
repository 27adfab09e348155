//! What makes this JSON-RPC connection an ACP v1 client: method names,
//! capabilities derived from what the host handles, the protocol-version
//! check, and the answers owed to the agent when a request is cancelled.

mod capabilities;
mod cut;
mod handler_params;
pub mod methods;
mod params;
mod replies;
mod results;
mod version;

pub use capabilities::client_capabilities;
pub use handler_params::bounded_request;
pub use params::session_id_of;
pub use replies::{
    cancelled_reply, chosen_error_reply, error_reply, failure_reply, is_cancellable,
    sanitize_reply, Reply,
};
pub use results::bounded_result;
pub use version::{check_initialize_result, PROTOCOL_VERSION};
