//! Live session views: the registry the reader folds into, on its side of
//! the ordered stream, and what the host's calls on it do.
//!
//! Zero cost without views: every hook first reads one atomic counter.
//! With a view, its session's `session/update` notifications are folded
//! where the reader classifies them (in wire order) and, unless the view
//! forwards them, never queued for the host one by one. The host learns
//! of changes from one `7, viewId, 0` item, sent when a view turns dirty
//! and not again until the host drains it, so the stream carries at most
//! one such item per view whatever the agent floods. The item sits in
//! the stream where the change happened: when the host sees a response,
//! every update the agent sent before it is already in the view.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

use serde::Deserialize;
use serde_json::Value;

use super::event::Event;
use crate::acp::{methods, session_id_of};
use crate::rpc::RequestId;
use crate::view::{
    parse_bounded, short_enough, Caps, DrainText, Drained, EntryKind, SessionState, UpdateParams,
    ViewOptions, WholeCopy,
};

/// Our requests whose answers a view folds, at most (the oldest is
/// forgotten first: its answer is then not folded).
const MAX_TRACKED_REQUESTS: usize = 4096;

/// Drains a snapshot takes first, at most (far more than any state needs).
const MAX_SNAPSHOT_DRAINS: usize = 1 << 16;

struct View {
    state: SessionState,
    /// Also deliver the session's updates as notification items.
    forward: bool,
    /// A change item is in the stream and the host has not drained since.
    signalled: bool,
    /// Counts the changes, so a session store copies the state only when
    /// it moved (drains do not count: they do not change the state).
    revision: u64,
}

/// View ids are ours (counted from 1), not the agent's: no need to hash
/// them against collisions on every chunk.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u32(&mut self, id: u32) {
        // Spread the bits hashbrown takes its control byte from (the top 7).
        self.0 = u64::from(id).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

#[derive(Default)]
struct Inner {
    next_id: u32,
    by_session: HashMap<Box<str>, u32>,
    views: HashMap<u32, View, BuildHasherDefault<IdHasher>>,
    /// Our requests whose answers a view folds, by id.
    requests: BTreeMap<RequestId, Tracked>,
    /// Agent requests waiting for the host, by token: view.
    waiting: HashMap<u64, u32>,
    /// The session last found in `by_session`, and its view: a stream is
    /// mostly one session's chunks, and comparing is cheaper than hashing.
    last_found: Option<(Box<str>, u32)>,
}

/// One of our requests a view folds the answer of.
struct Tracked {
    method: &'static str,
    view: u32,
    /// `session/set_mode`: the mode asked for (the agent does not echo a
    /// mode the client set; its success is the change).
    mode_id: Option<String>,
}

#[derive(Default)]
pub(super) struct Views {
    open: AtomicUsize,
    inner: Mutex<Inner>,
}

/// [`super::Connection::view_snapshot`]: the drains taken first, then the
/// state.
pub struct ViewSnapshot {
    pub drained: Vec<Drained>,
    /// The state's JSON texts ([`SessionState::snapshot_apart`]).
    pub parts: Vec<String>,
    /// Its message texts, in the order the parts place them.
    pub texts: Vec<DrainText>,
}

/// [`super::Connection::drain_view`] without waiting found the views in
/// use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewBusy;

/// What the reader does with a `session/update` after offering it.
pub(super) struct Folded {
    /// Queue the notification item as usual.
    pub forward: bool,
    /// Queue this change item (before the notification, if any).
    pub signal: Option<Event>,
}

impl Folded {
    /// No view of its session: delivered as usual.
    const NOT_FOLDED: Folded = Folded {
        forward: true,
        signal: None,
    };
}

impl Inner {
    /// The view of `session`, if one is open.
    fn view_of(&mut self, session: &str) -> Option<u32> {
        if let Some((last, id)) = &self.last_found {
            if **last == *session {
                return Some(*id);
            }
        }
        let id = *self.by_session.get(session)?;
        self.last_found = Some((session.into(), id));
        Some(id)
    }

    /// The change item for `view`, if it is the first change since a drain.
    fn signal(&mut self, view: u32) -> Option<Event> {
        let v = self.views.get_mut(&view)?;
        v.revision += 1;
        if v.signalled || !v.state.is_dirty() {
            return None;
        }
        v.signalled = true;
        Some(Event::ViewChanged { view })
    }
}

impl Views {
    /// Is any view open? The one check on every hot path.
    #[inline]
    pub fn any(&self) -> bool {
        self.open.load(Ordering::Relaxed) > 0
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lock if it is free now.
    fn try_lock(&self) -> Option<MutexGuard<'_, Inner>> {
        match self.inner.try_lock() {
            Ok(inner) => Some(inner),
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// The view of `session`, if one is open: its id and whether it
    /// forwards the session's updates too.
    pub fn target(&self, session: &str) -> Option<(u32, bool)> {
        let mut inner = self.lock();
        let id = inner.view_of(session)?;
        Some((id, inner.views.get(&id)?.forward))
    }

    /// Fold plain-text chunks, all of one session, entry kind and message
    /// id, into view `id` (gone: closed since, and they with it), exactly
    /// as one by one: chunk `i` is `text[ends[i - 1]..ends[i]]`. Returns
    /// the change item, if one is due.
    pub fn on_texts(
        &self,
        id: u32,
        kind: EntryKind,
        message_id: Option<&str>,
        text: &str,
        ends: &[usize],
    ) -> Option<Event> {
        let mut inner = self.lock();
        let state = &mut inner.views.get_mut(&id)?.state;
        state.text_chunks(kind, message_id, text, ends);
        inner.signal(id)
    }

    /// A `session/update` notification's params (JSON text).
    pub fn on_update(&self, params: Option<&str>) -> Folded {
        match params.and_then(|p| self.read_params(p)) {
            Some(p) => self.on_params(p),
            None => Folded::NOT_FOLDED,
        }
    }

    /// `session/update` params read for the views: long ones in one pass
    /// when their session's view would parse them whole anyway
    /// ([`UpdateParams::read_with`]).
    pub fn read_params<'a>(&self, params: &'a str) -> Option<UpdateParams<'a>> {
        UpdateParams::read_with(params, |session| self.parses_whole(session, params.len()))
    }

    /// Whether the view of `session` (if one is open) parses an update of
    /// `bytes` whole, its caps being out of reach of what that builds.
    fn parses_whole(&self, session: &str, bytes: usize) -> bool {
        let mut inner = self.lock();
        let Some(id) = inner.view_of(session) else {
            return false;
        };
        (inner.views.get(&id)).is_some_and(|v| short_enough(bytes, Caps::of(&v.state.options)))
    }

    /// A `session/update` notification's params, read.
    pub fn on_params(&self, p: UpdateParams<'_>) -> Folded {
        self.fold(&p.session_id, |state| state.apply_params(p.update))
    }

    /// Fold into the view of `session`, if one is open.
    fn fold(&self, session: &str, apply: impl FnOnce(&mut SessionState)) -> Folded {
        let mut inner = self.lock();
        let Some(id) = inner.view_of(session) else {
            return Folded::NOT_FOLDED;
        };
        let view = inner.views.get_mut(&id).expect("indexed");
        apply(&mut view.state);
        let forward = view.forward;
        Folded {
            forward,
            signal: inner.signal(id),
        }
    }

    /// We are sending request `id`: remember the ones a view folds.
    pub fn on_request(&self, id: RequestId, method: &str, params: Option<&str>) -> Option<Event> {
        let method = match method {
            methods::SESSION_PROMPT => methods::SESSION_PROMPT,
            methods::SESSION_LOAD => methods::SESSION_LOAD,
            methods::SESSION_RESUME => methods::SESSION_RESUME,
            methods::SESSION_SET_MODE => methods::SESSION_SET_MODE,
            methods::SESSION_SET_CONFIG_OPTION => methods::SESSION_SET_CONFIG_OPTION,
            _ => return None,
        };
        let session = session_id_of(params?)?;
        let mut inner = self.lock();
        let view = *inner.by_session.get(&session)?;
        let mode_id = if method == methods::SESSION_SET_MODE {
            Some(mode_id_of(params?)?)
        } else {
            None
        };
        if inner.requests.len() >= MAX_TRACKED_REQUESTS {
            // Ids grow: the first is the oldest. Only that one is
            // forgotten: the prompts still running keep their views right.
            inner.requests.pop_first();
        }
        inner.requests.insert(
            id,
            Tracked {
                method,
                view,
                mode_id,
            },
        );
        if method == methods::SESSION_PROMPT {
            inner.views.get_mut(&view)?.state.prompt_started();
            return inner.signal(view);
        }
        None
    }

    /// The answer to our request `id` (`result` is `None` for an error),
    /// folded where it is in the stream, after the updates sent before it.
    pub fn on_response(&self, id: RequestId, result: Option<&str>) -> Option<Event> {
        let (tracked, caps) = {
            let mut inner = self.lock();
            let tracked = inner.requests.remove(&id)?;
            let caps = Caps::of(inner.views.get(&tracked.view)?.state.options());
            (tracked, caps)
        };
        let Tracked {
            method,
            view,
            mode_id,
        } = tracked;
        // Parsed without the views held (a big `session/load` result).
        let result = result.map(|r| parse_bounded(r, caps));
        let mut inner = self.lock();
        let state = &mut inner.views.get_mut(&view)?.state;
        match (method, result) {
            (methods::SESSION_PROMPT, result) => state.prompt_ended(result.as_ref()),
            (_, None) => {}
            // The client's own changes, which agents do not echo: folded
            // as the update an agent would send, so a UI sees a change.
            (methods::SESSION_SET_MODE, Some(_)) => state.apply_update(serde_json::json!({
                "sessionUpdate": "current_mode_update",
                "currentModeId": mode_id,
            })),
            (methods::SESSION_SET_CONFIG_OPTION, Some(result)) => {
                if let Some(options) = result.get("configOptions").filter(|o| o.is_array()) {
                    state.apply_update(serde_json::json!({
                        "sessionUpdate": "config_option_update",
                        "configOptions": options,
                    }));
                }
            }
            (_, Some(result)) => state.apply_setup(&result),
        }
        inner.signal(view)
    }

    /// An agent request now waits for the host (not served by a built-in).
    pub fn on_agent_request(
        &self,
        token: u64,
        raw_id: &str,
        method: &str,
        params: Option<&str>,
    ) -> Option<Event> {
        let session = session_id_of(params?)?;
        let caps = {
            let inner = self.lock();
            let view = *inner.by_session.get(&session)?;
            Caps::of(inner.views.get(&view)?.state.options())
        };
        // Parsed without the views held; within the view's limits: never
        // a tree of a whole `rawInput` the host's handler also gets.
        let params = params.map_or(Value::Null, |p| parse_bounded(p, caps));
        let id = parse_bounded(raw_id, caps);
        let mut inner = self.lock();
        let view = *inner.by_session.get(&session)?;
        inner
            .views
            .get_mut(&view)?
            .state
            .request_waiting(token.to_string(), id, method, params);
        inner.waiting.insert(token, view);
        inner.signal(view)
    }

    /// The agent request `token` was answered or withdrawn.
    pub fn on_settled(&self, token: u64) -> Option<Event> {
        if !self.any() {
            return None;
        }
        let mut inner = self.lock();
        let view = inner.waiting.remove(&token)?;
        inner
            .views
            .get_mut(&view)?
            .state
            .request_settled(&token.to_string());
        inner.signal(view)
    }
}

/// The `modeId` of `session/set_mode` params.
fn mode_id_of(params: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct P {
        #[serde(rename = "modeId")]
        mode_id: String,
    }
    serde_json::from_str::<P>(params).ok().map(|p| p.mode_id)
}

/// How long a snapshot part is, about: big enough that a part is not a
/// call per entry, far below V8's string cap.
const SNAPSHOT_PART_BYTES: usize = 1 << 20;

impl Views {
    /// Open a live view of `session_id` (or return the one already open):
    /// from now on its `session/update`s are folded in the core, and
    /// delivered one by one as well only with `forward`. Open it before
    /// `session/load`/`session/resume` to fold their replay.
    pub fn open(&self, session_id: &str, options: ViewOptions, forward: bool) -> u32 {
        let mut inner = self.lock();
        if let Some(&id) = inner.by_session.get(session_id) {
            if let Some(view) = inner.views.get_mut(&id) {
                view.forward = forward;
            }
            return id;
        }
        inner.next_id = inner.next_id.wrapping_add(1);
        let id = inner.next_id;
        inner.by_session.insert(session_id.into(), id);
        inner.views.insert(
            id,
            View {
                state: SessionState::new(session_id, options),
                forward,
                signalled: false,
                revision: 0,
            },
        );
        self.open.fetch_add(1, Ordering::Relaxed);
        id
    }

    /// Fold a `session/new|load|resume` result (modes, config options)
    /// into view `id`; false if the view or the JSON is not valid.
    pub fn seed(&self, id: u32, result: &str) -> bool {
        if serde_json::from_str::<serde::de::IgnoredAny>(result).is_err() {
            return false;
        }
        let mut inner = self.lock();
        match inner.views.get_mut(&id) {
            Some(view) => {
                let result = parse_bounded(result, Caps::of(view.state.options()));
                view.state.apply_setup(&result);
                view.revision += 1;
                true
            }
            None => false,
        }
    }

    /// The whole state of view `id` as JSON texts, entries and tool calls
    /// by about 1 MiB, its message texts apart
    /// ([`SessionState::snapshot_apart`]: shared, never escaped), after
    /// draining what changed (as [`Views::drain`], `max_text` at
    /// a time) in the same hold of the views: the snapshot holds exactly
    /// the changes drained so far, which its `$seq` numbers, so a copy of
    /// it stays exact under the later ones. The host emits the drains
    /// first. Its long strings are escaped after the views are let go
    /// ([`SessionState::snapshot_holed`]): the reader folds meanwhile.
    pub fn snapshot(&self, id: u32, max_text: usize) -> Option<ViewSnapshot> {
        let (drained, parts, texts) = {
            let mut inner = self.lock();
            let view = inner.views.get_mut(&id)?;
            view.signalled = false;
            // Ends: each drain takes text or whole entries out of a finite
            // state. The cap only guards the host against a bug looping here.
            let drained = std::iter::from_fn(|| view.state.drain_parts(max_text))
                .take(MAX_SNAPSHOT_DRAINS)
                .collect();
            let (parts, texts) = view.state.snapshot_holed(SNAPSHOT_PART_BYTES);
            (drained, parts, texts)
        };
        Some(ViewSnapshot {
            drained,
            parts: parts.into_iter().map(WholeCopy::into_json).collect(),
            texts,
        })
    }

    /// What changed in view `id` since the last drain, at most about
    /// `max_text` bytes of message text, the texts apart from the JSON
    /// ([`SessionState::drain_parts`]); `Ok(None)` when nothing did. The
    /// next change sends a new change item, unless this drain was cut
    /// (the host drains again). Unless `wait`, a reader busy
    /// folding into the views is not waited for: `Err(ViewBusy)`, try
    /// again later (the host's event loop is not held up by a reader
    /// thread the OS paused while it held the views).
    pub fn drain(&self, id: u32, max_text: usize, wait: bool) -> Result<Option<Drained>, ViewBusy> {
        let mut inner = if wait {
            self.lock()
        } else {
            self.try_lock().ok_or(ViewBusy)?
        };
        let Some(view) = inner.views.get_mut(&id) else {
            return Ok(None);
        };
        let drained = view.state.drain_parts(max_text);
        // Cut by the budget: the host is told (`$more`) and drains again
        // at once, so a change meanwhile needs no change item (it would
        // only wake the host's loop again during a flood).
        view.signalled = drained.as_ref().is_some_and(|d| d.more);
        Ok(drained)
    }

    /// Fold a stored view (JSON text) into view `id` after what it holds,
    /// skipping entries it already has ([`SessionState::restore`]); with
    /// `interrupted`, a notice marks the stored last turn as cut. Returns
    /// how many entries were restored; `None` if the view is gone or the
    /// JSON not valid.
    pub fn restore(&self, id: u32, stored: &str, interrupted: Option<&str>) -> Option<usize> {
        let stored = serde_json::from_str::<Value>(stored).ok()?;
        let mut inner = self.lock();
        let view = inner.views.get_mut(&id)?;
        let restored = view.state.restore(&stored, interrupted);
        // No change item: the host called this, and drains after it.
        view.revision += 1;
        Some(restored)
    }

    /// The whole state of view `id` as one JSON text, with its revision,
    /// unless it is still at revision `since` (or the view is gone).
    /// Leaves the host's drains alone: a session store's copy. The views
    /// are held while the copy takes its parts, not while its texts are
    /// escaped ([`crate::view::WholeCopy`]): the reader folds meanwhile.
    pub fn json_since(&self, id: u32, since: u64) -> Option<(u64, String)> {
        let (revision, copy) = {
            let mut inner = self.lock();
            let view = inner.views.get_mut(&id)?;
            if view.revision == since {
                return None;
            }
            (view.revision, view.state.whole_copy())
        };
        Some((revision, copy.into_json()))
    }

    /// Close view `id`: its session's updates are delivered one by one
    /// again. False if it was not open.
    pub fn close(&self, id: u32) -> bool {
        let mut inner = self.lock();
        let Some(view) = inner.views.remove(&id) else {
            return false;
        };
        inner.by_session.remove(view.state.session_id());
        inner.last_found = None;
        inner.requests.retain(|_, t| t.view != id);
        inner.waiting.retain(|_, v| *v != id);
        self.open.fetch_sub(1, Ordering::Relaxed);
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU8, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    use super::Views;
    use crate::view::{ParamsUpdate, UpdateParams, ViewOptions};

    fn chunk(text: &str) -> String {
        serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}).to_string()
    }

    /// A store's copy of view `id` from revision 0, with the reader's fold
    /// of another chunk run while the copy escapes its first text, and
    /// what came of it: 0, the copy escaped nothing after the lock; 1, the
    /// fold waited for the copy; 2, the fold finished meanwhile.
    fn copy_folding_meanwhile(views: &Arc<Views>, id: u32) -> ((u64, String), u8) {
        folding_meanwhile(views, || views.json_since(id, 0).expect("changed since 0"))
    }

    /// What `take` returns, with the reader's fold of another chunk run
    /// while `take` escapes its first text (see [`copy_folding_meanwhile`]).
    fn folding_meanwhile<T>(views: &Arc<Views>, take: impl FnOnce() -> T) -> (T, u8) {
        let seen = Arc::new(AtomicU8::new(0));
        let hook = {
            let (views, seen) = (Arc::clone(views), Arc::clone(&seen));
            move || {
                let (done, folded) = mpsc::channel();
                // The reader's fold, on its own thread (not joined: it
                // would wait forever for views held by this one).
                std::thread::spawn(move || {
                    views.on_update(Some(&chunk("meanwhile")));
                    let _ = done.send(());
                });
                let ok = folded.recv_timeout(Duration::from_secs(10)).is_ok();
                seen.store(if ok { 2 } else { 1 }, Ordering::SeqCst);
            }
        };
        crate::view::copy::ESCAPING_TEXT.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
        let taken = take();
        crate::view::copy::ESCAPING_TEXT.with(|h| h.borrow_mut().take());
        (taken, seen.load(Ordering::SeqCst))
    }

    /// A session store's copy of a big view does not hold up the reader:
    /// while the copy's texts are being escaped, an update is folded.
    #[test]
    fn the_reader_folds_while_a_copy_escapes_its_texts() {
        let views = Arc::new(Views::default());
        let id = views.open("s", ViewOptions::default(), false);
        // A host drains, so the text is a shared segment; more grows after.
        views.on_update(Some(&chunk(&"\u{1}".repeat(1 << 20))));
        while views.drain(id, 1 << 20, true).unwrap().is_some() {}
        views.on_update(Some(&chunk("growing")));

        let ((revision, copy), seen) = copy_folding_meanwhile(&views, id);
        assert_eq!(
            seen, 2,
            "the fold finished while the copy was escaping its text (1: it waited for the copy)"
        );
        // The copy is the state when it was taken; the view moved on.
        assert!(copy.contains("growing") && !copy.contains("meanwhile"));
        let (later, now) = views.json_since(id, revision).expect("folded since");
        assert!(later > revision && now.contains("growingmeanwhile"));
    }

    /// The same for the other long strings a view holds: a tool call's
    /// output of control characters (six bytes each, escaped) is escaped
    /// after the views are let go, as message text is.
    #[test]
    fn the_reader_folds_while_a_copy_escapes_a_tool_calls_output() {
        let views = Arc::new(Views::default());
        let id = views.open("s", ViewOptions::default(), false);
        let output = "\u{1}".repeat(1 << 20);
        let update = serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Run", "rawOutput": {"stdout": output}}});
        views.on_update(Some(&update.to_string()));
        let ((_, copy), seen) = copy_folding_meanwhile(&views, id);
        assert_eq!(
            seen, 2,
            "the output was escaped after the views were let go (0: under them)"
        );
        assert!(copy.contains(r#""stdout":"\u0001\u0001"#) && !copy.contains("meanwhile"));
    }

    /// A host's snapshot() too: a tool call's output and an image are
    /// escaped into the snapshot's JSON after the views are let go.
    #[test]
    fn the_reader_folds_while_a_snapshot_escapes_a_tool_calls_output() {
        let views = Arc::new(Views::default());
        let id = views.open("s", ViewOptions::default(), false);
        let output = "\u{1}".repeat(1 << 20);
        let updates = [
            serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Run", "rawOutput": {"stdout": output}}}),
            serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "user_message_chunk", "content": {"type": "image", "mimeType": "image/png", "data": "iVBO".repeat(1 << 16)}}}),
        ];
        for update in updates {
            views.on_update(Some(&update.to_string()));
        }
        let (snapshot, seen) =
            folding_meanwhile(&views, || views.snapshot(id, 1 << 20).expect("open"));
        assert_eq!(
            seen, 2,
            "the output was escaped after the views were let go (1: under them)"
        );
        let json = snapshot.parts.concat();
        assert!(json.contains(r#""stdout":"\u0001\u0001"#) && json.contains("iVBOiVBO"));
        assert!(!json.contains("meanwhile"), "the state when it was taken");
        let next = views.snapshot(id, 1 << 20).expect("open");
        assert!(next.texts.iter().any(|t| t.as_str().contains("meanwhile")));
    }

    /// Update params longer than what is parsed before a view is known (a
    /// 192 KB image, 100 KB of tool output) are read in one pass when their
    /// view parses them whole anyway, and end in the state the two passes
    /// (skip over the update to find it, then parse it) gave.
    #[test]
    fn long_updates_of_a_viewed_session_are_read_in_one_pass_into_the_same_state() {
        let output = "\u{1b}[32mok\u{1b}[0m test\n".repeat(6000);
        let updates = [
            serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "mimeType": "image/png", "data": "iVBO".repeat(48 * 1024)}}}),
            serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Run", "status": "pending"}}),
            serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": output}}]}}),
        ]
        .map(|u| u.to_string());
        let (one, two) = (Views::default(), Views::default());
        let ids = [&one, &two].map(|v| v.open("s", ViewOptions::default(), false));
        for params in &updates {
            let read = one.read_params(params).expect("update params");
            if params.len() > 64 * 1024 {
                assert!(
                    matches!(read.update, ParamsUpdate::Parsed { .. }),
                    "{} bytes read whole, in one pass",
                    params.len()
                );
            }
            one.on_params(read);
            two.on_params(UpdateParams::read(params).expect("update params"));
        }
        let state = |v: &Views, id| v.json_since(id, 0).expect("changed").1;
        assert_eq!(state(&one, ids[0]), state(&two, ids[1]));
        assert!(state(&one, ids[0]).contains("completed"));

        // As before (the update found, then read within the view's caps):
        // no view of the session, a view whose caps the update could
        // outgrow, params that do not start with their session id.
        let image = &updates[0];
        let raw = |v: &Views, params: &str| {
            matches!(
                v.read_params(params).expect("update params").update,
                ParamsUpdate::Raw(_)
            )
        };
        assert!(raw(
            &one,
            &image.replace(r#""sessionId":"s""#, r#""sessionId":"other""#)
        ));
        let tight = Views::default();
        tight.open(
            "s",
            ViewOptions {
                max_total_bytes: 1 << 20,
                ..ViewOptions::default()
            },
            false,
        );
        assert!(raw(&tight, image));
        let update: serde_json::Value = serde_json::from_str(image).expect("JSON");
        let reordered = format!(r#"{{"update":{},"sessionId":"s"}}"#, update["update"]);
        assert!(raw(&one, &reordered));
    }
}
