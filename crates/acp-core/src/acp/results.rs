//! What the host receives of a big answer to one of our ACP requests: its
//! result cut to `maxResultBytes` (see `cut`), keeping what a host needs
//! to go on. The full text stays in the core until the host takes it, for
//! it to read on demand.
//!
//! Cut: the results of the ACP methods below, whoever calls them. Never
//! cut: extension and unknown methods (`client.request('_vendor/…')`):
//! the library cannot know which of their fields the caller needs, and
//! the caller chose to ask that agent for them.

use super::cut::{cut_to_budget, Keep};

/// The result for the host when `result` (the agent's result text of a
/// `method` request) is over `budget`: the result cut. `None`: deliver it
/// as it is (within the budget, or not an ACP method we cut).
pub fn bounded_result(method: &str, result: &str, budget: usize) -> Option<String> {
    cut_to_budget(result, kept_fields(method)?, budget)
}

/// The members of a method's result a host needs (and the `sessionId`,
/// always); `None`: a method whose result is never cut.
fn kept_fields(method: &str) -> Option<Keep> {
    use super::methods::*;
    // A session's state as opening it reports it: the mode picker, the
    // config options, and `models` as agents older than model config
    // options send it (the current ids even when the lists are too big).
    const SESSION_STATE: Keep = &[
        &["modes"],
        &["modes", "currentModeId"],
        &["models"],
        &["models", "currentModelId"],
        &["configOptions"],
    ];
    Some(match method {
        INITIALIZE => &[
            &["protocolVersion"],
            &["agentCapabilities"],
            &["authMethods"],
            &["agentInfo"],
        ],
        SESSION_NEW | SESSION_LOAD | SESSION_RESUME | SESSION_FORK => SESSION_STATE,
        SESSION_PROMPT => &[&["stopReason"], &["usage"]],
        SESSION_SET_CONFIG_OPTION => &[&["configOptions"]],
        SESSION_LIST => &[&["sessions"], &["nextCursor"]],
        AUTHENTICATE | LOGOUT | SESSION_CLOSE | SESSION_DELETE | SESSION_SET_MODE => &[],
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::methods::*;
    use crate::view::OMITTED;
    use serde_json::{json, Value};

    fn cut(method: &str, result: &str, budget: usize) -> Option<Value> {
        let out = bounded_result(method, result, budget)?;
        Some(serde_json::from_str(&out).unwrap())
    }

    fn zeros(n: usize) -> String {
        format!("[{}0]", "0,".repeat(n - 1))
    }

    #[test]
    fn a_big_load_result_keeps_the_session_state_and_cuts_the_rest() {
        let result = format!(
            r#"{{"modes":{{"currentModeId":"ask","availableModes":[{{"id":"ask","name":"Ask"}}]}},"configOptions":[{{"id":"model","currentValue":"m"}}],"_meta":{{"pad":{}}}}}"#,
            zeros(1_000_000)
        );
        let v = cut(SESSION_LOAD, &result, 4 << 20).expect("cut");
        assert_eq!(
            v["modes"],
            json!({"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}]})
        );
        assert_eq!(v["configOptions"][0]["currentValue"], "m");
        assert_eq!(
            v["_meta"]["pad"],
            json!({"$omitted": "size", "bytes": 1_000_000 * 24})
        );
    }

    #[test]
    fn a_mode_list_too_big_to_keep_still_says_the_current_mode() {
        let modes: Vec<_> = (0..20_000)
            .map(|i| json!({"id": format!("m{i}"), "name": "x".repeat(50)}))
            .collect();
        let result =
            json!({"sessionId": "s9", "modes": {"availableModes": modes, "currentModeId": "m7"}})
                .to_string();
        let v = cut(SESSION_NEW, &result, 64 * 1024).expect("cut");
        assert_eq!(v["sessionId"], "s9");
        assert_eq!(v["modes"]["currentModeId"], "m7");
        assert_eq!(v["modes"]["availableModes"][OMITTED], "size");
    }

    #[test]
    fn a_prompt_keeps_its_stop_reason_and_usage() {
        let result = format!(
            r#"{{"_meta":{{"trace":"{}"}},"stopReason":"end_turn","usage":{{"inputTokens":3}}}}"#,
            "t".repeat(100_000)
        );
        let v = cut(SESSION_PROMPT, &result, 4096).expect("cut");
        assert_eq!(v["stopReason"], "end_turn");
        assert_eq!(v["usage"], json!({"inputTokens": 3}));
        assert_eq!(
            v["_meta"]["trace"],
            json!({"$omitted": "size", "bytes": 100_000})
        );
    }

    #[test]
    fn initialize_keeps_what_the_client_reads() {
        let result = format!(
            r#"{{"protocolVersion":1,"agentCapabilities":{{"loadSession":true}},"authMethods":[],"agentInfo":{{"name":"a"}},"_meta":{}}}"#,
            zeros(10_000)
        );
        let v = cut(INITIALIZE, &result, 4096).expect("cut");
        assert_eq!(v["protocolVersion"], 1);
        assert_eq!(v["agentCapabilities"]["loadSession"], true);
        assert_eq!(
            (&v["authMethods"], &v["agentInfo"]["name"]),
            (&json!([]), &json!("a"))
        );
        assert_eq!(v["_meta"][OMITTED], "size");
    }

    #[test]
    fn extension_and_unknown_methods_and_small_results_are_whole() {
        let big = format!(r#"{{"data":{}}}"#, zeros(100_000));
        assert_eq!(bounded_result("_vendor/export", &big, 4096), None);
        assert_eq!(bounded_result("session/status", &big, 4096), None);
        assert_eq!(
            bounded_result(SESSION_SET_MODE, r#"{"_meta":{}}"#, 4096),
            None
        );
        assert!(bounded_result(SESSION_SET_MODE, &big, 4096).is_some());
    }
}
