//! JSON string literals, the one escaper every layer uses to put text
//! into the JSON it builds (lines we send, batches, trace records).

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
    push_escaped(out, s);
    out.push('"');
}

/// [`push_json_str`] in pieces of about `piece` bytes of `s`, asking
/// `stop` after each (work sharing its CPU, or told to stop): false, and
/// the literal left unfinished, once it says so.
pub fn push_json_str_in_pieces(
    out: &mut String,
    s: &str,
    piece: usize,
    mut stop: impl FnMut() -> bool,
) -> bool {
    out.push('"');
    let mut rest = s;
    while !rest.is_empty() {
        let mut cut = floor_char_boundary(rest, piece.max(4));
        if cut == 0 {
            cut = rest.len().min(4);
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
        }
        push_escaped(out, &rest[..cut]);
        rest = &rest[cut..];
        if stop() {
            return false;
        }
    }
    out.push('"');
    true
}

/// The body of `s`'s literal.
fn push_escaped(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
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
            // By hand, not `write!`: a file of control characters is all
            // such bytes, each a trip through the formatting machinery.
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(escaped);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
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
            "\u{1}\u{2}\u{3}\u{4}\u{5}\u{1f}\u{10}é\u{0}",
        ] {
            assert_eq!(json_str(s), serde_json::to_string(s).unwrap(), "{s:?}");
            assert_eq!(json_str_len(s), json_str(s).len(), "{s:?}");
            for piece in [1, 2, 5] {
                let mut out = String::new();
                let mut asked = 0;
                assert!(push_json_str_in_pieces(&mut out, s, piece, || {
                    asked += 1;
                    false
                }));
                assert_eq!(out, json_str(s), "{s:?} by {piece}");
                assert!(asked >= s.len() / piece.max(4), "{s:?} by {piece}");
            }
        }
    }
}
