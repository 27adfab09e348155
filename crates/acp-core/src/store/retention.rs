//! The store's bounds: how many sessions, how many bytes, how old. The
//! least recently updated sessions go first; a session being recorded now
//! is never pruned.

use rusqlite::{params, Transaction};

/// Bounds on what a store keeps; `None` is unbounded.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    pub max_sessions: Option<u64>,
    /// Bytes of the stored views and journals together (the file is
    /// larger: indexes, the search index, free pages).
    pub max_bytes: Option<u64>,
    /// Sessions not updated for longer are pruned.
    pub max_age_ms: Option<u64>,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            max_sessions: Some(10_000),
            max_bytes: Some(1 << 30),
            max_age_ms: Some(180 * 24 * 3600 * 1000),
        }
    }
}

/// Sessions pruned per batch at most, so one batch stays short; the rest
/// go with the next ones.
const MAX_PRUNED_PER_BATCH: i64 = 256;

impl Retention {
    /// Delete what is over the bounds, sparing `live` sessions; returns
    /// how many went.
    pub(crate) fn prune(
        &self,
        tx: &Transaction<'_>,
        now: i64,
        live: &[&str],
    ) -> rusqlite::Result<usize> {
        let mut gone = 0;
        if let Some(age) = self.max_age_ms {
            let cutoff = now.saturating_sub(age as i64);
            let ids = ids(
                tx,
                "SELECT id FROM sessions WHERE updated_at < ?1 ORDER BY updated_at LIMIT ?2",
                params![cutoff, MAX_PRUNED_PER_BATCH],
            )?;
            gone += delete(tx, &ids, live)?;
        }
        let (count, bytes): (i64, i64) = tx.query_row(
            "SELECT count(*), coalesce(sum(bytes), 0) FROM sessions",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let over_count = self
            .max_sessions
            .map_or(0, |max| (count - max as i64).max(0));
        let over_bytes = self.max_bytes.map_or(0, |max| (bytes - max as i64).max(0));
        if over_count == 0 && over_bytes == 0 {
            return Ok(gone);
        }
        // Oldest first until both bounds hold.
        let mut stmt =
            tx.prepare_cached("SELECT id, bytes FROM sessions ORDER BY updated_at, n LIMIT ?1")?;
        let rows = stmt.query_map(params![MAX_PRUNED_PER_BATCH + live.len() as i64], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })?;
        let (mut need_count, mut need_bytes) = (over_count, over_bytes);
        let mut doomed = Vec::new();
        for row in rows {
            if need_count <= 0 && need_bytes <= 0 {
                break;
            }
            let (id, b) = row?;
            if live.contains(&id.as_str()) {
                continue;
            }
            need_count -= 1;
            need_bytes -= b;
            doomed.push(id);
        }
        drop(stmt);
        gone += delete(tx, &doomed, &[])?;
        Ok(gone)
    }
}

fn ids(tx: &Transaction<'_>, sql: &str, p: impl rusqlite::Params) -> rusqlite::Result<Vec<String>> {
    let mut stmt = tx.prepare_cached(sql)?;
    let rows = stmt.query_map(p, |r| r.get(0))?;
    rows.collect()
}

fn delete(tx: &Transaction<'_>, ids: &[String], live: &[&str]) -> rusqlite::Result<usize> {
    let mut n = 0;
    for id in ids.iter().filter(|id| !live.contains(&id.as_str())) {
        n += delete_session(tx, id)?;
    }
    Ok(n)
}

/// Delete one stored session with its journal and search text.
pub(crate) fn delete_session(tx: &Transaction<'_>, id: &str) -> rusqlite::Result<usize> {
    let n: Option<i64> = tx
        .query_row("SELECT n FROM sessions WHERE id = ?1", [id], |r| r.get(0))
        .ok();
    let Some(n) = n else { return Ok(0) };
    tx.execute("DELETE FROM transcript WHERE rowid = ?1", [n])?;
    tx.execute("DELETE FROM journal WHERE session_id = ?1", [id])?;
    tx.execute("DELETE FROM views WHERE n = ?1", [n])?;
    tx.execute("DELETE FROM sessions WHERE n = ?1", [n])
}
