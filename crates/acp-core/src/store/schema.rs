//! The store file: opened in WAL mode, its schema created once, and a file
//! that is not ours, or newer than we know, refused before we touch it.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::error::StoreError;

/// The file's name in the store directory.
pub const FILE_NAME: &str = "sessions.sqlite3";

/// `PRAGMA application_id` of a store: "ACPS".
pub const APPLICATION_ID: i64 = 0x4143_5053;

/// `PRAGMA user_version` of the schema below; a newer file is refused.
pub const SCHEMA_VERSION: i64 = 1;

/// How long a write waits for another process's write lock. Two hosts on
/// one store take turns; only a lock held longer than this fails a batch
/// (which is kept and retried).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const SCHEMA: &str = "
CREATE TABLE sessions (
  n INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  agent TEXT NOT NULL,
  agent_session_id TEXT,
  cwd TEXT,
  capabilities TEXT,
  title TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  state TEXT NOT NULL DEFAULT 'open',
  forked_from TEXT,
  view_revision INTEGER NOT NULL DEFAULT 0,
  bytes INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_updated ON sessions (updated_at);
-- A session's view (JSON, as a blob), apart from its row: the row's
-- updates do not rewrite it, and as a table's only column it is written
-- in place, page by page (`views::put`).
CREATE TABLE views (
  n INTEGER PRIMARY KEY REFERENCES sessions (n) ON DELETE CASCADE,
  json BLOB NOT NULL
);
CREATE TABLE journal (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  at INTEGER NOT NULL,
  kind TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX journal_by_session ON journal (session_id, seq);
CREATE VIRTUAL TABLE transcript USING fts5 (text);
";

/// Open (creating if need be) the store file at `path`, checked as ours.
pub(crate) fn open(path: &Path, read_only: bool) -> Result<Connection, StoreError> {
    let err = |e| StoreError::sqlite(path, e);
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let mut db = Connection::open_with_flags(path, flags).map_err(err)?;
    db.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
    // The first read of the header tells a non-database apart.
    let (app_id, version) = identity(&db).map_err(err)?;
    match app_id {
        APPLICATION_ID if version > SCHEMA_VERSION => {
            return Err(StoreError::Newer {
                path: path.to_path_buf(),
                found: version,
                supported: SCHEMA_VERSION,
            })
        }
        APPLICATION_ID => {}
        0 if !has_tables(&db).map_err(err)? => {}
        found => {
            return Err(StoreError::Foreign {
                path: path.to_path_buf(),
                found,
            })
        }
    }
    if !read_only {
        // WAL: readers (a second window, the CLI) never wait for the
        // writer; NORMAL sync: a power cut may lose the last commits but
        // never corrupts the file.
        db.pragma_update(None, "journal_mode", "WAL").map_err(err)?;
        db.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        create(&mut db).map_err(err)?;
    }
    db.pragma_update(None, "foreign_keys", "ON").map_err(err)?;
    Ok(db)
}

fn identity(db: &Connection) -> rusqlite::Result<(i64, i64)> {
    let app: i64 = db.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let version: i64 = db.pragma_query_value(None, "user_version", |r| r.get(0))?;
    Ok((app, version))
}

fn has_tables(db: &Connection) -> rusqlite::Result<bool> {
    db.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })
    .map(|n| n > 0)
}

/// Create the schema unless another process just did (under the write
/// lock, so two hosts opening a new store at once create it once).
fn create(db: &mut Connection) -> rusqlite::Result<()> {
    let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let (app, _) = identity(&tx)?;
    if app != APPLICATION_ID {
        tx.execute_batch(SCHEMA)?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    tx.commit()
}
