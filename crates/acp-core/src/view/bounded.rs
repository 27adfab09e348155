//! What a view parses of an agent's JSON value: never a tree bigger than
//! its limits allow, nor one nested deeper than [`MAX_DEPTH`], whatever
//! the agent sends (mirrored by `boundValue` in `lib/session-fold.js`).
//!
//! A value too short to outgrow the size cap is parsed at once (one pass)
//! and kept if it is within [`MAX_DEPTH`]. Any other is measured on its
//! text first (one pass, no tree: its
//! [`size`](super::size) and its depth). One that fits (within
//! `max_total_bytes` and [`MAX_DEPTH`]; a string, number or literal always
//! fits its size: it costs its bytes, no tree) is parsed whole. One that does not is, if it
//! is an object and fewer than [`MAX_DESCENTS`] objects enclose it, parsed
//! member by member by the same rule (while its members add up to more
//! than twice `max_total_bytes`, the biggest array or object, ties by key
//! bytes, is replaced first, decided before anything is parsed); anything else
//! becomes a marker `{"$omitted": "size" | "depth", "bytes": <its size>}`.
//! So a huge `rawInput` of `[0,0,…]` costs a scan, not a tree many times
//! its size, and a tool call whose `rawInput` nests 200 deep is still a tool
//! call. What one parse builds is at most 2 × `max_total_bytes` of arrays
//! and objects by size (a tree takes about 1.3 to 3 times its size), plus
//! strings no longer than the text. (`session/update` params of up to 64
//! KiB are parsed whole before their view is known, see
//! `fast::UpdateParams`: up to 768 KiB by size, dropped at once by a view
//! with tighter limits, which then reads the update by these rules;
//! longer ones only when their view's caps would parse them whole too.)
//!
//! Lone surrogates (`\ud800` escapes without their other half), which
//! serde refuses and JS keeps, become U+FFFD first, in keys too: both
//! folds see the same strings, of the same UTF-8 size.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::size::{ITEM, SCALAR};
use super::state::ViewOptions;
use super::unescape::hex4;

/// Nesting a view keeps, counted from the value the rule is applied to
/// (serde refuses more than 128 levels in one parse).
pub(crate) const MAX_DEPTH: usize = 64;
/// Objects a too-big value is opened through, at most: each level is
/// measured again, so this bounds the scans of one line.
pub(crate) const MAX_DESCENTS: usize = 3;

/// The marker's key.
pub(crate) const OMITTED: &str = "$omitted";

/// A value's size (see [`super::size`]) and depth (a scalar is 0, an
/// array or object one more than its deepest member), measured on its
/// text; `lone`: it holds a lone surrogate escape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Measure {
    pub size: usize,
    pub depth: usize,
    pub lone: bool,
    /// Members of the object it is (0 for anything else).
    pub members: usize,
}

/// The caps of [`parse`] for a view with `options`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    /// One array or object parsed whole, at most (`max_total_bytes`:
    /// a view holds no more).
    pub value: usize,
    /// Members of an object it may open (`max_keys`: a merge takes no
    /// more), so that opening one costs little more than its keys.
    pub keys: usize,
    /// The members of one opened object together: twice
    /// `max_total_bytes`, more than a merge could ever take (what it adds
    /// less what it replaces fits in an entry).
    pub total: usize,
}

impl Caps {
    pub(crate) fn of(options: &ViewOptions) -> Self {
        Self {
            value: options.max_total_bytes,
            keys: options.max_keys,
            total: options.max_total_bytes.saturating_mul(2),
        }
    }
}

/// Parse `text` (one JSON value) within `caps`; `Null` if it is not JSON.
pub(crate) fn parse(text: &str, caps: Caps) -> Value {
    parse_small(text, caps).unwrap_or_else(|| parse_measured(text, caps))
}

/// [`parse`] deciding on the measures of the text (see the module docs).
fn parse_measured(text: &str, caps: Caps) -> Value {
    let Some(m) = measure(text.as_bytes()) else {
        return Value::Null;
    };
    if m.lone {
        let fixed = without_lone_surrogates(text);
        let plan = plan(&fixed, m, caps, MAX_DEPTH, MAX_DESCENTS);
        return build(plan);
    }
    build(plan(text, m, caps, MAX_DEPTH, MAX_DESCENTS))
}

/// Bytes of [`size`](super::size) one byte of JSON text can hold at most
/// (`,0` in an array: an item and a scalar for two bytes).
const MAX_SIZE_PER_BYTE: usize = (ITEM + SCALAR).div_ceil(2);

/// A value whose text is too short to outgrow `caps.value`, parsed in one
/// pass, no measuring first: what [`parse`] makes of it when it is also
/// within [`MAX_DEPTH`] and serde takes it (no lone surrogate), else
/// `None` (the measured path decides).
fn parse_small(text: &str, caps: Caps) -> Option<Value> {
    if !short_enough(text.len(), caps) {
        return None;
    }
    let value: Value = serde_json::from_str(text).ok()?;
    (depth(&value) <= MAX_DEPTH).then_some(value)
}

/// Whether `value`, parsed whole from a text of `bytes` (or from within
/// one), is what [`parse`] makes of that text: short enough, and within
/// [`MAX_DEPTH`] (see [`parse_small`]).
pub(crate) fn parsed_fits(bytes: usize, value: &Value, caps: Caps) -> bool {
    short_enough(bytes, caps) && depth(value) <= MAX_DEPTH
}

/// Whether a text of `bytes` is too short for what one parse of it builds
/// to outgrow `caps.value`: such a text is parsed at once, no measuring.
pub(crate) fn short_enough(bytes: usize, caps: Caps) -> bool {
    bytes.saturating_mul(MAX_SIZE_PER_BYTE) <= caps.value
}

/// Nesting of a parsed value, as [`measure`] counts it on the text.
fn depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// What becomes of a value, decided on measures alone (nothing parsed).
enum Plan<'a> {
    Whole(&'a str),
    Omitted(&'static str, usize),
    Open(Vec<(String, Plan<'a>)>),
}

/// A plan and the size of what it builds.
fn plan(
    text: &str,
    m: Measure,
    caps: Caps,
    depth_left: usize,
    descents: usize,
) -> (Plan<'_>, usize) {
    if m.depth <= depth_left && (m.size <= caps.value || !is_container(text)) {
        // Within MAX_DEPTH: serde's own limit is never reached.
        return (Plan::Whole(text), m.size);
    }
    let reason = if m.depth > depth_left {
        "depth"
    } else {
        "size"
    };
    let marker = (Plan::Omitted(reason, m.size), marker_bytes(reason));
    if descents == 0
        || depth_left == 0
        || m.members > caps.keys
        || !text.trim_start().starts_with('{')
    {
        return marker;
    }
    let Ok(members) = serde_json::from_str::<BTreeMap<String, &RawValue>>(text) else {
        return marker;
    };
    // Each member: its key, measured size, plan, and size as a member.
    let mut items = Vec::with_capacity(members.len());
    for (key, raw) in members {
        let Some(inner) = measure(raw.get().as_bytes()) else {
            return marker;
        };
        let (plan, size) = plan(raw.get(), inner, caps, depth_left - 1, descents - 1);
        let container = is_container(raw.get());
        let size = ITEM + key.len() + size;
        items.push((key, inner.size, plan, size, container));
    }
    // While the members add up to more than the total, the biggest array
    // or object (equal sizes by key, as JS compares UTF-8) is replaced; a
    // member no bigger than its marker stays.
    let mut total: usize = items.iter().map(|item| item.3).sum();
    if total > caps.total {
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by(|&a, &b| {
            items[b]
                .3
                .cmp(&items[a].3)
                .then(items[a].0.cmp(&items[b].0))
        });
        for i in order {
            if total <= caps.total {
                break;
            }
            let (key, measured, plan, size, container) = &mut items[i];
            let now = ITEM + key.len() + marker_bytes("size");
            if now < *size && *container {
                total = total - *size + now;
                *plan = Plan::Omitted("size", *measured);
                *size = now;
            }
        }
    }
    let plans = items
        .into_iter()
        .map(|(key, _, plan, _, _)| (key, plan))
        .collect();
    (Plan::Open(plans), total)
}

fn build((plan, _): (Plan<'_>, usize)) -> Value {
    build_plan(plan)
}

fn build_plan(plan: Plan<'_>) -> Value {
    match plan {
        Plan::Whole(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        Plan::Omitted(reason, bytes) => omitted(reason, bytes),
        Plan::Open(members) => Value::Object(
            members
                .into_iter()
                .map(|(key, plan)| (key, build_plan(plan)))
                .collect::<Map<_, _>>(),
        ),
    }
}

/// The size of a marker: `{"$omitted": reason, "bytes": n}`.
fn marker_bytes(reason: &str) -> usize {
    2 * ITEM + OMITTED.len() + reason.len() + "bytes".len() + SCALAR
}

/// Only arrays and objects are ever replaced: a string costs its bytes as
/// text and as a tree, a number or literal one value.
fn is_container(text: &str) -> bool {
    matches!(text.trim_start().as_bytes().first(), Some(b'[' | b'{'))
}

fn omitted(reason: &str, bytes: usize) -> Value {
    let mut obj = Map::new();
    obj.insert(OMITTED.into(), reason.into());
    obj.insert("bytes".into(), bytes.into());
    Value::Object(obj)
}

/// Measure one JSON value's text (one serde accepted) without building
/// it; `None` if it cannot. One pass; what it keeps is one byte per open
/// array or object.
pub(crate) fn measure(text: &[u8]) -> Option<Measure> {
    let mut m = Measure {
        size: 0,
        depth: 0,
        lone: false,
        members: 0,
    };
    // Open containers: b'[' or b'{'.
    let mut open: Vec<u8> = Vec::new();
    // The next value is an array's first element.
    let mut first = false;
    let mut values = 0usize;
    let mut i = 0;
    let n = text.len();
    while i < n {
        let b = text[i];
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b']' | b'}' => {
                let want = if b == b']' { b'[' } else { b'{' };
                if open.pop() != Some(want) {
                    return None;
                }
                first = false;
                i += 1;
                continue;
            }
            b':' => {
                if open.last() != Some(&b'{') {
                    return None;
                }
                if open.len() == 1 {
                    m.members += 1;
                }
                m.size += ITEM;
                i += 1;
                continue;
            }
            b',' => {
                match open.last() {
                    Some(b'[') => m.size += ITEM,
                    Some(_) => {}
                    None => return None,
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        // A value starts (or an object's key: a string too).
        if first {
            m.size += ITEM;
            first = false;
        }
        if open.is_empty() {
            values += 1;
        }
        match b {
            b'[' | b'{' => {
                open.push(b);
                m.depth = m.depth.max(open.len());
                first = b == b'[';
                i += 1;
            }
            b'"' => {
                let (bytes, lone, end) = string(text, i + 1)?;
                m.size += bytes;
                m.lone |= lone;
                i = end;
            }
            b'-' | b'0'..=b'9' => {
                i += 1;
                while i < n && matches!(text[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
                    i += 1;
                }
                m.size += SCALAR;
            }
            b't' | b'f' | b'n' => {
                let word: &[u8] = match b {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                if !text[i..].starts_with(word) {
                    return None;
                }
                i += word.len();
                m.size += SCALAR;
            }
            _ => return None,
        }
    }
    (open.is_empty() && values == 1).then_some(m)
}

/// A string's UTF-8 bytes once decoded, from `start` (after its quote):
/// the bytes, whether it holds a lone surrogate (counted as U+FFFD, 3
/// bytes), and where it ends (after its closing quote).
fn string(text: &[u8], start: usize) -> Option<(usize, bool, usize)> {
    let (mut bytes, mut lone) = (0, false);
    let mut i = start;
    loop {
        match *text.get(i)? {
            b'"' => return Some((bytes, lone, i + 1)),
            b'\\' => match *text.get(i + 1)? {
                b'u' => {
                    let cp = hex4(text, i + 2)?;
                    i += 6;
                    if (0xD800..0xDC00).contains(&cp) && text.get(i..i + 2) == Some(b"\\u") {
                        if let Some(low) =
                            hex4(text, i + 2).filter(|c| (0xDC00..0xE000).contains(c))
                        {
                            let _ = low;
                            bytes += 4;
                            i += 6;
                            continue;
                        }
                    }
                    bytes += match cp {
                        0..=0x7F => 1,
                        0x80..=0x7FF => 2,
                        0xD800..=0xDFFF => {
                            lone = true;
                            3
                        }
                        _ => 3,
                    };
                }
                _ => {
                    bytes += 1;
                    i += 2;
                }
            },
            _ => {
                bytes += 1;
                i += 1;
            }
        }
    }
}

/// `text` with each lone surrogate escape replaced by `\ufffd` (pairs kept).
fn without_lone_surrogates(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                in_string = !in_string;
                i += 1;
            }
            b'\\' if in_string => {
                if bytes.get(i + 1) != Some(&b'u') {
                    i += 2;
                    continue;
                }
                let cp = hex4(bytes, i + 2).unwrap_or(0);
                if (0xD800..0xDC00).contains(&cp)
                    && bytes.get(i + 6..i + 8) == Some(b"\\u")
                    && hex4(bytes, i + 8).is_some_and(|c| (0xDC00..0xE000).contains(&c))
                {
                    i += 12;
                } else if (0xD800..0xE000).contains(&cp) {
                    out.push_str(&text[copied..i]);
                    out.push_str("\\ufffd");
                    i += 6;
                    copied = i;
                } else {
                    i += 6;
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caps(value: usize, total: usize) -> Caps {
        Caps {
            value,
            keys: 8,
            total,
        }
    }

    /// Parsing at once what is short enough gives what measuring first
    /// does: at the size cap's edge, past the depth cap, lone surrogates,
    /// duplicate keys, not JSON.
    #[test]
    fn short_values_parse_as_measured_ones() {
        let nest = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let mut texts = vec![
            nest(MAX_DEPTH),
            nest(MAX_DEPTH + 1),
            nest(130),
            r#"{"a":"\ud800x","b":[1]}"#.to_owned(),
            r#"{"a":1,"a":[2,3]}"#.to_owned(),
            r#"[0,0,0,0,0,0,0,0]"#.to_owned(),
            r#"{"k":"v", }"#.to_owned(),
            r#" "\u00e9\n" "#.to_owned(),
            "nope".to_owned(),
        ];
        texts.push(format!(
            r#"{{"t":"{}","n":[{{}},[],null]}}"#,
            "x".repeat(300)
        ));
        for text in &texts {
            for cap in [0, 16, 64, 130, 256, 1 << 20] {
                let c = caps(cap, 2 * cap);
                assert_eq!(
                    parse(text, c),
                    parse_measured(text, c),
                    "{text} under {cap}"
                );
            }
        }
        // The bound holds where it is tightest: `,0` in an array.
        let zeros = format!("[0{}]", ",0".repeat(100));
        let m = measure(zeros.as_bytes()).unwrap();
        assert!(m.size <= zeros.len() * MAX_SIZE_PER_BYTE);
    }

    #[test]
    fn measures_like_the_size_of_the_parsed_value() {
        for text in [
            r#"null"#,
            r#"[1,"ab"]"#,
            r#"{"k":[1,"ab"]}"#,
            r#" { "a" : [ [ ] , { } , true , false , -1.5e3 ] , "é漢" : "\u00e9\ud83d\ude00\n" } "#,
            r#"[[],[[]],{}]"#,
            r#""""#,
        ] {
            let v: Value = serde_json::from_str(text).unwrap();
            let m = measure(text.as_bytes()).unwrap();
            assert_eq!(m.size, super::super::size::value(&v), "{text}");
            assert!(!m.lone);
        }
        assert_eq!(measure(b"[[],[[]],{}]").unwrap().depth, 3);
        assert_eq!(measure(b"1").unwrap().depth, 0);
        // Not a validator (serde checked the text): it refuses what it cannot measure.
        for bad in ["", "[", "]", "{]", "[1", "1 2", "tru", "\"abc"] {
            assert_eq!(measure(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let text = r#"{"\ud800k":"a\udc00b\ud83d\ude00c\ud83d","t":"\\ud800"}"#;
        let m = measure(text.as_bytes()).unwrap();
        assert!(m.lone);
        let v = parse(text, caps(1 << 20, 1 << 20));
        assert_eq!(
            v,
            json!({"\u{fffd}k": "a\u{fffd}b😀c\u{fffd}", "t": "\\ud800"})
        );
        assert_eq!(m.size, super::super::size::value(&v));
    }

    #[test]
    fn too_big_or_too_deep_values_become_markers_inside_opened_objects() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let text = format!(
            r#"{{"id":"c1","rawInput":{deep},"big":[{}0],"small":[1,2]}}"#,
            "0,".repeat(999)
        );
        let v = parse(&text, caps(4096, 1 << 20));
        assert_eq!(v["id"], "c1");
        assert_eq!(v["small"], json!([1, 2]));
        assert_eq!(
            v["rawInput"],
            json!({"$omitted": "depth", "bytes": 200 * 16 + 8})
        );
        assert_eq!(v["big"], json!({"$omitted": "size", "bytes": 1000 * 24}));
        // Not an object: a marker itself.
        assert_eq!(
            parse(&deep, caps(4096, 4096)),
            json!({"$omitted": "depth", "bytes": 200 * 16 + 8})
        );
    }

    #[test]
    fn opened_objects_keep_within_the_total_biggest_first() {
        let s = "s".repeat(300);
        let text =
            format!(r#"{{"a":[0,0,0,0],"b":[0,0,0,0,0,0,0,0],"c":[0,0,0,0],"d":1,"s":"{s}"}}"#);
        // Members: a 113, b 209, c 113, d 25, s 317: 777 in all; a marker
        // member 74 (a member no bigger stays); strings stay.
        let v = parse(&text, caps(300, 700));
        assert_eq!(v["b"], json!({"$omitted": "size", "bytes": 192}));
        assert_eq!(
            (&v["a"], &v["c"]),
            (&json!([0, 0, 0, 0]), &json!([0, 0, 0, 0]))
        );
        let v = parse(&text, caps(300, 610));
        assert_eq!(v["a"], json!({"$omitted": "size", "bytes": 96}));
        assert_eq!(v["c"], json!([0, 0, 0, 0]));
        let v = parse(&text, caps(10, 10));
        assert_eq!(v["c"], json!({"$omitted": "size", "bytes": 96}));
        assert_eq!((&v["d"], v["s"].as_str()), (&json!(1), Some(&*s)));
    }

    #[test]
    fn marker_sizes_are_their_size() {
        for reason in ["size", "depth"] {
            assert_eq!(
                marker_bytes(reason),
                super::super::size::value(&omitted(reason, 1 << 40))
            );
        }
    }

    #[test]
    fn objects_are_opened_before_the_total_is_weighed() {
        // The 1000 zeros inside `call` are replaced, not `call` whole.
        let text = format!(
            r#"{{"s":"x","call":{{"id":"c","raw":[{}0]}}}}"#,
            "0,".repeat(999)
        );
        let v = parse(&text, caps(4096, 4096));
        assert_eq!(
            v["call"],
            json!({"id": "c", "raw": {"$omitted": "size", "bytes": 24_000}})
        );
    }

    #[test]
    fn descents_are_bounded() {
        let text = r#"{"a":{"a":{"a":{"a":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}}}"#;
        let v = parse(text, caps(16, 1 << 20));
        assert_eq!(
            v["a"]["a"]["a"],
            json!({"$omitted": "size", "bytes": 16 + 1 + 40})
        );
        // Nor is an object of more than `keys` members opened.
        let many = format!(
            "{{{}\"z\":[1]}}",
            (0..8).map(|i| format!("\"k{i}\":1,")).collect::<String>()
        );
        assert_eq!(measure(many.as_bytes()).unwrap().members, 9);
        assert_eq!(
            parse(&many, caps(16, 1 << 20)),
            json!({"$omitted": "size", "bytes": 9 * 16 + 8 * (2 + 8) + 1 + 16 + 8})
        );
        // A string is never replaced.
        assert_eq!(
            parse(r#""xxxxxxxxxxxxxxxxxxxx""#, caps(4, 4)),
            "x".repeat(20)
        );
    }

    #[test]
    fn raw_values_take_any_depth() {
        let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
        let text = format!(r#"{{"x":{deep}}}"#);
        let members: BTreeMap<String, &RawValue> = serde_json::from_str(&text).unwrap();
        assert_eq!(members["x"].get().len(), deep.len());
    }
}
