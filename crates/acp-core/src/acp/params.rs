//! What the connection reads of a message's params without parsing them.

use std::borrow::Cow;

use serde::Deserialize;

/// The `sessionId` of a request's params (JSON text), if it names one.
pub fn session_id_of(params: &str) -> Option<Box<str>> {
    #[derive(Deserialize)]
    struct P<'a> {
        #[serde(rename = "sessionId", borrow)]
        session_id: Option<Cow<'a, str>>,
    }
    serde_json::from_str::<P<'_>>(params)
        .ok()?
        .session_id
        .map(|s| s.as_ref().into())
}
