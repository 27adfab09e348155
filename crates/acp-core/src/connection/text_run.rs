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

use super::event::Event;
use super::shared::Shared;
use super::trace::{Kind, TraceBatch, WireMeta};
use crate::view::{EntryKind, Shape, TextLine};

/// A chunk's text longer than this is folded at once, not copied aside.
const COPY_MAX_BYTES: usize = 16 * 1024;
/// The most pending-text capacity kept between reads (more than a worker
/// slice's worth: a read's chunks fit without growing it again).
const KEPT_TEXT_BYTES: usize = 64 * 1024;

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
            let meta = WireMeta::received(at, Kind::Notification, Some(chunk.method()), None);
            shared.trace_received(meta, text, out);
        }
        if !shared.views.any() {
            // Nothing to fold into. No fold is kept either: a view opened
            // meanwhile gets the next chunk, as on the general path.
            self.fold_pending(shared, out);
            self.fold = None;
            out.push(Event::notification(
                text,
                ascii,
                chunk.method(),
                Some(chunk.params()),
            ));
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
            out.push(Event::notification(
                text,
                ascii,
                chunk.method(),
                Some(chunk.params()),
            ));
        }
    }

    /// Put everything taken into the history and the views; queue the
    /// change item, if one is due. Before any other line, and after each
    /// read.
    pub fn flush(&mut self, shared: &Shared, out: &mut Vec<Event>) {
        shared.wire.tracer.commit(&mut self.trace);
        self.fold_pending(shared, out);
        self.fold = None;
    }

    fn fold_pending(&mut self, shared: &Shared, out: &mut Vec<Event>) {
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
