//! The history's store: recent records packed in blocks, each block its
//! records and their texts back to back, so that keeping a message writes
//! to one stream through memory rather than to a string of its own.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use super::record::{Direction, Full, Kind, Record, NOT_A_RESPONSE, WHOLE};
use crate::acp::methods;

/// What comes before and after the text of a block's text chunk lines:
/// `head` then `tail` bytes of the block's text from `text_at`.
#[derive(Clone, Copy)]
struct KeptShape {
    text_at: usize,
    head: usize,
    tail: usize,
    /// The scanner's number for it (see [`crate::view::TextLine::shape`]).
    number: Option<u64>,
}

/// Consecutive records and their texts, back to back: one stream through
/// memory, not a string per record at scattered places.
#[derive(Default, Clone)]
pub(super) struct Block {
    /// The number of `records[0]`.
    pub first_seq: u64,
    pub records: Vec<Record>,
    pub text: Vec<u8>,
    shapes: Vec<KeptShape>,
}

impl Block {
    pub fn push(&mut self, full: &Full<'_>) {
        let mut rec = full.rec;
        rec.text_at = self.text.len();
        self.text.extend_from_slice(full.method.as_bytes());
        self.text.extend_from_slice(full.id.as_bytes());
        self.text.extend_from_slice(full.payload.as_bytes());
        self.records.push(rec);
    }

    /// Keep a text chunk line as its text alone, once its shape is kept.
    pub fn push_text_line(
        &mut self,
        at: Instant,
        line: &str,
        (start, end): (usize, usize),
        number: Option<u64>,
    ) {
        let same =
            matches!(self.shapes.last(), Some(kept) if number.is_some() && kept.number == number);
        if !same {
            self.shapes.push(KeptShape {
                text_at: self.text.len(),
                head: start,
                tail: line.len() - end,
                number,
            });
            self.text.extend_from_slice(&line.as_bytes()[..start]);
            self.text.extend_from_slice(&line.as_bytes()[end..]);
        }
        let text_at = self.text.len();
        self.text.extend_from_slice(&line.as_bytes()[start..end]);
        self.records.push(Record {
            at,
            waited_ns: NOT_A_RESPONSE,
            text_at,
            payload: end - start,
            bytes: line.len(),
            method: 0,
            id: 0,
            // Fewer shapes than records, which fit in memory as 64 bytes each.
            shape: (self.shapes.len() - 1) as u32,
            direction: Direction::Receive,
            kind: Kind::Notification,
            truncated: false,
        });
    }

    /// The record at `i` and its texts; `line`: room to put a text chunk
    /// line back together.
    pub fn full<'a>(&'a self, i: usize, seq: u64, line: &'a mut String) -> Full<'a> {
        let rec = self.records[i];
        let text = |at: usize, n: usize| {
            // Whole strings cut on char boundaries: valid UTF-8.
            std::str::from_utf8(&self.text[at..at + n]).unwrap_or("")
        };
        let (method, id) = (usize::from(rec.method), usize::from(rec.id));
        if rec.shape == WHOLE {
            return Full {
                seq,
                rec,
                method: text(rec.text_at, method),
                id: text(rec.text_at + method, id),
                payload: text(rec.text_at + method + id, rec.payload),
            };
        }
        let shape = &self.shapes[rec.shape as usize];
        line.clear();
        for (at, n) in [
            (shape.text_at, shape.head),
            (rec.text_at, rec.payload),
            (shape.text_at + shape.head, shape.tail),
        ] {
            line.push_str(text(at, n));
        }
        Full {
            seq,
            rec,
            method: methods::SESSION_UPDATE,
            id: "",
            payload: line,
        }
    }

    /// Append `other`'s records, texts and shapes, moved to this block's
    /// places.
    fn extend_from(&mut self, other: &Block) {
        let text_base = self.text.len();
        // Fewer shapes than records (see `push_text_line`).
        let shape_base = self.shapes.len() as u32;
        self.text.extend_from_slice(&other.text);
        self.shapes
            .extend(other.shapes.iter().map(|kept| KeptShape {
                text_at: kept.text_at + text_base,
                ..*kept
            }));
        self.records.extend(other.records.iter().map(|rec| Record {
            text_at: rec.text_at + text_base,
            shape: match rec.shape {
                WHOLE => WHOLE,
                shape => shape + shape_base,
            },
            ..*rec
        }));
    }

    fn clear(&mut self) {
        self.records.clear();
        self.shapes.clear();
        self.text.clear();
        if self.text.capacity() > KEPT_BLOCK_BYTES {
            self.text = Vec::new();
        }
        if self.records.capacity() > KEPT_BLOCK_RECORDS {
            self.records = Vec::new();
        }
    }
}

/// The recent messages, in blocks: a reader's batch becomes a block as it
/// is (not copied record by record), and a dropped block becomes the next
/// batch. Only the front block can be partly dropped. Blocks are shared
/// with a history being encoded, outside the lock (see
/// [`super::Tracer::history_json`]); the back block, the only one that
/// grows, is copied first if one is.
#[derive(Default)]
pub(super) struct Ring {
    pub blocks: VecDeque<Arc<Block>>,
    /// Records dropped from the front block.
    pub dropped_records: usize,
    /// Records kept.
    pub len: usize,
    /// An emptied block, to hold the next batch or record.
    spare: Option<Block>,
}

impl Ring {
    /// Drop the oldest records until `n` more fit in `cap`.
    pub fn make_room(&mut self, n: usize, cap: usize) {
        let mut over = (self.len + n).saturating_sub(cap).min(self.len);
        self.len -= over;
        while over > 0 {
            let Some(front) = self.blocks.front() else {
                break;
            };
            let left = front.records.len() - self.dropped_records;
            if over < left {
                self.dropped_records += over;
                return;
            }
            over -= left;
            let gone = self.blocks.pop_front().unwrap_or_default();
            // Still in a history being encoded: it goes with that.
            if let Ok(mut gone) = Arc::try_unwrap(gone) {
                gone.clear();
                self.spare = Some(gone);
            }
            self.dropped_records = 0;
        }
    }

    /// Keep the single record `full`, numbered `seq` (after
    /// [`Ring::make_room`]).
    pub fn push(&mut self, seq: u64, full: &Full<'_>) {
        self.block_for(seq).push(full);
        self.len += 1;
    }

    /// Keep the records of `batch`, the first numbered `first_seq`, the
    /// oldest `skip` of them already dropped (after [`Ring::make_room`]);
    /// leaves `batch` empty.
    pub fn take_batch(&mut self, batch: &mut Block, first_seq: u64, skip: usize) {
        let n = batch.records.len();
        // A few records join the last block (copied): blocks of a
        // handful each would hold a recycled block's capacity apiece.
        let back = self
            .blocks
            .back_mut()
            .filter(|b| skip == 0 && n < SMALL_BATCH && b.records.len() + n <= RECORDS_PER_BLOCK);
        let back = back.map(Arc::make_mut);
        if let Some(back) = back {
            debug_assert_eq!(back.first_seq + back.records.len() as u64, first_seq);
            back.extend_from(batch);
            batch.clear();
            self.len += n;
        } else {
            let spare = self.spare.take().unwrap_or_default();
            let mut block = std::mem::replace(batch, spare);
            block.first_seq = first_seq;
            self.append(block, skip);
        }
    }

    /// Append `block`, the oldest `skip` of its records already dropped
    /// (the ring is empty when `skip` > 0).
    fn append(&mut self, block: Block, skip: usize) {
        if skip > 0 {
            debug_assert!(self.blocks.is_empty());
            self.dropped_records = skip;
        }
        self.len += block.records.len() - skip;
        self.blocks.push_back(Arc::new(block));
    }

    /// The block a single record numbered `seq` goes into.
    fn block_for(&mut self, seq: u64) -> &mut Block {
        let fits = self
            .blocks
            .back()
            .is_some_and(|b| b.records.len() < RECORDS_PER_BLOCK);
        if !fits {
            let mut block = self.spare.take().unwrap_or_default();
            block.first_seq = seq;
            self.blocks.push_back(Arc::new(block));
        }
        let block = Arc::make_mut(self.blocks.back_mut().expect("just pushed"));
        debug_assert_eq!(block.first_seq + block.records.len() as u64, seq);
        block
    }
}

/// Received messages noted by [`super::Tracer::defer`], not yet in the
/// history: one block and the counts. The reader keeps one; each commit
/// hands its block to the history and takes back one the history dropped.
#[derive(Default)]
pub struct TraceBatch {
    pub(super) block: Block,
    pub(super) messages: u64,
    pub(super) bytes: u64,
}

/// The most a dropped [`Block`] keeps allocated for its next use (a
/// turn's batch, 32 KiB of lines, fits): one read of huge records (a
/// host's big `history_max_payload`) must not pin that much for the
/// connection's life, nor every block of the ring the most one held.
const KEPT_BLOCK_BYTES: usize = 64 * 1024;
const KEPT_BLOCK_RECORDS: usize = 512;

/// A batch of fewer records joins the last block rather than being one:
/// a block then holds at least this many records, or follows one nearly
/// full, so the room blocks keep (up to `KEPT_BLOCK_BYTES` of text and
/// `KEPT_BLOCK_RECORDS` records each) is about `history / SMALL_BATCH`
/// blocks' worth at most.
pub(super) const SMALL_BATCH: usize = 32;

/// Records a block of single records holds before the next block starts:
/// the front block's dropped records are held until it goes whole.
const RECORDS_PER_BLOCK: usize = 256;
