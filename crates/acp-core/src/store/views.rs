//! A stored session's view: JSON text kept as a blob in a table of its
//! own, written through SQLite's incremental blob I/O. Bound as a value,
//! a view's JSON (up to 6 × a view's bytes) would be copied by SQLite
//! once when bound and again into the row's record.

use std::io::Write;

use rusqlite::types::ValueRef;
use rusqlite::{params, OptionalExtension, Transaction, MAIN_DB};

/// Store `json` as the view of session row `n`; returns the size of the
/// view it replaced (0 if none).
pub(crate) fn put(tx: &Transaction<'_>, n: i64, json: &str) -> rusqlite::Result<i64> {
    let old: i64 = tx
        .query_row("SELECT length(json) FROM views WHERE n = ?1", [n], |r| {
            r.get(0)
        })
        .optional()?
        .unwrap_or(0);
    // A zeroblob that ends its record is not materialized: its pages are
    // written as the blob is, below.
    tx.execute(
        "INSERT OR REPLACE INTO views (n, json) VALUES (?1, zeroblob(?2))",
        params![n, json.len() as i64],
    )?;
    let mut blob = tx.blob_open(MAIN_DB, c"views", c"json", n, false)?;
    blob.write_all(json.as_bytes())
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    Ok(old)
}

/// The view of session row `n` as it was stored, if any.
pub(crate) fn get(tx: &rusqlite::Connection, n: i64) -> rusqlite::Result<Option<String>> {
    tx.query_row("SELECT json FROM views WHERE n = ?1", [n], |r| {
        Ok(text(r.get_ref(0)?))
    })
    .optional()
    .map(Option::flatten)
}

/// A view's JSON from its column: UTF-8 in a blob (or text).
fn text(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Blob(b) | ValueRef::Text(b) => std::str::from_utf8(b).ok().map(str::to_owned),
        _ => None,
    }
}
