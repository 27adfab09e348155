//! NDJSON framing: split a byte stream into lines without copying complete
//! lines, tolerate CRLF, and refuse lines over a size cap.

/// One unit the framer hands out.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A complete line, without its `\n` or `\r\n`. May be empty.
    Line(&'a [u8]),
    /// A line longer than the cap was skipped; `bytes` is how much of it
    /// was seen (the line is dropped whole, the stream stays in sync).
    Oversized { bytes: usize },
}

/// Incremental line splitter. Feed it chunks as they arrive from the pipe.
#[derive(Debug)]
pub struct LineFramer {
    partial: Vec<u8>,
    max_line: usize,
    /// Bytes of an oversized line dropped so far; `Some` while skipping.
    skipping: Option<usize>,
}

impl LineFramer {
    pub fn new(max_line: usize) -> Self {
        Self {
            partial: Vec::new(),
            max_line: max_line.max(1),
            skipping: None,
        }
    }

    /// Bytes held for an unfinished line.
    pub fn buffered(&self) -> usize {
        self.partial.len()
    }

    /// Split `chunk`, calling `on_frame` for every frame it completes.
    pub fn push(&mut self, mut chunk: &[u8], mut on_frame: impl FnMut(Frame<'_>)) {
        while !chunk.is_empty() {
            let newline = memchr::memchr(b'\n', chunk);
            let (piece, rest, complete) = match newline {
                Some(i) => (&chunk[..i], &chunk[i + 1..], true),
                None => (chunk, &[][..], false),
            };
            chunk = rest;

            if let Some(seen) = self.skipping.as_mut() {
                *seen += piece.len() + usize::from(complete);
                if complete {
                    let bytes = *seen;
                    self.skipping = None;
                    on_frame(Frame::Oversized { bytes });
                }
                continue;
            }

            if self.partial.len() + piece.len() > self.max_line {
                self.skipping = Some(self.partial.len() + piece.len() + usize::from(complete));
                self.partial = Vec::new();
                if complete {
                    let bytes = self.skipping.take().unwrap_or_default();
                    on_frame(Frame::Oversized { bytes });
                }
                continue;
            }

            if !complete {
                self.partial.extend_from_slice(piece);
            } else if self.partial.is_empty() {
                on_frame(Frame::Line(trim_cr(piece)));
            } else {
                self.partial.extend_from_slice(piece);
                let line = std::mem::take(&mut self.partial);
                on_frame(Frame::Line(trim_cr(&line)));
                // Keep the allocation for the next long line, but not a huge one.
                if line.capacity() <= 1 << 20 {
                    self.partial = line;
                    self.partial.clear();
                }
            }
        }
    }

    /// The stream ended: an unterminated last line still counts as a line.
    pub fn finish(&mut self, mut on_frame: impl FnMut(Frame<'_>)) {
        if let Some(bytes) = self.skipping.take() {
            on_frame(Frame::Oversized { bytes });
        } else if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            on_frame(Frame::Line(trim_cr(&line)));
        }
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(max: usize, chunks: &[&[u8]]) -> Vec<String> {
        let mut framer = LineFramer::new(max);
        let mut out = Vec::new();
        let mut sink = |f: Frame<'_>| match f {
            Frame::Line(l) => out.push(String::from_utf8_lossy(l).into_owned()),
            Frame::Oversized { bytes } => out.push(format!("<oversized {bytes}>")),
        };
        for c in chunks {
            framer.push(c, &mut sink);
        }
        framer.finish(&mut sink);
        out
    }

    #[test]
    fn splits_lines_across_chunks_and_trims_crlf() {
        assert_eq!(
            collect(100, &[b"{\"a\":1}\r\n{\"b\"", b":2}\n\n", b"tail"]),
            vec!["{\"a\":1}", "{\"b\":2}", "", "tail"]
        );
    }

    #[test]
    fn oversized_line_is_dropped_and_stream_resyncs() {
        assert_eq!(
            collect(4, &[b"ok\n0123", b"456789", b"\nfine\n"]),
            vec!["ok", "<oversized 11>", "fine"]
        );
        assert_eq!(collect(4, &[b"0123456789\nx\n"]), vec!["<oversized 11>", "x"]);
    }
}
