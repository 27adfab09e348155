//! Building the lines we send. Params and results arrive as JSON text
//! (already serialised by the caller) and are spliced in unchanged.

use super::json_str as quoted;
use super::{AgentRequestId, RequestId};

fn finish(mut line: String) -> String {
    line.push('\n');
    line
}

pub fn request(id: RequestId, method: &str, params: Option<&str>) -> String {
    with_params(
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{}"#, quoted(method)),
        params,
    )
}

pub fn notification(method: &str, params: Option<&str>) -> String {
    with_params(
        format!(r#"{{"jsonrpc":"2.0","method":{}"#, quoted(method)),
        params,
    )
}

/// Close an envelope opened by `head`, adding `params` if any.
fn with_params(mut line: String, params: Option<&str>) -> String {
    if let Some(p) = params {
        line.reserve(p.len() + 12);
        line.push_str(r#","params":"#);
        line.push_str(p);
    }
    line.push('}');
    finish(line)
}

/// `id` is echoed exactly as it appeared on the wire. The envelope is put around `result` in its own buffer: a reply of tens of
/// megabytes is not copied (a buffer made with [`super::ENVELOPE_SLACK`]
/// spare bytes is not even reallocated).
pub fn response(id: &AgentRequestId, mut result: String) -> String {
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#);
    result.reserve(head.len() + 2);
    result.insert_str(0, &head);
    result.push('}');
    finish(result)
}

pub fn error_response(id: &AgentRequestId, code: i64, message: &str, data: Option<&str>) -> String {
    let mut line = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":{}"#,
        quoted(message)
    );
    if let Some(d) = data {
        line.push_str(r#","data":"#);
        line.push_str(d);
    }
    line.push_str("}}");
    finish(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_compact_json_with_one_newline() {
        let r = request(RequestId::new(3), "session/new", Some(r#"{"cwd":"/x"}"#));
        assert_eq!(
            r.as_bytes(),
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/new\",\"params\":{\"cwd\":\"/x\"}}\n"
        );
        let e = error_response(
            &AgentRequestId::new("\"srv_ab\""),
            -32601,
            "no \"such\" method",
            None,
        );
        let v: serde_json::Value = serde_json::from_str(&e).unwrap();
        assert_eq!(v["id"], "srv_ab");
        assert_eq!(v["error"]["message"], "no \"such\" method");
        assert_eq!(
            notification("x", None).as_bytes(),
            b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n"
        );
    }
}
