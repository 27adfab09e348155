//! What a host handler receives of a big agent request: its params cut to
//! a budget with the views' `$omitted` markers, so that the host's JS
//! thread parses a bounded text whatever the agent sent. The full params
//! stay with the pending request, for the host to ask for on demand.
//!
//! Sizes are the views' `jsonSize` (see `view::size`): a string its UTF-8
//! bytes, a number or literal 8, each element or member 16 more. The rule:
//! - params within the budget are delivered as the agent sent them;
//! - otherwise the params object is opened: what a handler needs to
//!   answer (the `sessionId`, a permission's `options` and the tool call's
//!   id, title, kind and status, a file's content, …: [`answer_fields`]) is
//!   kept whole when it is a string or within the budget on its own; every other member, in wire order,
//!   is kept whole while it fits what is left of the budget; an object that
//!   does not is opened the same way (at most [`MAX_DESCENTS`] deep, at
//!   most [`MAX_KEYS`] members); anything else (a string, an array, an
//!   object) becomes `{"$omitted": "size", "bytes": <its size>}`.
//!
//! The work is a few scans of the params' text and no tree of it.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::rpc::push_json_str;
use crate::view::{measure, ITEM, OMITTED};

/// Objects opened inside one another, at most.
const MAX_DESCENTS: usize = 4;
/// Members of an object that may be opened (more: the object is a marker).
const MAX_KEYS: usize = 1024;
/// `jsonSize` is at most this many times the text's bytes (`[0,0,…]`):
/// params shorter than `budget / AMPLIFICATION` need no measuring.
const AMPLIFICATION: usize = 12;

/// The request message for the host when `params` (the agent's params
/// text) are over `budget`: `{"id", "method", "params"}` with the params
/// cut. `None`: deliver the agent's message as it is.
pub fn bounded_request(id: &str, method: &str, params: &str, budget: usize) -> Option<String> {
    if params.len().saturating_mul(AMPLIFICATION) <= budget {
        return None;
    }
    let m = measure(params.as_bytes())?;
    if m.size <= budget {
        return None;
    }
    let mut out = String::with_capacity(budget.min(params.len()) / 4 + 128);
    out.push_str(r#"{"id":"#);
    out.push_str(id);
    out.push_str(r#","method":"#);
    push_json_str(&mut out, method);
    out.push_str(r#","params":"#);
    let path = Path::root(method);
    let mut left = budget;
    cut(
        params,
        m.size,
        &path,
        budget,
        &mut left,
        MAX_DESCENTS,
        &mut out,
    );
    out.push('}');
    Some(out)
}

/// Where a value is in the params, for [`answer_fields`].
struct Path<'a> {
    method: &'a str,
    keys: Vec<String>,
}

impl<'a> Path<'a> {
    fn root(method: &'a str) -> Self {
        Self {
            method,
            keys: Vec::new(),
        }
    }

    fn child(&self, key: &str) -> Path<'a> {
        let mut keys = self.keys.clone();
        keys.push(key.to_string());
        Path {
            method: self.method,
            keys,
        }
    }

    /// An object an answer field is in (the tool call of a permission).
    fn leads_to_answer_field(&self) -> bool {
        let keys: Vec<&str> = self.keys.iter().map(String::as_str).collect();
        answer_fields(self.method)
            .iter()
            .any(|field| field.len() > keys.len() && field.starts_with(&keys))
    }

    /// A member a handler needs to answer, kept whole within the budget.
    fn is_answer_field(&self) -> bool {
        let keys: Vec<&str> = self.keys.iter().map(String::as_str).collect();
        answer_fields(self.method).contains(&keys.as_slice()) || keys == ["sessionId"]
    }
}

/// The members of a method's params a handler needs to answer it.
fn answer_fields(method: &str) -> &'static [&'static [&'static str]] {
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

/// Write `text` (one value of size `size`) cut to what is `left`, taking
/// what it writes from `left`; `budget` is what one answer field may take.
fn cut(
    text: &str,
    size: usize,
    path: &Path<'_>,
    budget: usize,
    left: &mut usize,
    descents: usize,
    out: &mut String,
) {
    // No bigger than its marker (a number, a short string): kept.
    if size <= *left || size <= MARKER_BYTES {
        *left = left.saturating_sub(size);
        out.push_str(text.trim());
        return;
    }
    // Opened while there is budget left to fill, or to reach an answer
    // field: once the budget is spent, each further member is one marker,
    // so markers cannot outnumber what the budget and the open levels allow.
    let opened = descents > 0
        && (*left > MARKER_BYTES || path.leads_to_answer_field())
        && text.trim_start().starts_with('{');
    let members = if opened { members(text) } else { None };
    let Some(members) = members else {
        marker(size, out);
        *left = left.saturating_sub(MARKER_BYTES);
        return;
    };
    // Measured first: answer fields take their share before the others.
    let measured: Vec<_> = members
        .iter()
        .map(|(key, raw)| {
            let child = path.child(key);
            let size = measure(raw.get().as_bytes()).map_or(usize::MAX, |m| m.size);
            (key, *raw, child, size)
        })
        .collect();
    let mut whole = vec![false; measured.len()];
    for (i, (key, raw, child, size)) in measured.iter().enumerate() {
        // A string costs its bytes (no amplification), and a cut one is of
        // no use to a handler: a file's content, a command.
        let string = raw.get().trim_start().starts_with('"');
        if child.is_answer_field() && (*size <= budget || string) {
            whole[i] = true;
            *left = left.saturating_sub(ITEM + key.len());
        }
    }
    out.push('{');
    for (i, (key, raw, child, size)) in measured.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_str(out, key);
        out.push(':');
        if whole[i] {
            out.push_str(raw.get().trim());
            continue;
        }
        *left = left.saturating_sub(ITEM + key.len());
        if *size == usize::MAX {
            marker(0, out);
            continue;
        }
        cut(raw.get(), *size, child, budget, left, descents - 1, out);
    }
    out.push('}');
}

/// What a marker costs, about (its `jsonSize` with a small number).
const MARKER_BYTES: usize = 2 * ITEM + OMITTED.len() + "size".len() + "bytes".len() + 8;

fn marker(bytes: usize, out: &mut String) {
    out.push_str(r#"{""#);
    out.push_str(OMITTED);
    out.push_str(r#"":"size","bytes":"#);
    out.push_str(&bytes.to_string());
    out.push('}');
}

/// An object's members in wire order, at most [`MAX_KEYS`]; `None` if it
/// has more or cannot be read (a key serde refuses).
fn members(text: &str) -> Option<Vec<(String, &RawValue)>> {
    struct Members;
    impl<'de> Visitor<'de> for Members {
        type Value = Option<Vec<(String, &'de RawValue)>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some((key, value)) = map.next_entry::<String, &'de RawValue>()? {
                if out.len() == MAX_KEYS {
                    return Ok(None);
                }
                out.push((key, value));
            }
            Ok(Some(out))
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_map(Members).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::methods::*;
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
        // Longer than budget / 12 but measured within it.
        assert_eq!(
            bounded_request("1", SESSION_REQUEST_PERMISSION, params, 200),
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
    fn small_members_after_a_big_one_still_fit() {
        let params = format!(r#"{{"a":"{}","b":"small","c":[1,2]}}"#, "y".repeat(10_000));
        let v = cut_params("_x/y", &params, 1000).unwrap();
        assert_eq!(v["a"], json!({"$omitted": "size", "bytes": 10_000}));
        assert_eq!((&v["b"], &v["c"]), (&json!("small"), &json!([1, 2])));
    }

    #[test]
    fn answer_fields_over_the_budget_are_cut_too() {
        // An agent cannot make a handler parse its payload by putting it
        // where an answer field goes.
        let params = format!(
            r#"{{"sessionId":"s","options":[{}{{}}]}}"#,
            "{},".repeat(50_000)
        );
        let v = cut_params(SESSION_REQUEST_PERMISSION, &params, 4096).unwrap();
        assert_eq!(v["sessionId"], "s");
        assert_eq!(v["options"][OMITTED], "size");
    }

    #[test]
    fn many_small_objects_cost_the_budget_not_their_count() {
        // 1000 members of 1000 members of objects: opened without bound,
        // a marker each (~40 bytes) would be several times the input.
        let inner = format!(
            "{{{}\"z\":{{}}}}",
            (0..999)
                .map(|i| format!("\"m{i}\":{{\"a\":[1,2,3]}},"))
                .collect::<String>()
        );
        let params = format!(
            "{{{}\"toolCall\":{{\"toolCallId\":\"c\",\"title\":\"t\",\"rawInput\":[{}0]}}}}",
            (0..1000)
                .map(|i| format!("\"k{i}\":{inner},"))
                .collect::<String>(),
            "0,".repeat(999)
        );
        let msg = bounded_request("1", SESSION_REQUEST_PERMISSION, &params, 4096).unwrap();
        // At most a marker per member of each open level, past the budget.
        let bound = 4096 + MAX_DESCENTS * MAX_KEYS * 64;
        assert!(msg.len() < bound, "{} bytes of {}", msg.len(), params.len());
        let v: Value = serde_json::from_str(&msg).unwrap();
        // Behind all of them, what answers the request is still there.
        assert_eq!(
            v["params"]["toolCall"],
            json!({"toolCallId": "c", "title": "t", "rawInput": {"$omitted": "size", "bytes": 24_000}})
        );
    }

    #[test]
    fn not_an_object_or_too_many_keys_is_one_marker() {
        let arr = format!("[{}0]", "0,".repeat(10_000));
        let v = cut_params("_x/y", &arr, 1000).unwrap();
        assert_eq!(v, json!({"$omitted": "size", "bytes": 10_001 * 24}));
        let many = format!(
            "{{{}\"z\":0}}",
            (0..MAX_KEYS + 1)
                .map(|i| format!("\"k{i}\":0,"))
                .collect::<String>()
        );
        let v = cut_params("_x/y", &many, 1000).unwrap();
        assert_eq!(v[OMITTED], "size");
    }

    #[test]
    fn escaped_keys_and_ids_stay_valid_json() {
        let params = format!(r#"{{"k\"ey":"{}","é":1}}"#, "z".repeat(5000));
        let msg = bounded_request(r#""srv_1""#, "_x/é", &params, 100).unwrap();
        let v: Value = serde_json::from_str(&msg).unwrap();
        assert_eq!(v["id"], "srv_1");
        assert_eq!(v["params"]["k\"ey"][OMITTED], "size");
        assert_eq!(v["params"]["é"], 1);
    }
}
