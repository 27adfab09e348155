//! JSON string literals, the one escaper every layer uses to put text
//! into the JSON it builds (lines we send, batches, trace records).

use std::fmt::Write;

/// A JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_str(&mut out, s);
    out
}

/// The length of `s` as a JSON string literal: for sizing a buffer once
/// (control characters take six bytes each).
pub fn json_str_len(s: &str) -> usize {
    2 + s.len()
        + s.bytes()
            .map(|b| match b {
                b'"' | b'\\' | b'\n' | b'\r' | b'\t' => 1,
                0..=0x1f => 5,
                _ => 0,
            })
            .sum::<usize>()
}

/// The largest index `<= max` that is a char boundary of `s` (where a
/// text cut to `max` bytes ends; `str::floor_char_boundary` needs Rust
/// 1.91).
pub fn floor_char_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Room left in a reply buffer for the envelope put around it later.
pub const ENVELOPE_SLACK: usize = 128;

/// Append `s` as a JSON string literal, copying runs that need no escape.
pub fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        // Every byte matched above is ASCII, so these are char boundaries.
        out.push_str(&s[start..i]);
        if escaped.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escaped);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_str_escapes_like_serde() {
        for s in [
            "",
            "plain",
            "q\"b\\s",
            "nl\n cr\r tab\t",
            "\u{1}\u{1f}x",
            "é中😀",
            "\u{7f}",
        ] {
            assert_eq!(json_str(s), serde_json::to_string(s).unwrap(), "{s:?}");
            assert_eq!(json_str_len(s), json_str(s).len(), "{s:?}");
        }
    }
}
