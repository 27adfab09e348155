use serde_json::{json, Value};

use super::methods::*;

/// `clientCapabilities` for `initialize`, derived from the agent → client
/// methods the host can answer. Advertising a capability the host cannot
/// serve would make the agent send requests that can only fail, so each
/// flag is on exactly when its handlers exist.
pub fn client_capabilities<'a>(handled: impl IntoIterator<Item = &'a str> + Clone) -> Value {
    let has = |m: &str| handled.clone().into_iter().any(|h| h == m);
    let mut caps = json!({
        "fs": {
            "readTextFile": has(FS_READ_TEXT_FILE),
            "writeTextFile": has(FS_WRITE_TEXT_FILE),
        },
        "terminal": TERMINAL_METHODS.iter().all(|m| has(m)),
    });
    if has(ELICITATION_CREATE) {
        caps["elicitation"] = json!({ "form": {} });
    }
    caps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_follow_handlers() {
        let none = client_capabilities([]);
        assert_eq!(
            none,
            json!({"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false})
        );
        let mut all: Vec<&str> = TERMINAL_METHODS.to_vec();
        all.extend([FS_READ_TEXT_FILE, ELICITATION_CREATE]);
        let caps = client_capabilities(all.iter().copied());
        assert_eq!(caps["fs"]["readTextFile"], true);
        assert_eq!(caps["fs"]["writeTextFile"], false);
        assert_eq!(caps["terminal"], true);
        assert_eq!(caps["elicitation"], json!({"form":{}}));
        // Four of five terminal methods are not enough.
        let caps = client_capabilities(TERMINAL_METHODS[..4].iter().copied());
        assert_eq!(caps["terminal"], false);
    }
}
