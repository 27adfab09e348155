//! Reading the store: list, search, get, export. Reads go through their
//! own connection, which WAL lets read while the writer (of this process
//! or another) writes.

use rusqlite::{params, Connection, Row};
use serde_json::{json, Map, Value};

use super::error::StoreError;
use super::transcript::fts_query;
use super::views;
use super::writer::Store;

/// What `list` returns at most, whatever is asked.
pub const MAX_LIST: u32 = 10_000;

#[derive(Debug, Clone, Copy)]
pub struct ListOptions {
    /// Most recently updated first; at most this many (≤ [`MAX_LIST`]).
    pub limit: u32,
    pub offset: u32,
}

impl Default for ListOptions {
    fn default() -> Self {
        Self {
            limit: 100,
            offset: 0,
        }
    }
}

/// A stored session without its view and journal.
pub type SessionSummary = Map<String, Value>;

const SUMMARY: &str = "s.id, s.agent, s.agent_session_id, s.cwd, s.title, s.created_at,
  s.updated_at, s.state, s.forked_from, s.bytes, s.capabilities";

fn summary(r: &Row<'_>) -> rusqlite::Result<SessionSummary> {
    let json_of = |s: Option<String>| {
        s.and_then(|s| serde_json::from_str::<Value>(&s).ok())
            .unwrap_or(Value::Null)
    };
    let mut m = Map::new();
    m.insert("id".into(), json!(r.get::<_, String>(0)?));
    m.insert("agent".into(), json_of(r.get(1)?));
    m.insert(
        "agentSessionId".into(),
        json!(r.get::<_, Option<String>>(2)?),
    );
    m.insert("cwd".into(), json!(r.get::<_, Option<String>>(3)?));
    m.insert("title".into(), json!(r.get::<_, Option<String>>(4)?));
    m.insert("createdAt".into(), json!(r.get::<_, i64>(5)?));
    m.insert("updatedAt".into(), json!(r.get::<_, i64>(6)?));
    m.insert("state".into(), json!(r.get::<_, String>(7)?));
    m.insert("forkedFrom".into(), json!(r.get::<_, Option<String>>(8)?));
    m.insert("bytes".into(), json!(r.get::<_, i64>(9)?));
    m.insert("capabilities".into(), json_of(r.get(10)?));
    Ok(m)
}

impl Store {
    fn read<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let db = self.reader.lock().unwrap_or_else(|e| e.into_inner());
        let db = db.as_ref().ok_or(StoreError::Closed)?;
        f(db).map_err(|e| StoreError::sqlite(&self.path, e))
    }

    /// Stored sessions, most recently updated first.
    pub fn list(&self, options: ListOptions) -> Result<Vec<SessionSummary>, StoreError> {
        self.read(|db| {
            let mut stmt = db.prepare_cached(&format!(
                "SELECT {SUMMARY} FROM sessions s ORDER BY s.updated_at DESC, s.n DESC
                 LIMIT ?1 OFFSET ?2"
            ))?;
            let rows = stmt.query_map(
                params![options.limit.min(MAX_LIST), options.offset],
                summary,
            )?;
            rows.collect()
        })
    }

    /// Sessions whose title, prompts or messages hold every word of
    /// `text`, best match first, each with a `snippet` around a match
    /// (the match between `[` and `]`).
    pub fn search(&self, text: &str, limit: u32) -> Result<Vec<SessionSummary>, StoreError> {
        let Some(query) = fts_query(text) else {
            return Ok(Vec::new());
        };
        self.read(|db| {
            let mut stmt = db.prepare_cached(&format!(
                "SELECT {SUMMARY}, snippet(transcript, 0, '[', ']', '…', 12)
                 FROM transcript JOIN sessions s ON s.n = transcript.rowid
                 WHERE transcript MATCH ?1 ORDER BY rank LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![query, limit.min(MAX_LIST)], |r| {
                let mut m = summary(r)?;
                // One line: the transcript's parts are lines.
                let snippet = r.get::<_, String>(11)?.replace('\n', " ");
                m.insert("snippet".into(), json!(snippet));
                Ok(m)
            })?;
            rows.collect()
        })
    }

    /// One stored session with its view (and its journal if asked), as
    /// JSON text.
    pub fn get(&self, id: &str, with_journal: bool) -> Result<String, StoreError> {
        let found = self.read(|db| {
            let mut stmt = db.prepare_cached(&format!(
                "SELECT {SUMMARY}, s.n, s.view_revision FROM sessions s WHERE s.id = ?1"
            ))?;
            let mut rows = stmt.query([id])?;
            let Some(r) = rows.next()? else {
                return Ok(None);
            };
            let mut m = summary(r)?;
            let n = r.get::<_, i64>(11)?;
            m.insert("viewRevision".into(), json!(r.get::<_, i64>(12)?));
            drop(rows);
            let view = views::get(db, n)?.and_then(|v| serde_json::from_str::<Value>(&v).ok());
            m.insert("view".into(), view.unwrap_or(Value::Null));
            if with_journal {
                let mut stmt = db.prepare_cached(
                    "SELECT seq, at, kind, data FROM journal WHERE session_id = ?1 ORDER BY seq",
                )?;
                let rows = stmt.query_map([id], |r| {
                    let data = serde_json::from_str::<Value>(&r.get::<_, String>(3)?)
                        .unwrap_or(Value::Null);
                    Ok(json!({
                        "seq": r.get::<_, i64>(0)?,
                        "at": r.get::<_, i64>(1)?,
                        "kind": r.get::<_, String>(2)?,
                        "data": data,
                    }))
                })?;
                m.insert(
                    "journal".into(),
                    Value::Array(rows.collect::<Result<_, _>>()?),
                );
            }
            Ok(Some(m))
        })?;
        let m = found.ok_or_else(|| StoreError::NotFound(id.to_string()))?;
        Ok(Value::Object(m).to_string())
    }

    /// How many sessions are stored.
    pub fn count(&self) -> Result<u64, StoreError> {
        self.read(|db| db.query_row("SELECT count(*) FROM sessions", [], |r| r.get::<_, i64>(0)))
            .map(|n| n as u64)
    }
}
