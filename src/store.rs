//! The session store on the binding side: a handle on an
//! `acp_core::store::Store`, its queries run off the JS thread (libuv's
//! pool), its writes handed to the store's writer thread.
//!
//! Queries settle with JSON text, `{"ok": value}` or `{"error": {code,
//! message}}`, so a typed store error reaches JS with its code intact.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use acp_core::store::{
    FeedPoll, JournalKind, ListOptions, NewSession, Retention, SessionPatch, Store, StoreError,
    StoreOptions,
};
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;
use serde_json::{json, Value};

use crate::connection::AgentConnection;
use crate::errors::{AcpStatus, Result};

/// How a store is opened; absent = the defaults of docs/sessions-store.md.
#[napi(object)]
#[derive(Default)]
pub struct StoreOpenOptions {
    pub max_sessions: Option<f64>,
    pub max_bytes: Option<f64>,
    pub max_age_ms: Option<f64>,
    /// How often live views are copied at most (ms).
    pub interval_ms: Option<f64>,
}

fn store_options(o: StoreOpenOptions) -> StoreOptions {
    let d = StoreOptions::default();
    // 0 or less: unbounded.
    let bound = |v: Option<f64>, def: Option<u64>| match v {
        None => def,
        Some(v) if v > 0.0 => Some(v as u64),
        Some(_) => None,
    };
    StoreOptions {
        retention: Retention {
            max_sessions: bound(o.max_sessions, d.retention.max_sessions),
            max_bytes: bound(o.max_bytes, d.retention.max_bytes),
            max_age_ms: bound(o.max_age_ms, d.retention.max_age_ms),
        },
        interval: o
            .interval_ms
            .filter(|v| v.is_finite() && *v >= 1.0)
            .map_or(d.interval, |v| Duration::from_millis(v as u64)),
    }
}

fn store_error(e: StoreError) -> napi::Error<AcpStatus> {
    napi::Error::new(AcpStatus::Store(e.code()), e.to_string())
}

fn invalid(message: &str) -> napi::Error<AcpStatus> {
    napi::Error::new(AcpStatus::InvalidArgument, message.to_string())
}

fn settled(result: std::result::Result<Value, StoreError>) -> String {
    match result {
        Ok(v) => json!({ "ok": v }).to_string(),
        Err(e) => json!({"error": {"code": e.code(), "message": e.to_string()}}).to_string(),
    }
}

/// A handle on an open store. Use `SessionStore` from the package.
#[napi]
pub struct NativeStore {
    store: Arc<Store>,
}

pub struct OpenTask {
    dir: PathBuf,
    options: Option<StoreOptions>,
}

impl Task for OpenTask {
    type Output = std::result::Result<Arc<Store>, StoreError>;
    type JsValue = napi::Either<NativeStore, String>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let options = self.options.take().unwrap_or_default();
        Ok(Store::open(&self.dir, options).map(Arc::new))
    }

    fn resolve(&mut self, _: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(store) => napi::Either::A(NativeStore { store }),
            Err(e) => napi::Either::B(settled(Err(e))),
        })
    }
}

/// Open the store in `dir`: resolves to the handle, or to the JSON text of
/// a typed error.
#[napi(ts_return_type = "Promise<NativeStore | string>")]
pub fn open_store(dir: String, options: Option<StoreOpenOptions>) -> AsyncTask<OpenTask> {
    AsyncTask::new(OpenTask {
        dir: dir.into(),
        options: Some(store_options(options.unwrap_or_default())),
    })
}

enum Query {
    Flush,
    Close,
    List(ListOptions),
    Search(String, u32),
    Get(String, bool),
}

pub struct QueryTask {
    store: Arc<Store>,
    query: Query,
}

impl Task for QueryTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        let s = &self.store;
        let result = match &self.query {
            Query::Flush => s.flush().map(|()| Value::Null),
            Query::Close => s.close().map(|()| Value::Null),
            Query::List(o) => s
                .list(*o)
                .map(|v| Value::Array(v.into_iter().map(Value::Object).collect())),
            Query::Search(text, limit) => s
                .search(text, *limit)
                .map(|v| Value::Array(v.into_iter().map(Value::Object).collect())),
            // Spliced in as text: a big view is not parsed twice.
            Query::Get(id, journal) => {
                return Ok(match s.get(id, *journal) {
                    Ok(text) => format!("{{\"ok\":{text}}}"),
                    Err(e) => settled(Err(e)),
                })
            }
        };
        Ok(settled(result))
    }

    fn resolve(&mut self, _: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

fn optional(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

#[napi]
impl NativeStore {
    /// The store file's path.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.store.path().to_string_lossy().into_owned()
    }

    /// Start recording a session: `{id, agent, agentSessionId, cwd,
    /// capabilities, title, forkedFrom, view}` (JSON text; `agent`,
    /// `capabilities` and `view` are JSON values).
    #[napi]
    pub fn create(&self, session: String) -> Result<()> {
        let v: Value =
            serde_json::from_str(&session).map_err(|_| invalid("session is not JSON"))?;
        let id = optional(&v, "id").ok_or_else(|| invalid("session.id is missing"))?;
        self.store
            .create(NewSession {
                id,
                agent: v.get("agent").unwrap_or(&Value::Null).to_string(),
                agent_session_id: optional(&v, "agentSessionId"),
                cwd: optional(&v, "cwd"),
                capabilities: v.get("capabilities").map(Value::to_string),
                title: optional(&v, "title"),
                forked_from: optional(&v, "forkedFrom"),
                view: v.get("view").filter(|v| !v.is_null()).map(Value::to_string),
            })
            .map_err(store_error)
    }

    /// Change fields of a stored session: `{agent, agentSessionId,
    /// capabilities, title, state}` (JSON text).
    #[napi]
    pub fn patch(&self, id: String, patch: String) -> Result<()> {
        let v: Value = serde_json::from_str(&patch).map_err(|_| invalid("patch is not JSON"))?;
        self.store
            .patch(
                &id,
                SessionPatch {
                    agent: v.get("agent").map(Value::to_string),
                    agent_session_id: optional(&v, "agentSessionId"),
                    capabilities: v.get("capabilities").map(Value::to_string),
                    title: optional(&v, "title"),
                    state: optional(&v, "state"),
                },
            )
            .map_err(store_error)
    }

    /// Append a journal record: `kind` is `prompt`, `turn_end`,
    /// `interrupted` or `recovered`; `data` JSON text.
    #[napi]
    pub fn journal(&self, id: String, kind: String, data: String) -> Result<()> {
        let kind = JournalKind::parse(&kind).ok_or_else(|| invalid("unknown journal kind"))?;
        self.store.journal(&id, kind, data).map_err(store_error)
    }

    /// Copy the live view `viewId` of `conn` into session `id` from now on
    /// (the writer thread copies it; the connection is not kept alive).
    #[napi]
    pub fn record_view(&self, id: String, conn: &AgentConnection, view_id: u32) -> Result<()> {
        let weak = conn.conn.downgrade();
        let feed = Box::new(move |since: u64| match weak.upgrade() {
            None => FeedPoll::Gone,
            Some(conn) => match conn.view_json_since(view_id, since) {
                Some((revision, json)) => FeedPoll::Changed { revision, json },
                None => FeedPoll::Unchanged,
            },
        });
        self.store.record_view(&id, feed).map_err(store_error)
    }

    /// Copy the view one last time, then stop recording it.
    #[napi]
    pub fn stop_view(&self, id: String) -> Result<()> {
        self.store.stop_view(&id).map_err(store_error)
    }

    #[napi]
    pub fn delete(&self, id: String) -> Result<()> {
        self.store.delete(&id).map_err(store_error)
    }

    /// The writer's counters (JSON text).
    #[napi]
    pub fn stats(&self) -> String {
        let s = self.store.stats();
        json!({
            "batches": s.batches,
            "viewsWritten": s.views_written,
            "coalesced": s.coalesced,
            "dropped": s.dropped,
            "errors": s.errors,
            "pruned": s.pruned,
            "lastError": s.last_error.map(|e| json!({"code": e.code(), "message": e.to_string()})),
        })
        .to_string()
    }

    fn task(&self, query: Query) -> AsyncTask<QueryTask> {
        AsyncTask::new(QueryTask {
            store: self.store.clone(),
            query,
        })
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn flush(&self) -> AsyncTask<QueryTask> {
        self.task(Query::Flush)
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn close(&self) -> AsyncTask<QueryTask> {
        self.task(Query::Close)
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn list(&self, limit: u32, offset: u32) -> AsyncTask<QueryTask> {
        self.task(Query::List(ListOptions { limit, offset }))
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn search(&self, text: String, limit: u32) -> AsyncTask<QueryTask> {
        self.task(Query::Search(text, limit))
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn get(&self, id: String, journal: bool) -> AsyncTask<QueryTask> {
        self.task(Query::Get(id, journal))
    }
}
