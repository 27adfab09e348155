//! Session views on the binding side: open, seed, snapshot, drain, close
//! (all state and folding live in `acp_core::view`), and the offline fold
//! of a recording.

use acp_core::view::{
    fold_recording as core_fold_recording, Drained, ViewOptions as CoreViewOptions,
};
use napi_derive::napi;

use crate::connection::AgentConnection;
use crate::sink::JsText;

/// Limits of one session view (see `acp_core::view`); absent = default.
#[napi(object)]
#[derive(Default)]
pub struct ViewLimits {
    /// Entries kept (default 50,000); the oldest go first.
    pub max_entries: Option<u32>,
    /// Text bytes per entry (default 4 MiB); a chunk that does not fit is dropped and counted.
    pub max_text_bytes: Option<u32>,
    /// Content blocks per entry (default 1024).
    pub max_blocks: Option<u32>,
    /// Keys per merged object (default 256).
    pub max_keys: Option<u32>,
    /// Bytes of all entries together (default 64 MiB); the oldest go first.
    pub max_total_bytes: Option<u32>,
}

fn core_options(limits: Option<ViewLimits>) -> CoreViewOptions {
    {
        let l = limits.unwrap_or_default();
        let d = CoreViewOptions::default();
        let pick = |v: Option<u32>, def: usize| v.map_or(def, |v| v as usize);
        CoreViewOptions {
            max_entries: pick(l.max_entries, d.max_entries),
            max_text_bytes: pick(l.max_text_bytes, d.max_text_bytes),
            max_blocks: pick(l.max_blocks, d.max_blocks),
            max_keys: pick(l.max_keys, d.max_keys),
            max_total_bytes: pick(l.max_total_bytes, d.max_total_bytes),
        }
    }
}

#[napi]
impl AgentConnection {
    /// Open (or find) the live view of a session; returns its id.
    #[napi]
    pub fn open_view(&self, session_id: String, limits: Option<ViewLimits>, forward: bool) -> u32 {
        self.conn
            .open_view(&session_id, core_options(limits), forward)
    }

    /// Fold a `session/new|load|resume` result (JSON text) into a view.
    #[napi]
    pub fn seed_view(&self, id: u32, result: String) -> bool {
        self.conn.seed_view(id, &result)
    }

    /// The view's whole state as JSON texts, so that none outgrows a JS
    /// string: `[head, plan, modes, config, commands, info, usage, pending,
    /// ...entry parts, ...tool call parts, ...compaction parts]` (about
    /// 1 MiB each; `$parts` in the head says how many of the last three;
    /// `joinSnapshot` in lib/session-view.js puts them together), then
    /// the message texts apart (placed by each entry's `$texts`: never
    /// escaped, long ones shared with the view), last in the answer;
    /// before them, each drain of what had changed (as `drainView` gives
    /// them, `maxText` at a time), taken in the same hold: the host emits
    /// them, then hands out the snapshot.
    #[napi(ts_return_type = "string[][] | null")]
    pub fn view_snapshot(&self, id: u32, max_text: u32) -> Option<Vec<Vec<JsText>>> {
        let snapshot = self.conn.view_snapshot(id, max_text as usize)?;
        let mut out: Vec<Vec<JsText>> = snapshot.drained.into_iter().map(drain_texts).collect();
        out.push(snapshot.parts.into_iter().map(JsText::new).collect());
        out.push(snapshot.texts.into_iter().map(JsText::kept).collect());
        Some(out)
    }

    /// What changed since the last drain, or null: `[json, ...texts]`,
    /// the change description (JSON text) and, apart so that JS need not
    /// parse them, the texts it carries (at most about `maxText` bytes;
    /// `$more` in the JSON says text is left for the next drain). Unless
    /// `wait`, `[]` when the reader is folding into the views right now
    /// (try again later rather than hold up the event loop).
    #[napi(ts_return_type = "string[] | null")]
    pub fn drain_view(&self, id: u32, max_text: u32, wait: bool) -> Option<Vec<JsText>> {
        let Ok(drained) = self.conn.drain_view(id, max_text as usize, wait) else {
            return Some(Vec::new());
        };
        Some(drain_texts(drained?))
    }

    /// Fold a stored view (JSON text) into a view after what it holds,
    /// skipping the entries it already has; `interrupted`: why the stored
    /// last turn was cut (a notice says so). How many entries were
    /// restored, or null (no such view, or not JSON).
    #[napi]
    pub fn restore_view(
        &self,
        id: u32,
        stored: String,
        interrupted: Option<String>,
    ) -> Option<u32> {
        self.conn
            .restore_view(id, &stored, interrupted.as_deref())
            .map(|n| n as u32)
    }

    #[napi]
    pub fn close_view(&self, id: u32) -> bool {
        crate::trim::soon();
        self.conn.close_view(id)
    }
}

/// A drain for JS: its JSON, then the texts it carries (kept by JS).
fn drain_texts(drained: Drained) -> Vec<JsText> {
    let mut parts = Vec::with_capacity(1 + drained.texts.len());
    parts.push(JsText::new(drained.json));
    parts.extend(drained.texts.into_iter().map(JsText::kept));
    parts
}

/// Fold a recording (NDJSON trace records) into `{sessions: {id: state}}`
/// (JSON text), by the rules of a live view.
#[napi]
pub fn fold_recording(text: String, limits: Option<ViewLimits>) -> String {
    core_fold_recording(&text, core_options(limits))
}
