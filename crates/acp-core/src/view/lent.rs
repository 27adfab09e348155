//! Message text shared with the host instead of copied for it.
//!
//! A drain hands the host the text a message gained since the last one:
//! on a streaming agent, megabytes the host keeps (a UI renders them). A
//! copy of each was a second copy of every message in memory, written to
//! fresh pages by the host's thread (bench:ui: 14 of the JS thread's 36 ms
//! per 200k chunks). Instead, when a drain sends at least
//! [`LEND_MIN_BYTES`] of a block's growing text, that whole string is
//! frozen into a segment the entry and the host share
//! ([`DrainText::Shared`]), and the block grows a new one: its text is its
//! frozen segments followed by the string still growing.
//!
//! A drain's text comes from one piece (a segment, or the growing string):
//! text the host has not seen yet that was frozen with a drain's (the
//! drain was cut by its budget) goes in later drains, the segment's rest
//! first. One block per entry holds segments ([`Lent::block`]); a drain of
//! another block of that entry copies, as before.

use std::fmt;
use std::sync::Arc;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

/// A drain's text this long is shared rather than copied. A message
/// between two tool calls is a few KiB, which a copy would hold twice;
/// below it, a copy costs less than a segment, and a block holds at most
/// one segment per this many bytes.
pub const LEND_MIN_BYTES: usize = 4 * 1024;

/// The frozen start of one text block's text (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Lent {
    /// The block (index in the entry's content) the segments belong to.
    pub block: usize,
    pub segments: Vec<Arc<String>>,
    /// Their bytes together.
    pub len: usize,
}

impl Lent {
    /// Bytes of block `block`'s text held in segments.
    pub fn len_of(&self, block: usize) -> usize {
        if self.block == block {
            self.len
        } else {
            0
        }
    }

    /// Block `block`'s text from byte `at` (of its whole text) to the end
    /// of the piece holding it (`open`: the block's growing string), and
    /// whether more text follows that piece (a later segment, or growing
    /// text: an empty one is no more).
    pub fn piece_from<'a>(
        &'a self,
        block: usize,
        open: &'a str,
        at: usize,
    ) -> Option<(&'a str, bool)> {
        let lent = self.len_of(block);
        if at >= lent {
            return Some((open.get(at - lent..)?, false));
        }
        let (start, segment) = self.segment_at(at)?;
        let piece = segment.get(at - start..)?;
        Some((piece, start + segment.len() < lent || !open.is_empty()))
    }

    /// The segment holding byte `at` of the block's text, and its start.
    fn segment_at(&self, at: usize) -> Option<(usize, &Arc<String>)> {
        let mut start = self.len;
        // Newest first: a drain reads where the last one stopped.
        for segment in self.segments.iter().rev() {
            start -= segment.len();
            if at >= start {
                return Some((start, segment));
            }
        }
        None
    }

    /// Block `block`'s text `from..upto` (bytes of its whole text, within
    /// one piece) for the host: a share of a segment; or, from the growing
    /// string `open`, of `open` frozen into a new segment when the text is
    /// at least [`LEND_MIN_BYTES`]. `None`: copy it (short, or another
    /// block holds segments).
    pub fn share(
        &mut self,
        block: usize,
        open: &mut String,
        from: usize,
        upto: usize,
    ) -> Option<DrainText> {
        let lent = self.len_of(block);
        if from < lent {
            let (start, segment) = self.segment_at(from)?;
            debug_assert!(
                upto <= start + segment.len(),
                "a drain's text is in one piece"
            );
            return Some(DrainText::Shared {
                text: Arc::clone(segment),
                start: from - start,
                end: upto - start,
            });
        }
        if upto - from < LEND_MIN_BYTES || (self.len > 0 && self.block != block) {
            return None;
        }
        // The next string grows from nothing: a message that ends here
        // keeps no reserve (with 64 KiB each, a view's 1,024 shared
        // messages under `max_total_bytes` could hold 64 MiB of slack).
        let mut frozen = std::mem::take(open);
        // Kept for the session: not the growth's slack (an allocator
        // shrinks in place).
        frozen.shrink_to_fit();
        let frozen = Arc::new(frozen);
        self.block = block;
        self.len += frozen.len();
        self.segments.push(Arc::clone(&frozen));
        Some(DrainText::Shared {
            text: frozen,
            start: from - lent,
            end: upto - lent,
        })
    }
}

/// A text a drain carries apart from its JSON (see [`super::Drained`]).
#[derive(Debug, Clone)]
pub enum DrainText {
    Owned(String),
    /// `text[start..end]`, shared with the entry: the bytes never change.
    Shared {
        text: Arc<String>,
        start: usize,
        end: usize,
    },
}

impl DrainText {
    pub fn as_str(&self) -> &str {
        match self {
            DrainText::Owned(text) => text,
            DrainText::Shared { text, start, end } => &text[*start..*end],
        }
    }
}

/// A text-only block whose text is `segments` then `open`, serialized as
/// the block's value would be (`{"text": …, "type": "text"}`).
pub(crate) struct LentBlock<'a>(pub &'a [Arc<String>], pub &'a str);

impl Serialize for LentBlock<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("text", &Joined(self.0, self.1))?;
        m.serialize_entry("type", "text")?;
        m.end()
    }
}

/// Segments then the open text, as one JSON string (no joined copy).
struct Joined<'a>(&'a [Arc<String>], &'a str);

impl Serialize for Joined<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for Joined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        super::copy::escaping_text();
        for segment in self.0 {
            f.write_str(segment)?;
        }
        f.write_str(self.1)
    }
}
