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
        assert_eq!(
            collect(4, &[b"0123456789\nx\n"]),
            vec!["<oversized 11>", "x"]
        );
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    fn frames(max: usize, input: &[u8], cuts: &[usize]) -> Vec<Result<Vec<u8>, usize>> {
        let mut framer = LineFramer::new(max);
        let mut out = Vec::new();
        let mut sink = |f: Frame<'_>| match f {
            Frame::Line(l) => out.push(Ok(l.to_vec())),
            Frame::Oversized { bytes } => out.push(Err(bytes)),
        };
        let mut start = 0;
        for &cut in cuts {
            let end = cut.clamp(start, input.len());
            framer.push(&input[start..end], &mut sink);
            start = end;
        }
        framer.push(&input[start..], &mut sink);
        framer.finish(&mut sink);
        out
    }

    proptest! {
        /// However the pipe splits the stream, the frames are the same.
        #[test]
        fn chunking_never_changes_the_frames(
            input in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b'{'), any::<u8>()], 0..400),
            mut cuts in proptest::collection::vec(0usize..400, 0..20),
            max in 1usize..64,
        ) {
            cuts.sort();
            prop_assert_eq!(frames(max, &input, &cuts), frames(max, &input, &[]));
        }

        /// Without a cap in the way, the frames are exactly the lines.
        #[test]
        fn frames_are_the_lines(input in proptest::collection::vec(any::<u8>(), 0..400)) {
            let expected: Vec<Result<Vec<u8>, usize>> = {
                let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
                if lines.last().is_some_and(|l| l.is_empty()) { lines.pop(); }
                lines.into_iter().map(|l| Ok(l.strip_suffix(b"\r").unwrap_or(l).to_vec())).collect()
            };
            prop_assert_eq!(frames(1 << 20, &input, &[]), expected);
        }
    }
}
