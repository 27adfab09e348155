//! Decoding a JSON string's escapes for the text chunk scanner, exactly as
//! serde_json decodes them into a `String`, without setting up a
//! deserializer and growing its scratch buffer for each chunk: most chunks
//! of a model's prose carry a `\n`. Its `\u` reader serves the size
//! measure (`bounded.rs`) too.

/// The contents of a JSON string, `raw` (between its quotes, escapes
/// kept), decoded; `None` where serde_json refuses it: an unknown escape,
/// a bad `\u` escape, a lone surrogate, a backslash at the end. `raw`
/// must be a span the scanner accepted: no raw quote or control character.
pub(crate) fn unescape(raw: &str) -> Option<String> {
    let b = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    let mut at = 0;
    while let Some(found) = memchr::memchr(b'\\', &b[at..]) {
        // A backslash is ASCII, so both slices end on char boundaries.
        out.push_str(&raw[at..at + found]);
        at += found + 2;
        let c = match *b.get(at - 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = hex4(b, at)?;
                at += 4;
                match unit {
                    0xDC00..=0xDFFF => return None,
                    0xD800..=0xDBFF => {
                        // A leading surrogate: serde_json wants its trailing
                        // one right after, as `\u` too.
                        if b.get(at..at + 2) != Some(b"\\u") {
                            return None;
                        }
                        let low = hex4(b, at + 2)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        at += 6;
                        char::from_u32(0x1_0000 + ((unit - 0xD800) << 10 | (low - 0xDC00)))?
                    }
                    _ => char::from_u32(unit)?,
                }
            }
            _ => return None,
        };
        out.push(c);
    }
    out.push_str(&raw[at..]);
    Some(out)
}

/// The four hex digits at `at` (either case), as serde_json reads them.
pub(super) fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = b.get(at..at + 4)?;
    digits.iter().try_fold(0u32, |n, &d| {
        let v = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            b'A'..=b'F' => d - b'A' + 10,
            _ => return None,
        };
        Some(n << 4 | u32::from(v))
    })
}

#[cfg(test)]
mod tests {
    use super::unescape;
    use proptest::prelude::*;

    /// What serde_json makes of the same contents.
    fn oracle(raw: &str) -> Option<String> {
        serde_json::from_str::<String>(&format!("\"{raw}\"")).ok()
    }

    #[test]
    fn every_escape_and_every_refusal() {
        let cases = [
            r"plain",
            r"",
            r#"q\"b\\s\/n\nr\rt\tb\bf\f"#,
            r"\u00e9\u4E2D\ud83d\ude00\u0000\uFFFF",
            r"中文 😀 é\n",
            r"\ud800",
            r"\udc00",
            r"\ud800\n",
            r"\ud800\u0041",
            r"\ud800\ud800",
            r"\ud800\",
            r"\ud83d\uDE0",
            r"\u12",
            r"\u12g4",
            r"\x",
            r"\'",
            r"end\",
            r"end\\",
        ];
        for raw in cases {
            assert_eq!(unescape(raw), oracle(raw), "{raw}");
        }
    }

    /// Whether the scanner could give `raw` as a string's contents: no
    /// raw quote, an escaped byte skipped.
    fn scannable(raw: &str) -> bool {
        let b = raw.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'"' => return false,
                b'\\' => i += 2,
                _ => i += 1,
            }
        }
        i == b.len() || b.ends_with(b"\\")
    }

    /// Pieces of JSON string contents, broken ones included.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z ]{0,12}",
            "[é中😀]{1,3}",
            Just(r"\n".to_string()),
            Just(r#"\""#.to_string()),
            Just(r"\\".to_string()),
            Just(r"\/".to_string()),
            Just(r"\b\f\r\t".to_string()),
            "\\\\u[0-9a-fA-F]{4}",
            "\\\\u[dD][89abAB][0-9a-fA-F]{2}",
            "\\\\u[dD][c-fC-F][0-9a-fA-F]{2}",
            "\\\\u[0-9a-gG]{0,4}",
            "\\\\[a-z'0]",
            Just(r"\".to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn decodes_and_refuses_as_serde_json(pieces in prop::collection::vec(piece(), 0..12)) {
            let raw = pieces.concat();
            prop_assume!(scannable(&raw));
            prop_assert_eq!(unescape(&raw), oracle(&raw), "{}", raw);
        }
    }
}
