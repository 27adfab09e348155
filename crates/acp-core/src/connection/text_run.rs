//! The plain-text chunk lines of one read, handled together: a streaming
//! agent sends them by the hundred per read, and per line the locks and
//! lookups would cost more than the work. Their trace records go into
//! the history under one lock, and consecutive chunks of one message fold
//! into its view under one lock, each chunk still folded on its own.
//!
//! What keeps the order: the reader flushes the run before it handles any
//! other line and at the end of every read, so a response or a request is
//! traced and folded after every chunk the agent sent before it. Only
//! text chunks wait here, and handling them never sends anything.

use std::time::Instant;

use super::event::{push_notification, Event};
use super::shared::Shared;
use super::trace::{Kind, TraceBatch, WireMeta};
use crate::view::{EntryKind, Shape, TextLine};

/// A chunk's text longer than this is folded at once, not copied aside.
const COPY_MAX_BYTES: usize = 16 * 1024;
/// The most pending-text capacity kept between reads (more than a worker
/// slice's worth: a read's chunks fit without growing it again).
const KEPT_TEXT_BYTES: usize = 64 * 1024;
/// Forwarded items grouped into one event hold this many bytes at most
/// (a bigger item goes alone, built in place): a group is counted against
/// the queue budget as a whole.
const GROUP_MAX_BYTES: usize = 64 * 1024;

#[derive(Default)]
pub(super) struct TextRun {
    /// The line scanner's memory of the last line's shape.
    pub shape: Shape,
    trace: TraceBatch,
    fold: Option<PendingFold>,
    /// The pending chunks' texts, back to back; chunk `i` ends at
    /// `ends[i]` (kept across reads: no allocation per read).
    text: String,
    ends: Vec<usize>,
    /// Forwarded notification items not yet queued, back to back: queued
    /// as one event (see [`Event::notifications`]) before anything else
    /// is, so the stream's order is the wire's.
    items: String,
    items_ascii: bool,
    item_count: u32,
    /// Items a group holds at most: a batch's (`batchMaxMessages`).
    max_items: u32,
}

/// Whose chunks wait in [`TextRun::text`]: one message of one session.
struct PendingFold {
    session: String,
    kind: EntryKind,
    message_id: Option<String>,
    /// The session's view and whether it forwards; `None`: it has none.
    view: Option<(u32, bool)>,
    /// The shape number of the line it started with (see
    /// [`TextLine::shape`]).
    shape: Option<u64>,
}

impl PendingFold {
    fn continues(&self, line: &TextLine<'_>) -> bool {
        // The same shape: the same session, kind and message (a flood's
        // lines, compared without reading their ids).
        (line.shape.is_some() && line.shape == self.shape)
            || (self.kind == line.kind
                && self.session == line.session_id()
                && self.message_id.as_deref() == line.message_id())
    }
}

impl TextRun {
    /// `max_items`: the most items a batch holds.
    pub fn new(max_items: usize) -> Self {
        Self {
            max_items: max_items.clamp(1, u32::MAX as usize) as u32,
            ..Default::default()
        }
    }

    /// Take a text chunk line (`text`: the whole line, read at `at`):
    /// queue its trace record and its text, and its notification item if
    /// it is to be delivered.
    pub fn take(
        &mut self,
        shared: &Shared,
        chunk: &TextLine<'_>,
        text: &str,
        ascii: bool,
        at: Instant,
        out: &mut Vec<Event>,
    ) {
        if !shared
            .wire
            .tracer
            .defer(&mut self.trace, at, text, chunk.raw, chunk.shape)
        {
            // A live trace: its item goes before this line's.
            self.queue_items(out);
            let meta = WireMeta::received(at, Kind::Notification, Some(chunk.method()), None);
            shared.trace_received(meta, text, out);
        }
        if !shared.views.any() {
            // Nothing to fold into. No fold is kept either: a view opened
            // meanwhile gets the next chunk, as on the general path.
            if self.fold.is_some() {
                self.fold_pending(shared, out);
                self.fold = None;
            }
            self.forward(chunk, text, ascii, out);
            return;
        }
        if !self.fold.as_ref().is_some_and(|f| f.continues(chunk)) {
            self.fold_pending(shared, out);
            self.fold = Some(PendingFold {
                session: chunk.session_id().to_string(),
                kind: chunk.kind,
                message_id: chunk.message_id().map(str::to_owned),
                view: shared.views.target(chunk.session_id()),
                shape: chunk.shape,
            });
        }
        let forward = match self.fold.as_ref().and_then(|f| f.view) {
            Some((view, forward)) if chunk.text.len() > COPY_MAX_BYTES => {
                // Folded from the line itself: a copy would hold a big
                // line (up to `maxLineBytes`) twice.
                self.fold_pending(shared, out);
                out.extend(shared.views.on_texts(
                    view,
                    chunk.kind,
                    chunk.message_id(),
                    &chunk.text,
                    &[chunk.text.len()],
                ));
                forward
            }
            Some((_, forward)) => {
                self.text.push_str(&chunk.text);
                self.ends.push(self.text.len());
                forward
            }
            None => true,
        };
        if forward {
            self.forward(chunk, text, ascii, out);
        }
    }

    /// Add the notification item of `chunk` (in line `text`) to the group.
    fn forward(&mut self, chunk: &TextLine<'_>, text: &str, ascii: bool, out: &mut Vec<Event>) {
        let params = chunk.params();
        let method = chunk.method();
        if params.len() + method.len() + 8 > GROUP_MAX_BYTES {
            // Alone, built in place: no copy of a big item through the group.
            self.queue_items(out);
            out.push(Event::notification(text, ascii, method, Some(params)));
            return;
        }
        if self.item_count > 0
            && (self.items.len() + params.len() + 4 > GROUP_MAX_BYTES
                || self.item_count >= self.max_items)
        {
            self.queue_items(out);
        }
        if self.item_count == 0 {
            self.items_ascii = true;
        } else {
            self.items.push(',');
        }
        self.items_ascii &= push_notification(&mut self.items, text, ascii, method, Some(params));
        self.item_count += 1;
    }

    /// Queue the grouped items as one event. Before anything else goes
    /// into `out`, and at the end of each read.
    fn queue_items(&mut self, out: &mut Vec<Event>) {
        if self.item_count == 0 {
            return;
        }
        // An exact copy: the group is budgeted by its length, and a kept
        // buffer's spare capacity is not (the buffer stays for the next).
        out.push(Event::notifications(
            self.items.as_str().to_owned(),
            self.items_ascii,
            self.item_count,
        ));
        self.items.clear();
        self.item_count = 0;
        if self.items.capacity() > KEPT_TEXT_BYTES {
            self.items = String::new();
        }
    }

    /// Put everything taken into the history and the views; queue the
    /// change item, if one is due. Before any other line, and after each
    /// read.
    pub fn flush(&mut self, shared: &Shared, out: &mut Vec<Event>) {
        shared.wire.tracer.commit(&mut self.trace);
        self.queue_items(out);
        self.fold_pending(shared, out);
        self.fold = None;
    }

    fn fold_pending(&mut self, shared: &Shared, out: &mut Vec<Event>) {
        // The chunks forwarded so far go before the view's change item.
        self.queue_items(out);
        let Some(PendingFold {
            kind,
            message_id,
            view: Some((view, _)),
            ..
        }) = &self.fold
        else {
            return;
        };
        if !self.ends.is_empty() {
            out.extend(shared.views.on_texts(
                *view,
                *kind,
                message_id.as_deref(),
                &self.text,
                &self.ends,
            ));
        }
        self.text.clear();
        self.ends.clear();
        if self.text.capacity() > KEPT_TEXT_BYTES {
            self.text = String::new();
        }
    }
}
