//! `line` / `limit` of `fs/read_text_file`: a window of whole lines, read
//! as a stream so a window near the start of a huge file costs little.

use std::io::{self, BufRead};

#[derive(Debug)]
pub enum WindowError {
    /// The selected text is over the cap.
    TooLarge,
    /// Reaching `line` would scan more than the scan budget.
    ScanLimit,
    /// `stop()` said so.
    Stopped,
    Io(io::Error),
}

/// How far a read may go: the window's size, the bytes skipped to reach
/// it, and a check between chunks that the work is still wanted.
pub struct Bounds<'a> {
    pub cap: usize,
    pub max_scan: u64,
    pub stop: &'a dyn Fn() -> bool,
}

/// The bytes of lines `line ..= line + limit - 1` (1-based; `line` 0 is
/// taken as 1; no `limit` means to the end), each with its `\n`. A window
/// past the end is empty. Fails once the window would exceed `cap` bytes,
/// or skipping would exceed `max_scan` bytes.
pub fn read_window<R: BufRead>(
    mut reader: R,
    line: Option<u64>,
    limit: Option<u64>,
    bounds: &Bounds<'_>,
) -> Result<Vec<u8>, WindowError> {
    let mut to_skip = line.unwrap_or(1).saturating_sub(1);
    let mut scanned: u64 = 0;
    while to_skip > 0 {
        if (bounds.stop)() {
            return Err(WindowError::Stopped);
        }
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
        scanned += used as u64;
        if scanned > bounds.max_scan {
            return Err(WindowError::ScanLimit);
        }
        reader.consume(used);
    }

    let mut out = Vec::new();
    let mut lines_left = limit.unwrap_or(u64::MAX);
    while lines_left > 0 {
        if (bounds.stop)() {
            return Err(WindowError::Stopped);
        }
        let buf = reader.fill_buf().map_err(WindowError::Io)?;
        if buf.is_empty() {
            break;
        }
        let (used, line_done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if out.len() + used > bounds.cap {
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

    fn bounds(cap: usize) -> Bounds<'static> {
        Bounds {
            cap,
            max_scan: u64::MAX,
            stop: &|| false,
        }
    }

    fn window(text: &str, line: Option<u64>, limit: Option<u64>) -> String {
        // A tiny buffer so lines straddle refills.
        let reader = io::BufReader::with_capacity(3, text.as_bytes());
        String::from_utf8(read_window(reader, line, limit, &bounds(1 << 20)).unwrap()).unwrap()
    }

    #[test]
    fn skipping_is_bounded_and_stops_when_told() {
        // An endless stream without a newline: the skip gives up at the budget.
        let endless = io::BufReader::new(io::repeat(0));
        let b = Bounds {
            cap: 10,
            max_scan: 1 << 20,
            stop: &|| false,
        };
        assert!(matches!(
            read_window(endless, Some(2), None, &b),
            Err(WindowError::ScanLimit)
        ));
        let told = std::cell::Cell::new(0);
        let stop = || {
            told.set(told.get() + 1);
            told.get() > 3
        };
        let b = Bounds {
            cap: 10,
            max_scan: u64::MAX,
            stop: &stop,
        };
        let endless = io::BufReader::new(io::repeat(0));
        assert!(matches!(
            read_window(endless, Some(2), None, &b),
            Err(WindowError::Stopped)
        ));
        // Within the budget: found.
        let text = format!("{}\nsecond\n", "x".repeat(100));
        let b = Bounds {
            cap: 10,
            max_scan: 101,
            stop: &|| false,
        };
        assert_eq!(
            read_window(text.as_bytes(), Some(2), None, &b).unwrap(),
            b"second\n"
        );
        let b = Bounds { max_scan: 100, ..b };
        assert!(matches!(
            read_window(text.as_bytes(), Some(2), None, &b),
            Err(WindowError::ScanLimit)
        ));
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
        let r = read_window(big.as_bytes(), Some(2), Some(1), &bounds(10)).unwrap();
        assert_eq!(r, b"small\n");
        assert!(matches!(
            read_window(big.as_bytes(), None, None, &bounds(10)),
            Err(WindowError::TooLarge)
        ));
        assert_eq!(
            read_window(&b"exactly10\n"[..], None, None, &bounds(10))
                .unwrap()
                .len(),
            10
        );
    }
}
