//! A big JSON value cut to a budget with the views' `$omitted` markers,
//! so that the host's JS thread parses a bounded text whatever the agent
//! sent: an agent request's params for a handler (`handler_params`), the
//! result of one of our requests (`results`). The full text stays in the
//! core, for the host to ask for on demand.
//!
//! Sizes are the views' `jsonSize` (see `view::size`): a string its UTF-8
//! bytes, a number or literal 8, each element or member 16 more. The rule:
//! - a value within the budget is delivered as the agent sent it;
//! - otherwise the value, an object, is opened: what the host needs (the
//!   `sessionId`, and the caller's [`Keep`] fields: a permission's
//!   `options`, a file's content, a prompt's `stopReason`, …) is kept
//!   whole when it is a string or within the budget on its own; every
//!   other member, in wire order, is kept whole while it fits what is left
//!   of the budget; an object that does not is opened the same way (at
//!   most [`MAX_DESCENTS`] deep, at most [`MAX_KEYS`] members); anything
//!   else (a string, an array, an object) becomes
//!   `{"$omitted": "size", "bytes": <its size>}`.
//!
//! The work is a few scans of the value's text and no tree of it.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::rpc::push_json_str;
use crate::view::{measure, ITEM, OMITTED};

/// Objects opened inside one another, at most.
pub(super) const MAX_DESCENTS: usize = 4;
/// Members of an object that may be opened (more: the object is a marker).
pub(super) const MAX_KEYS: usize = 1024;
/// `jsonSize` is at most this many times the text's bytes (`[0,0,…]`):
/// a value shorter than `budget / AMPLIFICATION` needs no measuring.
const AMPLIFICATION: usize = 12;

/// The members kept whole (within the budget, or whole when a string),
/// each a path of keys from the top: `&["toolCall", "title"]`. A
/// top-level `sessionId` is always kept.
pub(super) type Keep = &'static [&'static [&'static str]];

/// `text` (one JSON value) cut to `budget`, keeping `keep`; `None` when
/// it is within the budget (deliver it as it is). Cheap for a short text:
/// no scan below `budget / AMPLIFICATION` bytes.
pub(super) fn cut_to_budget(text: &str, keep: Keep, budget: usize) -> Option<String> {
    if text.len().saturating_mul(AMPLIFICATION) <= budget {
        return None;
    }
    let m = measure(text.as_bytes())?;
    if m.size <= budget {
        return None;
    }
    let mut out = String::with_capacity(budget.min(text.len()) / 4 + 64);
    let mut left = budget;
    let mut cutter = Cutter {
        keep,
        budget,
        left: &mut left,
        out: &mut out,
    };
    cutter.cut(text, m.size, &Path::root(), MAX_DESCENTS);
    Some(out)
}

/// Where a value is, as keys from the top.
struct Path {
    keys: Vec<String>,
}

impl Path {
    fn root() -> Self {
        Self { keys: Vec::new() }
    }

    fn child(&self, key: &str) -> Path {
        let mut keys = self.keys.clone();
        keys.push(key.to_string());
        Path { keys }
    }

    fn as_keys(&self) -> Vec<&str> {
        self.keys.iter().map(String::as_str).collect()
    }

    /// An object a kept field is in (the tool call of a permission).
    fn leads_to_kept(&self, keep: Keep) -> bool {
        let keys = self.as_keys();
        keep.iter()
            .any(|field| field.len() > keys.len() && field.starts_with(&keys))
    }

    /// A member the host needs, kept whole within the budget.
    fn is_kept(&self, keep: Keep) -> bool {
        let keys = self.as_keys();
        keep.contains(&keys.as_slice()) || keys == ["sessionId"]
    }
}

struct Cutter<'a> {
    keep: Keep,
    /// What one kept field may take.
    budget: usize,
    /// What is left of the budget.
    left: &'a mut usize,
    out: &'a mut String,
}

impl Cutter<'_> {
    /// Write `text` (one value of size `size`) cut to what is left,
    /// taking what it writes from it.
    fn cut(&mut self, text: &str, size: usize, path: &Path, descents: usize) {
        // No bigger than its marker (a number, a short string): kept.
        if size <= *self.left || size <= MARKER_BYTES {
            *self.left = self.left.saturating_sub(size);
            self.out.push_str(text.trim());
            return;
        }
        // Opened while there is budget left to fill, or to reach a kept
        // field: once the budget is spent, each further member is one
        // marker, so markers cannot outnumber what the budget and the open
        // levels allow.
        let opened = descents > 0
            && (*self.left > MARKER_BYTES || path.leads_to_kept(self.keep))
            && text.trim_start().starts_with('{');
        let members = if opened { members(text) } else { None };
        let Some(members) = members else {
            marker(size, self.out);
            *self.left = self.left.saturating_sub(MARKER_BYTES);
            return;
        };
        // Measured first: kept fields take their share before the others.
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
            // A string costs its bytes (no amplification), and a cut one is
            // of no use to a host: a file's content, a command.
            let string = raw.get().trim_start().starts_with('"');
            if child.is_kept(self.keep) && (*size <= self.budget || string) {
                whole[i] = true;
                *self.left = self.left.saturating_sub(ITEM + key.len());
            }
        }
        self.out.push('{');
        for (i, (key, raw, child, size)) in measured.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            push_json_str(self.out, key);
            self.out.push(':');
            if whole[i] {
                self.out.push_str(raw.get().trim());
                continue;
            }
            *self.left = self.left.saturating_sub(ITEM + key.len());
            if *size == usize::MAX {
                marker(0, self.out);
                continue;
            }
            self.cut(raw.get(), *size, child, descents - 1);
        }
        self.out.push('}');
    }
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
    use serde_json::{json, Value};

    const KEEP: Keep = &[&["call", "id"], &["call", "title"], &["options"]];

    fn cut(text: &str, budget: usize) -> Option<Value> {
        let out = cut_to_budget(text, KEEP, budget)?;
        Some(serde_json::from_str(&out).unwrap())
    }

    #[test]
    fn a_value_within_the_budget_is_delivered_as_sent() {
        let text = r#"{"sessionId":"s","call":{"id":"c","raw":[0,0,0]}}"#;
        assert_eq!(cut(text, 1 << 20), None);
        // Longer than budget / 12 but measured within it.
        assert_eq!(cut(text, 200), None);
    }

    #[test]
    fn kept_fields_stay_whole_and_the_rest_is_cut() {
        let zeros = format!("[{}0]", "0,".repeat(100_000));
        let long = "x".repeat(50_000);
        let text = format!(
            r#"{{"sessionId":"s1","call":{{"id":"c1","title":"{long}","raw":{zeros}}},"options":[{{"k":"allow"}}],"note":"{long}","n":1}}"#
        );
        let v = cut(&text, 4096).unwrap();
        assert_eq!(v["sessionId"], "s1");
        assert_eq!(v["options"], json!([{"k": "allow"}]));
        // A kept string is whole whatever its size.
        assert_eq!(v["call"]["id"], "c1");
        assert_eq!(v["call"]["title"], long.as_str());
        assert_eq!(
            v["call"]["raw"],
            json!({"$omitted": "size", "bytes": 100_001 * 24})
        );
        assert_eq!(v["note"], json!({"$omitted": "size", "bytes": 50_000}));
        assert_eq!(v["n"], 1);
    }

    #[test]
    fn small_members_after_a_big_one_still_fit() {
        let text = format!(r#"{{"a":"{}","b":"small","c":[1,2]}}"#, "y".repeat(10_000));
        let v = cut(&text, 1000).unwrap();
        assert_eq!(v["a"], json!({"$omitted": "size", "bytes": 10_000}));
        assert_eq!((&v["b"], &v["c"]), (&json!("small"), &json!([1, 2])));
    }

    #[test]
    fn kept_fields_over_the_budget_are_cut_too() {
        // An agent cannot make the host parse its payload by putting it
        // where a kept field goes.
        let text = format!(
            r#"{{"sessionId":"s","options":[{}{{}}]}}"#,
            "{},".repeat(50_000)
        );
        let v = cut(&text, 4096).unwrap();
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
        let text = format!(
            "{{{}\"call\":{{\"id\":\"c\",\"title\":\"t\",\"raw\":[{}0]}}}}",
            (0..1000)
                .map(|i| format!("\"k{i}\":{inner},"))
                .collect::<String>(),
            "0,".repeat(999)
        );
        let out = cut_to_budget(&text, KEEP, 4096).unwrap();
        // At most a marker per member of each open level, past the budget.
        let bound = 4096 + MAX_DESCENTS * MAX_KEYS * 64;
        assert!(out.len() < bound, "{} bytes of {}", out.len(), text.len());
        let v: Value = serde_json::from_str(&out).unwrap();
        // Behind all of them, what the host needs is still there.
        assert_eq!(
            v["call"],
            json!({"id": "c", "title": "t", "raw": {"$omitted": "size", "bytes": 24_000}})
        );
    }

    #[test]
    fn not_an_object_or_too_many_keys_is_one_marker() {
        let arr = format!("[{}0]", "0,".repeat(10_000));
        assert_eq!(
            cut(&arr, 1000).unwrap(),
            json!({"$omitted": "size", "bytes": 10_001 * 24})
        );
        let many = format!(
            "{{{}\"z\":0}}",
            (0..MAX_KEYS + 1)
                .map(|i| format!("\"k{i}\":0,"))
                .collect::<String>()
        );
        assert_eq!(cut(&many, 1000).unwrap()[OMITTED], "size");
    }

    #[test]
    fn escaped_keys_stay_valid_json() {
        let text = format!(r#"{{"k\"ey":"{}","é":1}}"#, "z".repeat(5000));
        let v = cut(&text, 100).unwrap();
        assert_eq!(v["k\"ey"][OMITTED], "size");
        assert_eq!(v["é"], 1);
    }
}
