//! The byte count of what a view keeps, for `max_total_bytes`: a
//! structural walk that `lib/session-fold.js` (`jsonSize`) computes to the
//! same number, with no dependence on JSON number formatting or key order.
//! A string or key counts its UTF-8 bytes, a number, `true`, `false` or
//! `null` [`SCALAR`], and each array element or object member [`ITEM`]
//! more (what holding it costs, roughly). Message text counts its bytes
//! only (the hot path adds them, nothing else).

use serde_json::Value;

/// A number, boolean or null.
pub(crate) const SCALAR: usize = 8;
/// Each array element and object member, on top of its contents.
pub(crate) const ITEM: usize = 16;

/// The size of a JSON value. Recursion is bounded by the parser's depth
/// limit (serde_json refuses nesting deeper than 128).
pub(crate) fn value(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(|v| ITEM + value(v)).sum(),
        Value::Object(map) => map.iter().map(|(k, v)| member(k, v)).sum(),
        _ => SCALAR,
    }
}

/// The size of one object member.
pub(crate) fn member(key: &str, v: &Value) -> usize {
    ITEM + key.len() + value(v)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn sizes_are_structural() {
        assert_eq!(super::value(&json!(null)), 8);
        assert_eq!(super::value(&json!(1.5e300)), 8);
        assert_eq!(super::value(&json!("é漢")), 5);
        // [1,"ab"]: 2 items + 8 + 2; {"k":[1,"ab"]}: 1 member + 1 + that.
        assert_eq!(super::value(&json!([1, "ab"])), 42);
        assert_eq!(super::value(&json!({"k": [1, "ab"]})), 16 + 1 + 42);
    }
}
