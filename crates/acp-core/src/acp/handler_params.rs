//! What a host handler receives of a big agent request: its params cut to
//! `maxHandlerParamsBytes` (see `cut`), keeping what a handler needs to
//! answer. The full params stay with the pending request, for the host to
//! ask for on demand.

use super::cut::{cut_to_budget, Keep};
use crate::rpc::push_json_str;

/// The request message for the host when `params` (the agent's params
/// text) are over `budget`: `{"id", "method", "params"}` with the params
/// cut. `None`: deliver the agent's message as it is.
pub fn bounded_request(id: &str, method: &str, params: &str, budget: usize) -> Option<String> {
    let cut = cut_to_budget(params, answer_fields(method), budget)?;
    let mut out = String::with_capacity(cut.len() + method.len() + id.len() + 32);
    out.push_str(r#"{"id":"#);
    out.push_str(id);
    out.push_str(r#","method":"#);
    push_json_str(&mut out, method);
    out.push_str(r#","params":"#);
    out.push_str(&cut);
    out.push('}');
    Some(out)
}

/// The members of a method's params a handler needs to answer it (and
/// the `sessionId`, always).
fn answer_fields(method: &str) -> Keep {
    use super::methods::*;
    match method {
        SESSION_REQUEST_PERMISSION => &[
            &["options"],
            &["toolCall", "toolCallId"],
            &["toolCall", "title"],
            &["toolCall", "kind"],
            &["toolCall", "status"],
        ],
        ELICITATION_CREATE => &[
            &["message"],
            &["mode"],
            &["requestedSchema"],
            &["url"],
            &["elicitationId"],
        ],
        FS_WRITE_TEXT_FILE => &[&["path"], &["content"]],
        FS_READ_TEXT_FILE => &[&["path"], &["line"], &["limit"]],
        TERMINAL_CREATE => &[
            &["command"],
            &["args"],
            &["env"],
            &["cwd"],
            &["outputByteLimit"],
        ],
        TERMINAL_OUTPUT | TERMINAL_RELEASE | TERMINAL_WAIT_FOR_EXIT | TERMINAL_KILL => {
            &[&["terminalId"]]
        }
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::methods::*;
    use crate::view::OMITTED;
    use serde_json::{json, Value};

    fn cut_params(method: &str, params: &str, budget: usize) -> Option<Value> {
        let msg = bounded_request("7", method, params, budget)?;
        let v: Value = serde_json::from_str(&msg).unwrap();
        assert_eq!((&v["id"], &v["method"]), (&json!(7), &json!(method)));
        Some(v["params"].clone())
    }

    #[test]
    fn a_write_keeps_its_content_whole_whatever_its_size() {
        let content = "line\n".repeat(300_000);
        let zeros = format!("[{}0]", "0,".repeat(100_000));
        let params = json!({"sessionId": "s", "path": "/w/big.txt", "content": content, "_meta": {"pad": "x"}})
            .to_string()
            .replace(r#""pad":"x""#, &format!(r#""pad":{zeros}"#));
        let v = cut_params(FS_WRITE_TEXT_FILE, &params, 64 * 1024).expect("cut");
        assert_eq!(v["content"], content.as_str());
        assert_eq!(v["path"], "/w/big.txt");
        assert_eq!(v["_meta"]["pad"]["$omitted"], "size");
    }

    #[test]
    fn params_within_the_budget_are_delivered_as_sent() {
        let params = r#"{"sessionId":"s","toolCall":{"toolCallId":"c","rawInput":[0,0,0]}}"#;
        assert_eq!(
            bounded_request("1", SESSION_REQUEST_PERMISSION, params, 1 << 20),
            None
        );
    }

    #[test]
    fn a_permission_keeps_what_answers_it_and_cuts_the_rest() {
        let zeros = format!("[{}0]", "0,".repeat(100_000));
        let long = "x".repeat(50_000);
        let params = format!(
            r#"{{"sessionId":"s1","toolCall":{{"toolCallId":"call_1","title":"Run it","kind":"execute","status":"pending","rawInput":{zeros},"content":[{{"type":"content","content":{{"type":"text","text":"{long}"}}}}]}},"options":[{{"optionId":"allow","name":"Allow","kind":"allow_once"}}],"note":"{long}","n":1}}"#
        );
        let v = cut_params(SESSION_REQUEST_PERMISSION, &params, 4096).unwrap();
        assert_eq!(v["sessionId"], "s1");
        assert_eq!(
            v["options"],
            json!([{"optionId":"allow","name":"Allow","kind":"allow_once"}])
        );
        let call = &v["toolCall"];
        assert_eq!(
            (
                &call["toolCallId"],
                &call["title"],
                &call["kind"],
                &call["status"]
            ),
            (
                &json!("call_1"),
                &json!("Run it"),
                &json!("execute"),
                &json!("pending")
            )
        );
        assert_eq!(
            call["rawInput"],
            json!({"$omitted": "size", "bytes": 100_001 * 24})
        );
        assert_eq!(call["content"][OMITTED], "size");
        assert_eq!(v["note"], json!({"$omitted": "size", "bytes": 50_000}));
        assert_eq!(v["n"], 1);
        // What the host parses is about the budget, not the params.
        let msg = bounded_request("7", SESSION_REQUEST_PERMISSION, &params, 4096).unwrap();
        assert!(msg.len() < 1024, "{}", msg.len());
    }

    #[test]
    fn escaped_ids_and_methods_stay_valid_json() {
        let params = format!(r#"{{"k":"{}"}}"#, "z".repeat(5000));
        let msg = bounded_request(r#""srv_1""#, "_x/\"é", &params, 100).unwrap();
        let v: Value = serde_json::from_str(&msg).unwrap();
        assert_eq!(
            (&v["id"], &v["method"]),
            (&json!("srv_1"), &json!("_x/\"é"))
        );
        assert_eq!(v["params"]["k"][OMITTED], "size");
    }
}
