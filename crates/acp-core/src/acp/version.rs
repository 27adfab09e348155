use serde::Deserialize;

/// The ACP protocol version this client speaks (an integer on the wire).
pub const PROTOCOL_VERSION: u64 = 1;

/// Check an `initialize` result: the agent must answer with a version we
/// speak. Some agents echo whatever they were sent; a string, a missing
/// field or another number is a protocol error, not something to guess at.
pub fn check_initialize_result(result: &str) -> Result<(), String> {
    #[derive(Deserialize)]
    struct Init {
        #[serde(rename = "protocolVersion")]
        protocol_version: Option<serde_json::Value>,
    }
    let init: Init = serde_json::from_str(result)
        .map_err(|e| format!("initialize result is not an object: {e}"))?;
    match init.protocol_version {
        Some(v) if v.as_u64() == Some(PROTOCOL_VERSION) => Ok(()),
        Some(v) => Err(format!(
            "agent answered protocolVersion {v}; this client speaks {PROTOCOL_VERSION}"
        )),
        None => Err("initialize result has no protocolVersion".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_integer_one() {
        assert!(check_initialize_result(r#"{"protocolVersion":1,"agentCapabilities":{}}"#).is_ok());
        assert!(check_initialize_result(r#"{"protocolVersion":2}"#).is_err());
        assert!(check_initialize_result(r#"{"protocolVersion":"1"}"#).is_err());
        assert!(check_initialize_result(r#"{}"#).is_err());
        assert!(check_initialize_result(r#"null"#).is_err());
    }
}
