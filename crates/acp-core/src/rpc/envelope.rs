//! Classification of one inbound line. Only the envelope is parsed; params
//! and results stay as borrowed raw JSON text and travel on untouched.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// What an inbound line is.
#[derive(Debug)]
pub enum Inbound<'a> {
    /// Agent → client request: must be answered, echoing `id` exactly.
    Request {
        id: &'a RawValue,
        method: Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    Notification {
        method: Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    /// An answer to one of our requests; `id` is the raw id text.
    Response {
        id: &'a RawValue,
        result: Option<&'a RawValue>,
        error: Option<&'a RawValue>,
    },
    /// Blank line: ignored.
    Blank,
    Invalid(Invalid),
}

/// Why a line is not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// Not JSON at all and not even trying to be (banners, log lines).
    Noise,
    /// Starts like JSON but does not parse (includes invalid UTF-8).
    BadJson(String),
    /// A JSON array: batches are not part of ACP.
    Batch,
    /// Valid JSON that is not a JSON-RPC object of any kind.
    NotJsonRpc(&'static str),
}

#[derive(Deserialize)]
struct Envelope<'a> {
    // `present`: a member given as `null` is still there (`"id": null` is
    // a request to answer; `"result": null` a valid answer).
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

pub fn classify(line: &[u8]) -> Inbound<'_> {
    let Some(first) = line.iter().find(|b| !b.is_ascii_whitespace()) else {
        return Inbound::Blank;
    };
    match first {
        b'{' => {}
        b'[' => {
            return match serde_json::from_slice::<&RawValue>(line) {
                Ok(_) => Inbound::Invalid(Invalid::Batch),
                Err(e) => Inbound::Invalid(Invalid::BadJson(e.to_string())),
            }
        }
        _ => {
            return match serde_json::from_slice::<&RawValue>(line) {
                Ok(_) => Inbound::Invalid(Invalid::NotJsonRpc("not a JSON object")),
                Err(_) => Inbound::Invalid(Invalid::Noise),
            }
        }
    }
    let env: Envelope<'_> = match serde_json::from_slice(line) {
        Ok(env) => env,
        Err(e) => return Inbound::Invalid(Invalid::BadJson(e.to_string())),
    };
    match (env.id, env.method) {
        (Some(id), Some(method)) => Inbound::Request {
            id,
            method,
            params: env.params,
        },
        (None, Some(method)) => Inbound::Notification {
            method,
            params: env.params,
        },
        (Some(id), None) if env.result.is_some() || env.error.is_some() => Inbound::Response {
            id,
            result: env.result,
            error: env.error,
        },
        (None, None) if env.error.is_some() => {
            Inbound::Invalid(Invalid::NotJsonRpc("error response without an id"))
        }
        _ => Inbound::Invalid(Invalid::NotJsonRpc(
            "neither a request, a notification nor a response",
        )),
    }
}

/// A member that is there, whatever its value (`null` included): only an
/// absent member is `None` (through `default`).
fn present<'de, D>(d: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <&RawValue>::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_every_shape() {
        assert!(
            matches!(classify(br#"{"jsonrpc":"2.0","id":"srv_1","method":"m","params":{}}"#),
            Inbound::Request { id, .. } if id.get() == "\"srv_1\"")
        );
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"session/update","params":{"a":1}}"#),
            Inbound::Notification { method, params: Some(p) } if method == "session/update" && p.get() == r#"{"a":1}"#
        ));
        assert!(matches!(classify(br#"{"id":7,"result":{"x":[1]}}"#),
            Inbound::Response { id, result: Some(r), .. } if id.get() == "7" && r.get() == r#"{"x":[1]}"#));
        assert!(matches!(classify(br#"{"id":7,"result":null}"#),
            Inbound::Response { result: Some(r), .. } if r.get() == "null"));
        assert!(matches!(
            classify(br#"{"id":7,"error":{"code":-1,"message":"x"}}"#),
            Inbound::Response { error: Some(_), .. }
        ));
        assert!(matches!(classify(b"   "), Inbound::Blank));
        assert!(matches!(
            classify(b"Starting agent v1.2..."),
            Inbound::Invalid(Invalid::Noise)
        ));
        assert!(matches!(
            classify(b"[1,2]"),
            Inbound::Invalid(Invalid::Batch)
        ));
        assert!(matches!(
            classify(b"42"),
            Inbound::Invalid(Invalid::NotJsonRpc(_))
        ));
        assert!(matches!(
            classify(b"{\"id\":1"),
            Inbound::Invalid(Invalid::BadJson(_))
        ));
        assert!(matches!(
            classify(b"{\"method\":\"\xff\"}"),
            Inbound::Invalid(Invalid::BadJson(_))
        ));
        assert!(matches!(
            classify(br#"{"id":1}"#),
            Inbound::Invalid(Invalid::NotJsonRpc(_))
        ));
    }

    #[test]
    fn null_ids_and_nested_results_are_read_for_what_they_are() {
        // `"id": null` with a method is a request (it must be answered).
        assert!(matches!(classify(br#"{"id":null,"method":"m"}"#),
            Inbound::Request { id, .. } if id.get() == "null"));
        // "result" only inside params: not a response.
        assert!(matches!(
            classify(br#"{"id":1,"params":{"result":1}}"#),
            Inbound::Invalid(Invalid::NotJsonRpc(_))
        ));
        assert!(matches!(
            classify(br#"{"id":1,"x":"\"result\""}"#),
            Inbound::Invalid(Invalid::NotJsonRpc(_))
        ));
    }

    #[test]
    fn escaped_method_names_are_decoded() {
        assert!(matches!(classify(br#"{"method":"a\/b"}"#),
            Inbound::Notification { method, .. } if method == "a/b"));
    }
}
