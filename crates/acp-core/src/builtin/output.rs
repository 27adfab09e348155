//! A terminal's output: the last `limit` bytes of everything the command
//! wrote, cut from the front on a UTF-8 character boundary.

#[derive(Debug)]
pub struct OutputBuffer {
    data: Vec<u8>,
    /// Bytes before `start` were dropped and wait to be compacted away.
    start: usize,
    limit: usize,
    truncated: bool,
    /// After a cut, continuation bytes of a character whose start was
    /// dropped, still to drop (they may arrive in a later chunk).
    orphans: u8,
}

impl OutputBuffer {
    pub fn new(limit: usize) -> Self {
        Self {
            data: Vec::new(),
            start: 0,
            limit,
            truncated: false,
            orphans: 0,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        let kept = self.data.len() - self.start;
        let cut = kept + bytes.len() > self.limit;
        if bytes.len() >= self.limit {
            // The chunk alone fills the window: keep its tail only.
            self.data.clear();
            self.data
                .extend_from_slice(&bytes[bytes.len() - self.limit..]);
            self.start = 0;
        } else {
            self.data.extend_from_slice(bytes);
            self.start = self.data.len().saturating_sub(self.limit).max(self.start);
        }
        if cut {
            self.truncated = true;
            self.orphans = 3; // no UTF-8 character has more
        }
        while self.orphans > 0 && self.start < self.data.len() {
            if !is_continuation(self.data[self.start]) {
                self.orphans = 0;
                break;
            }
            self.start += 1;
            self.orphans -= 1;
        }
        // Compact once the dead prefix outweighs what is kept: memory stays
        // within about twice the limit and copying is amortised.
        if self.start > 0 && self.start >= self.data.len() - self.start {
            self.data.drain(..self.start);
            self.start = 0;
        }
    }

    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// The text so far, and whether it had to be cut further to fit the
    /// limit. While the command runs, a character whose bytes have not all
    /// arrived is held back; other invalid bytes become U+FFFD, which takes
    /// three bytes for one: the limit holds on the text returned, so the
    /// front is cut again (on a character boundary) when it would not.
    #[cfg(test)]
    pub fn text(&self, finished: bool) -> (String, bool) {
        self.snapshot(finished).text()
    }

    /// A copy of the complete bytes: a memcpy, so the lock on the buffer
    /// (which the terminal's pump on the shared worker takes for every
    /// chunk) is held briefly; the text is made from it after.
    pub fn snapshot(&self, finished: bool) -> Snapshot {
        let bytes = &self.data[self.start..];
        let end = if finished {
            bytes.len()
        } else {
            bytes.len() - incomplete_tail(bytes)
        };
        Snapshot {
            bytes: bytes[..end].to_vec(),
            limit: self.limit,
        }
    }
}

/// The output's bytes at one moment, see [`OutputBuffer::snapshot`].
pub struct Snapshot {
    bytes: Vec<u8>,
    limit: usize,
}

impl Snapshot {
    /// See [`OutputBuffer::text`].
    #[cfg(test)]
    pub fn text(self) -> (String, bool) {
        self.text_in_pieces(&|| false).expect("never stopped")
    }

    /// See [`OutputBuffer::text`]; invalid bytes are replaced in pieces,
    /// asking `stop` between them: `None` once it says so.
    pub fn text_in_pieces(self, stop: &dyn Fn() -> bool) -> Option<(String, bool)> {
        // Valid UTF-8 (the usual case) keeps the snapshot's buffer.
        let mut text = match String::from_utf8(self.bytes) {
            Ok(text) => text,
            Err(e) => lossy(e.as_bytes(), stop)?,
        };
        if text.len() <= self.limit {
            return Some((text, false));
        }
        let mut cut = text.len() - self.limit;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text.drain(..cut);
        Some((text, true))
    }
}

/// `String::from_utf8_lossy`, asking `stop` every [`LOSSY_PIECE`] bytes
/// (output of invalid bytes only is one replacement per byte).
fn lossy(bytes: &[u8], stop: &dyn Fn() -> bool) -> Option<String> {
    const LOSSY_PIECE: usize = 256 * 1024;
    let mut text = String::with_capacity(bytes.len());
    let mut next = LOSSY_PIECE;
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        if !chunk.invalid().is_empty() {
            text.push(char::REPLACEMENT_CHARACTER);
        }
        if text.len() >= next {
            if stop() {
                return None;
            }
            next = text.len() + LOSSY_PIECE;
        }
    }
    Some(text)
}

fn is_continuation(b: u8) -> bool {
    b & 0b1100_0000 == 0b1000_0000
}

/// Length of a multi-byte character at the end that is not complete yet.
fn incomplete_tail(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(4) {
        let b = bytes[bytes.len() - back];
        if is_continuation(b) {
            continue;
        }
        let need = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if need > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(limit: usize, chunks: &[&[u8]]) -> OutputBuffer {
        let mut o = OutputBuffer::new(limit);
        for c in chunks {
            o.push(c);
        }
        o
    }

    #[test]
    fn under_the_limit_nothing_is_dropped() {
        let o = feed(10, &[b"ab", b"cd"]);
        assert_eq!(o.text(true).0, "abcd");
        assert!(!o.truncated());
        let o = feed(4, &[b"ab", b"cd"]);
        assert_eq!(o.text(true).0, "abcd");
        assert!(!o.truncated());
    }

    #[test]
    fn keeps_the_end_and_cuts_on_a_character_boundary() {
        // "é" is 2 bytes, "日" 3, "😀" 4.
        let o = feed(5, &["abc".as_bytes(), "é日".as_bytes()]);
        // 8 bytes, keep 5: the cut lands right before "é".
        assert_eq!(o.text(true).0, "é日");
        let o = feed(4, &["abc".as_bytes(), "é日".as_bytes()]);
        // Keep 4: the cut would land inside "é"; it moves forward.
        assert_eq!(o.text(true).0, "日");
        assert!(o.truncated());
        let o = feed(6, &["x😀y😀".as_bytes()]);
        // The cut lands in the first emoji's tail: skipped, 5 bytes kept.
        assert_eq!(o.text(true).0, "y😀");
        for limit in 0..12 {
            let s = "aé日😀bé";
            let mut o = OutputBuffer::new(limit);
            for b in s.as_bytes() {
                o.push(&[*b]);
                assert!(!o.text(false).0.contains('\u{FFFD}'), "limit {limit}");
            }
            let text = o.text(true).0;
            assert!(s.ends_with(&text), "limit {limit}: {text}");
            assert!(
                text.len() <= limit && text.len() + 3 >= limit.min(s.len()),
                "limit {limit}: {text}"
            );
        }
    }

    #[test]
    fn a_split_character_waits_for_its_last_byte() {
        let smile = "😀".as_bytes();
        let mut o = OutputBuffer::new(100);
        o.push(b"hi ");
        o.push(&smile[..2]);
        assert_eq!(o.text(false).0, "hi ");
        o.push(&smile[2..]);
        assert_eq!(o.text(false).0, "hi 😀");
        // Binary garbage does not stall the output.
        o.push(&[0xff, b'z']);
        assert_eq!(o.text(false).0, "hi 😀\u{FFFD}z");
    }

    #[test]
    fn the_limit_holds_on_the_text_returned() {
        // 0xFF is not UTF-8: each byte becomes a 3-byte U+FFFD.
        let o = feed(1024, &[&[0xff; 2048]]);
        let (text, cut) = o.text(true);
        assert!(text.len() <= 1024, "{}", text.len());
        assert!(cut);
        assert!(text.len() > 1020);
        assert!(text.chars().all(|c| c == '\u{FFFD}'));
        let o = feed(10, &[b"abc"]);
        assert_eq!(o.text(true), ("abc".to_string(), false));
    }

    #[test]
    fn memory_stays_bounded() {
        let mut o = OutputBuffer::new(1000);
        for _ in 0..10_000 {
            o.push(&[b'x'; 77]);
            assert!(o.data.len() <= 2 * 1000 + 77);
        }
        assert_eq!(o.text(true).0.len(), 1000);
        let mut z = OutputBuffer::new(0);
        z.push(b"abc");
        assert_eq!(z.text(true).0, "");
        assert!(z.truncated());
    }
}
