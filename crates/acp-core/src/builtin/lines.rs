//! `line` / `limit` of `fs/read_text_file`: a window of whole lines, read
//! as a stream so a window near the start of a huge file costs little.

use std::io::{self, BufRead};

#[derive(Debug)]
pub enum WindowError {
    /// The selected text is over the cap.
    TooLarge,
    Io(io::Error),
}

/// The bytes of lines `line ..= line + limit - 1` (1-based; `line` 0 is
/// taken as 1; no `limit` means to the end), each with its `\n`. A window
/// past the end is empty. Fails once the window would exceed `cap` bytes.
pub fn read_window<R: BufRead>(
    mut reader: R,
    line: Option<u64>,
    limit: Option<u64>,
    cap: usize,
) -> Result<Vec<u8>, WindowError> {
    let mut to_skip = line.unwrap_or(1).saturating_sub(1);
    while to_skip > 0 {
        let buf = reader.fill_buf().map_err(WindowError::Io)?;
        if buf.is_empty() {
            return Ok(Vec::new());
        }
        let used = match memchr::memchr(b'\n', buf) {
            Some(i) => {
                to_skip -= 1;
                i + 1
            }
            None => buf.len(),
        };
        reader.consume(used);
    }

    let mut out = Vec::new();
    let mut lines_left = limit.unwrap_or(u64::MAX);
    while lines_left > 0 {
        let buf = reader.fill_buf().map_err(WindowError::Io)?;
        if buf.is_empty() {
            break;
        }
        let (used, line_done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if out.len() + used > cap {
            return Err(WindowError::TooLarge);
        }
        out.extend_from_slice(&buf[..used]);
        reader.consume(used);
        if line_done {
            lines_left -= 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(text: &str, line: Option<u64>, limit: Option<u64>) -> String {
        // A tiny buffer so lines straddle refills.
        let reader = io::BufReader::with_capacity(3, text.as_bytes());
        String::from_utf8(read_window(reader, line, limit, 1 << 20).unwrap()).unwrap()
    }

    #[test]
    fn windows_of_whole_lines() {
        let t = "one\ntwo\nthree\nfour";
        assert_eq!(window(t, None, None), t);
        assert_eq!(window(t, Some(1), None), t);
        assert_eq!(window(t, Some(0), Some(1)), "one\n");
        assert_eq!(window(t, Some(2), Some(2)), "two\nthree\n");
        assert_eq!(window(t, Some(4), Some(10)), "four");
        assert_eq!(window(t, Some(5), None), "");
        assert_eq!(window(t, Some(99), Some(1)), "");
        assert_eq!(window(t, Some(2), Some(0)), "");
        assert_eq!(window(t, None, Some(1)), "one\n");
        assert_eq!(window("", None, None), "");
        assert_eq!(window("", Some(1), Some(1)), "");
        // CRLF stays as written; an empty line is a line.
        assert_eq!(window("a\r\n\r\nb\r\n", Some(2), Some(1)), "\r\n");
        assert_eq!(window("a\n\nb\n", Some(3), None), "b\n");
        // Multibyte text is never split: lines end at `\n` bytes.
        assert_eq!(window("é\n日本\n😀", Some(2), None), "日本\n😀");
    }

    #[test]
    fn the_cap_applies_to_the_window_not_the_file() {
        let big = format!("{}\nsmall\n", "x".repeat(100));
        let r = read_window(big.as_bytes(), Some(2), Some(1), 10).unwrap();
        assert_eq!(r, b"small\n");
        assert!(matches!(
            read_window(big.as_bytes(), None, None, 10),
            Err(WindowError::TooLarge)
        ));
        assert_eq!(
            read_window(&b"exactly10\n"[..], None, None, 10)
                .unwrap()
                .len(),
            10
        );
    }
}
