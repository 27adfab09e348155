//! The answers this client owes the agent when the host cannot give one:
//! the request was cancelled, the handler failed, or it returned garbage.

use serde::Deserialize;

use super::methods::*;
use crate::rpc::ErrorCode;

/// What to send back for an agent request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Result(String),
    Error {
        code: i64,
        message: String,
        data: Option<String>,
    },
}

/// Requests that `cancel(sessionId)` must answer for the host: the spec
/// says a client MUST answer pending permission requests `cancelled`, and
/// an agent (agentao) blocks its turn on any question left open.
pub fn is_cancellable(method: &str) -> bool {
    method == SESSION_REQUEST_PERMISSION || method == ELICITATION_CREATE || is_extension(method)
}

/// The reply for a request cancelled by the host. Extension methods get
/// -32800 unless the host named their cancelled result (vendor modules do,
/// see `ConnectionConfig::cancelled_results`).
pub fn cancelled_reply(method: &str) -> Reply {
    match method {
        SESSION_REQUEST_PERMISSION => {
            Reply::Result(r#"{"outcome":{"outcome":"cancelled"}}"#.into())
        }
        ELICITATION_CREATE => Reply::Result(r#"{"action":"cancel"}"#.into()),
        _ => Reply::Error {
            code: ErrorCode::REQUEST_CANCELLED,
            message: "Request cancelled".into(),
            data: None,
        },
    }
}

/// The reply when the host's handler threw, rejected or timed out.
pub fn failure_reply(method: &str, message: &str) -> Reply {
    error_reply(method, ErrorCode::INTERNAL_ERROR, message, None)
}

/// The reply for an error the host did not choose (a fault, or no
/// handler). A permission request then gets no error (agents treat that
/// as a crash of the tool call): it is answered `cancelled` instead; so is
/// a failed elicitation. An elicitation nobody handles gets -32601 like
/// any unhandled request. (An error the host chose: [`chosen_error_reply`].)
pub fn error_reply(method: &str, code: i64, message: &str, data: Option<&str>) -> Reply {
    match method {
        SESSION_REQUEST_PERMISSION => cancelled_reply(method),
        ELICITATION_CREATE if code != ErrorCode::METHOD_NOT_FOUND => cancelled_reply(method),
        _ => Reply::Error {
            code,
            message: message.to_string(),
            data: data.map(str::to_string),
        },
    }
}

/// The reply for an error the host chose (an `RpcError` its handler
/// threw): sent as it is, except to a request that always gets an
/// outcome. Permission and elicitation requests are answered `cancelled`
/// (`cancel`) whatever the host chose, because real agents take an error
/// there as a broken turn (codex-acp stops answering the session).
pub fn chosen_error_reply(method: &str, code: i64, message: &str, data: Option<&str>) -> Reply {
    if always_an_outcome(method) {
        return cancelled_reply(method);
    }
    Reply::Error {
        code,
        message: message.to_string(),
        data: data.map(str::to_string),
    }
}

/// Requests answered with an outcome whatever the host's handler does.
fn always_an_outcome(method: &str) -> bool {
    method == SESSION_REQUEST_PERMISSION || method == ELICITATION_CREATE
}

/// Check what a handler returned (as JSON text) before it goes on the wire.
/// Results of methods we know the shape of are validated; anything that
/// does not fit becomes the failure reply. Unknown fields pass through.
pub fn sanitize_reply(method: &str, result: &str) -> Reply {
    let valid = match method {
        SESSION_REQUEST_PERMISSION => valid_permission(result),
        ELICITATION_CREATE => valid_elicitation(result),
        _ => serde_json::from_str::<serde::de::IgnoredAny>(result).is_ok(),
    };
    if valid {
        Reply::Result(result.to_string())
    } else {
        failure_reply(
            method,
            &format!("handler for {method} returned an invalid result"),
        )
    }
}

fn valid_permission(result: &str) -> bool {
    #[derive(Deserialize)]
    struct Resp<'a> {
        #[serde(borrow)]
        outcome: Outcome<'a>,
    }
    #[derive(Deserialize)]
    struct Outcome<'a> {
        #[serde(borrow)]
        outcome: std::borrow::Cow<'a, str>,
        // Cow: an id with an escape (`"`, `\`, a control character) cannot
        // be borrowed from the text.
        #[serde(rename = "optionId", default, borrow)]
        option_id: Option<std::borrow::Cow<'a, str>>,
    }
    match serde_json::from_str::<Resp<'_>>(result) {
        Ok(r) => match &*r.outcome.outcome {
            "cancelled" => true,
            "selected" => r.outcome.option_id.is_some_and(|id| !id.is_empty()),
            _ => false,
        },
        Err(_) => false,
    }
}

fn valid_elicitation(result: &str) -> bool {
    #[derive(Deserialize)]
    struct Resp<'a> {
        #[serde(borrow)]
        action: std::borrow::Cow<'a, str>,
    }
    serde_json::from_str::<Resp<'_>>(result).is_ok_and(|r| !r.action.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANCELLED: &str = r#"{"outcome":{"outcome":"cancelled"}}"#;

    #[test]
    fn permission_garbage_becomes_cancelled() {
        let ok = r#"{"outcome":{"outcome":"selected","optionId":"allow_once"},"x":1}"#;
        assert_eq!(
            sanitize_reply(SESSION_REQUEST_PERMISSION, ok),
            Reply::Result(ok.into())
        );
        for escaped in [
            r#"{"outcome":{"outcome":"selected","optionId":"a\"b"}}"#,
            r#"{"outcome":{"outcome":"selected","optionId":"a\\b"}}"#,
            r#"{"outcome":{"outcome":"selected","optionId":"a\u0001b"}}"#,
            r#"{"outcome":{"outcome":"sel\u0065cted","optionId":"x"}}"#,
        ] {
            assert_eq!(
                sanitize_reply(SESSION_REQUEST_PERMISSION, escaped),
                Reply::Result(escaped.into()),
                "{escaped}"
            );
        }
        for bad in [
            "null",
            "42",
            "{}",
            r#"{"outcome":"selected"}"#,
            r#"{"outcome":{"outcome":"selected"}}"#,
            "{",
        ] {
            assert_eq!(
                sanitize_reply(SESSION_REQUEST_PERMISSION, bad),
                Reply::Result(CANCELLED.into()),
                "{bad}"
            );
        }
        assert_eq!(
            failure_reply(SESSION_REQUEST_PERMISSION, "boom"),
            Reply::Result(CANCELLED.into())
        );
    }

    #[test]
    fn an_unhandled_elicitation_is_method_not_found_a_failed_one_cancelled() {
        assert!(matches!(
            error_reply(ELICITATION_CREATE, -32601, "Method not found", None),
            Reply::Error { code: -32601, .. }
        ));
        assert_eq!(
            error_reply(ELICITATION_CREATE, -32603, "boom", None),
            Reply::Result(r#"{"action":"cancel"}"#.into())
        );
        assert_eq!(
            error_reply(SESSION_REQUEST_PERMISSION, -32601, "x", None),
            Reply::Result(CANCELLED.into())
        );
    }

    #[test]
    fn a_chosen_error_is_sent_unless_the_method_always_gets_an_outcome() {
        for code in [-32001, -32601, -32603] {
            assert_eq!(
                chosen_error_reply(SESSION_REQUEST_PERMISSION, code, "no", Some("{}")),
                Reply::Result(CANCELLED.into())
            );
            assert_eq!(
                chosen_error_reply(ELICITATION_CREATE, code, "no", None),
                Reply::Result(r#"{"action":"cancel"}"#.into())
            );
        }
        assert_eq!(
            chosen_error_reply("_x/y", -32002, "not found", Some(r#"{"p":1}"#)),
            Reply::Error {
                code: -32002,
                message: "not found".into(),
                data: Some(r#"{"p":1}"#.into())
            }
        );
    }

    #[test]
    fn other_methods_fail_with_an_error() {
        assert!(matches!(
            failure_reply(FS_READ_TEXT_FILE, "boom"),
            Reply::Error { code: -32603, .. }
        ));
        assert_eq!(sanitize_reply("_x/y", "null"), Reply::Result("null".into()));
        assert!(matches!(
            cancelled_reply("_x/y"),
            Reply::Error { code: -32800, .. }
        ));
    }
}
