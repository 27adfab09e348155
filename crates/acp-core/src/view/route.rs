//! Routing a `session/update` line for a view without reading it twice:
//! the envelope is read up to its `params`, and the params, the rest of
//! the line, are left for the fold to parse once (the classifier would
//! otherwise skip over all of them first, a pass as long as the fold's).
//!
//! Agents put `params` last (the SDKs serialize `jsonrpc`, `method`,
//! `params` in that order), so nearly every update takes this route; any
//! other layout (`params` first, an `id` after them, escapes in the
//! envelope's keys or method, a duplicate key) takes the general path.

use super::scan::Scanner;

/// A `session/update` notification line, read up to its params.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UpdateLine<'a> {
    /// The `method` string's contents, a slice of the line.
    pub method: &'a str,
    /// The line from the first byte of the `params` value to the last
    /// before the closing brace, whitespace trimmed: the raw params if the
    /// line is JSON. Not checked here: parsing it whole (one value, then
    /// whitespace only) is what proves the line is `{"jsonrpc": J,
    /// "method": "session/update", "params": P}`, the notification the
    /// classifier would read with these same params.
    pub params: &'a str,
}

/// Read `line` if it is, up to its params, a `session/update`
/// notification whose `params` come last: `{` then `"jsonrpc": "<no
/// escapes>"` (optional) and `"method": "session/update"` in either order,
/// then `"params":`, and a `}` at the end.
pub(crate) fn update_line(line: &str) -> Option<UpdateLine<'_>> {
    let mut s = Scanner::new(line);
    s.eat(b'{')?;
    let keys = [r#""jsonrpc""#, r#""method""#, r#""params""#];
    let mut seen = 0u32;
    let mut method = None;
    loop {
        s.ws();
        let key = keys.iter().position(|k| s.literal(k))?;
        if seen & (1 << key) != 0 {
            return None;
        }
        seen |= 1 << key;
        s.eat(b':')?;
        s.ws();
        if key == 2 {
            break;
        }
        if let Some((start, end)) = s.update_envelope(key)? {
            method = Some(&line[start..end]);
        }
        s.eat(b',')?;
    }
    let method = method?;
    let b = line.as_bytes();
    let json_ws = |b: u8| matches!(b, b' ' | b'\n' | b'\r' | b'\t');
    let mut end = b.len();
    while end > s.at && json_ws(b[end - 1]) {
        end -= 1;
    }
    if end <= s.at || b[end - 1] != b'}' {
        return None;
    }
    end -= 1;
    while end > s.at && json_ws(b[end - 1]) {
        end -= 1;
    }
    (end > s.at).then(|| UpdateLine {
        method,
        params: &line[s.at..end],
    })
}

/// The session id of `session/update` params that start with it, a
/// string without escapes (`{"sessionId": "…", …`: how agents write
/// them), read without reading the rest: what picks the view whose caps
/// decide how a long update is read ([`super::UpdateParams::read_with`]).
/// Not checked here that the rest is JSON: the parse that follows does.
pub(crate) fn leading_session_id(params: &str) -> Option<&str> {
    let mut s = Scanner::new(params);
    s.eat(b'{')?;
    s.ws();
    if !s.literal(r#""sessionId""#) {
        return None;
    }
    s.eat(b':')?;
    s.ws();
    s.plain_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::methods;
    use crate::rpc::{self, Inbound};
    use crate::view::UpdateParams;

    /// What the reader routes `line` to for a view: `Some(params)` where
    /// it is folded from this route (the update line read, and its params
    /// read by the fold), `None` where it takes the general path.
    fn routed(line: &str) -> Option<&str> {
        let u = update_line(line)?;
        // The method is borrowed from the line (the item copies its token).
        let base = line.as_ptr() as usize;
        assert!((base..base + line.len()).contains(&(u.method.as_ptr() as usize)));
        assert_eq!(u.method, methods::SESSION_UPDATE);
        UpdateParams::read(u.params).map(|_| u.params)
    }

    /// Where this route folds a line, the classifier reads it as a
    /// `session/update` notification with exactly these params.
    fn check(line: &str) -> bool {
        let Some(params) = routed(line) else {
            return false;
        };
        match rpc::classify(line.as_bytes()) {
            Inbound::Notification { method, params: p } => {
                assert_eq!(method, methods::SESSION_UPDATE, "{line}");
                assert_eq!(p.map(|p| p.get()), Some(params), "{line}");
            }
            other => panic!("routed, but classified {other:?}: {line}"),
        }
        true
    }

    fn line(params: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{params}}}"#)
    }

    /// Updates of every kind the agents send, params last: routed.
    #[test]
    fn updates_with_params_last_are_routed_as_the_classifier_reads_them() {
        let big = "x".repeat(100 * 1024);
        let updates = [
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"AAAA","mimeType":"image/png"}}"#.to_string(),
            r#"{"sessionUpdate":"tool_call","toolCallId":"t","title":"Run","kind":"execute","status":"pending","rawInput":{"command":"ls"},"locations":[{"path":"/a"}]}"#.to_string(),
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed","content":[{"type":"content","content":{"type":"text","text":"a\n\u001b[0m"}},{"type":"diff","path":"/a","oldText":"x","newText":"y"}],"rawOutput":{"code":0}}"#.to_string(),
            r#"{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"pending"}]}"#.to_string(),
            r#"{"sessionUpdate":"usage_update","used":10,"size":100}"#.to_string(),
            r#"{"sessionUpdate":"available_commands_update","availableCommands":[]}"#.to_string(),
            r#"{"sessionUpdate":"current_mode_update","currentModeId":"ask"}"#.to_string(),
            format!(r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t","content":[{{"type":"content","content":{{"type":"text","text":"{big}"}}}}]}}"#),
            "null".to_string(),
        ];
        for u in &updates {
            for l in [
                line(&format!(r#"{{"sessionId":"s","update":{u}}}"#)),
                line(&format!(r#"{{"update":{u},"sessionId":"s","_meta":{{"k":[1]}}}}"#)),
                // Whitespace everywhere JSON allows it, no jsonrpc, method first.
                format!(" {{ \"method\" :\t\"session/update\" ,\r\n \"params\" : {{ \"sessionId\" : \"s\" , \"update\" : {u} }} \n}} \r\n"),
                format!(r#"{{"method":"session/update","jsonrpc":"1","params":{{"sessionId":"s","update":{u}}}}}"#),
            ] {
                assert!(check(&l), "routed: {l}");
            }
        }
    }

    /// Lines this route leaves to the general path: it must not fold what
    /// the classifier reads as something else, refuses, or reads with
    /// other params.
    #[test]
    fn anything_else_takes_the_general_path() {
        let params = r#"{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}"#;
        let others = [
            // An id after the params: a request.
            format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{params},"id":1}}"#),
            // Params not last, duplicate keys, escapes in the envelope.
            format!(r#"{{"params":{params},"method":"session/update"}}"#),
            format!(r#"{{"method":"session/update","method":"session/update","params":{params}}}"#),
            format!(
                r#"{{"jsonrpc":"2.0","jsonrpc":"2.0","method":"session/update","params":{params}}}"#
            ),
            format!(r#"{{"method":"session\/update","params":{params}}}"#),
            format!(r#"{{"m\u0065thod":"session/update","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"2\u002e0","method":"session/update","params":{params}}}"#),
            format!(r#"{{"jsonrpc":2,"method":"session/update","params":{params}}}"#),
            format!(r#"{{"method":"session/updates","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"2.0","params":{params}}}"#),
            // Trailing text, a second brace, form feed (not JSON's whitespace).
            format!("{} x", line(params)),
            format!("{}}}", line(params)),
            format!("{}\u{c}", line(params)),
            // Something else where the closing brace belongs.
            format!("{}]", &line(params)[..line(params).len() - 1]),
            format!("{} ", &line(params)[..line(params).len() - 1]),
            // Truncated, empty, not params of an update, not JSON.
            line(params).trim_end_matches('}').to_string(),
            r#"{"method":"session/update","params":}"#.to_string(),
            r#"{"method":"session/update","params":{"sessionId":"s"}"#.to_string(),
            line(r#"{"update":{}}"#),
            line(r#"{"sessionId":"s","sessionId":"t","update":{}}"#),
            line(r#"{"sessionId":"s","update":{"a":tru}}"#),
            line(r#"{"sessionId":"s","update":{"title":"\ud800"}"#),
            line(r#"{"sessionId":"s","update":{}},{"x":1}"#),
            line(r#"{"sessionId":"s","update":{}}}"#),
            "{}".to_string(),
            String::new(),
        ];
        for l in &others {
            assert!(!check(l), "left to the general path: {l}");
        }
    }

    /// Random lines near the routed shape (key orders, extra keys,
    /// duplicates, whitespace, junk after the params, truncation): each
    /// routed exactly as the classifier reads it, or not routed.
    #[test]
    fn random_lines_are_routed_as_the_classifier_reads_them_or_not_at_all() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let values = [
            r#""s""#,
            r#"{"sessionUpdate":"plan","entries":[{"content":"a\"}"}]}"#,
            r#"{"sessionUpdate":"tool_call","toolCallId":"t","rawInput":[1,{"a":null}]}"#,
            "null",
            "[]",
            r#""}""#,
            "1",
            r#"{"x":"#,
        ];
        let ws = [" ", "", "\n", "\t ", "\r\n"];
        let (mut routed_n, mut total) = (0, 0);
        for _ in 0..20_000 {
            let mut params = vec![
                format!(r#""sessionId":{}"#, values[next(2) * 5]),
                format!(r#""update":{}"#, values[next(values.len())]),
            ];
            if next(4) == 0 {
                params.push(format!(r#""_meta":{}"#, values[next(values.len())]));
            }
            if next(20) == 0 {
                let dup = params[0].clone();
                params.push(dup);
            }
            let i = next(params.len());
            params.swap(0, i);
            let sep = format!("{},{}", ws[next(ws.len())], ws[next(ws.len())]);
            let params = format!("{{{}}}", params.join(&sep));
            let mut envelope = vec![
                r#""method":"session/update""#.to_string(),
                format!(r#""params":{params}"#),
            ];
            if next(2) == 0 {
                envelope.push(r#""jsonrpc":"2.0""#.into());
            }
            if next(10) == 0 {
                envelope.push(r#""id":1"#.into());
            }
            if next(20) == 0 {
                envelope.push(r#""method":"session/update""#.into());
            }
            // Params last most of the time, as agents send them.
            if next(3) == 0 {
                let i = next(envelope.len());
                let last = envelope.len() - 1;
                envelope.swap(i, last);
            }
            let sep = format!("{},{}", ws[next(ws.len())], ws[next(ws.len())]);
            let mut l = format!(
                "{}{{{}{}{}}}{}",
                ws[next(ws.len())],
                ws[next(ws.len())],
                envelope.join(&sep),
                ws[next(ws.len())],
                ws[next(ws.len())]
            );
            match next(15) {
                0 => l.push_str(" x"),
                1 => l.push('}'),
                2 => {
                    l.pop();
                }
                3 => {
                    let end = l.trim_end().len();
                    l.replace_range(end - 1..end, "]");
                }
                _ => {}
            }
            total += 1;
            if check(&l) {
                routed_n += 1;
            }
        }
        assert!(
            routed_n > total / 5,
            "only {routed_n} of {total} lines took the route"
        );
    }
}
