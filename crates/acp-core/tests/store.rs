//! The session store on a real SQLite file: what is written is found again,
//! a file that is not ours is refused, the bounds hold, a flood coalesces,
//! a full disk is a typed error that loses nothing committed.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use acp_core::store::{
    FeedPoll, JournalKind, ListOptions, NewSession, Retention, Store, StoreError, StoreOptions,
    FILE_NAME,
};
use serde_json::{json, Value};
use tempfile::TempDir;

/// A directory of its own for one test, removed when the test ends (passed
/// or not).
/// A directory of its own, removed when the test ends (passed or failed).
fn scratch(name: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(&format!("acp-store-test-{name}-"))
        .tempdir()
        .unwrap()
}

fn options() -> StoreOptions {
    StoreOptions {
        retention: Retention {
            max_sessions: None,
            max_bytes: None,
            max_age_ms: None,
        },
        interval: Duration::from_millis(20),
    }
}

fn session(id: &str, title: &str) -> NewSession {
    NewSession {
        id: id.into(),
        agent: json!({"command": "mock", "name": "mock-agent", "version": "1.0"}).to_string(),
        agent_session_id: Some(format!("agent-{id}")),
        cwd: Some("/tmp".into()),
        capabilities: Some(json!({"loadSession": true}).to_string()),
        title: Some(title.into()),
        ..Default::default()
    }
}

fn view(text: &str) -> String {
    json!({"sessionId": "x", "entries": [{"index": 0, "kind": "agent", "content": [{"type": "text", "text": text}]}]})
        .to_string()
}

/// A feed whose state moves when the test says so.
fn feed(revision: Arc<AtomicU64>, text: &'static str) -> acp_core::store::Feed {
    Box::new(move |since| {
        let r = revision.load(Ordering::SeqCst);
        if r == since {
            FeedPoll::Unchanged
        } else {
            FeedPoll::Changed {
                revision: r,
                json: view(&format!("{text} at {r}")),
            }
        }
    })
}

fn get(store: &Store, id: &str) -> Value {
    serde_json::from_str(&store.get(id, true).unwrap()).unwrap()
}

#[test]
fn a_recorded_session_is_found_by_get_list_and_search() {
    let dir = scratch("roundtrip");
    let store = Store::open(dir.path(), options()).unwrap();
    let rev = Arc::new(AtomicU64::new(1));
    store.create(session("s1", "fix the parser")).unwrap();
    store
        .record_view("s1", feed(rev.clone(), "the zebra answer"))
        .unwrap();
    store
        .journal(
            "s1",
            JournalKind::Prompt,
            json!({"prompt": [{"type": "text", "text": "why quokkas"}]}).to_string(),
        )
        .unwrap();
    store.flush().unwrap();
    let s = get(&store, "s1");
    assert_eq!(s["title"], "fix the parser");
    assert_eq!(s["agent"]["name"], "mock-agent");
    assert_eq!(
        s["view"]["entries"][0]["content"][0]["text"],
        "the zebra answer at 1"
    );
    assert_eq!(s["journal"][0]["kind"], "prompt");
    assert_eq!(store.list(ListOptions::default()).unwrap().len(), 1);
    for word in ["quokkas", "zebra", "parser"] {
        let found = store.search(word, 10).unwrap();
        assert_eq!(found.len(), 1, "{word}");
        assert!(found[0]["snippet"]
            .as_str()
            .unwrap()
            .contains(&format!("[{word}]")));
    }
    assert!(store.search("absent", 10).unwrap().is_empty());
    // FTS5 syntax in the user's text is just text.
    assert!(store.search("\"title: OR (", 10).unwrap().is_empty());

    // The view moves: the store follows, and search with it.
    rev.store(2, Ordering::SeqCst);
    store.flush().unwrap();
    assert_eq!(
        get(&store, "s1")["view"]["entries"][0]["content"][0]["text"],
        "the zebra answer at 2"
    );

    store.close().unwrap();
    drop(store);
    // Reopened: all of it is there.
    let store = Store::open(dir.path(), options()).unwrap();
    assert_eq!(get(&store, "s1")["viewRevision"], 2);
    assert_eq!(store.search("quokkas", 10).unwrap().len(), 1);
    assert!(matches!(
        store.get("nope", false),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn a_flood_is_coalesced_to_the_latest_view() {
    let dir = scratch("coalesce");
    let store = Store::open(dir.path(), options()).unwrap();
    let rev = Arc::new(AtomicU64::new(1));
    store.create(session("s1", "t")).unwrap();
    store.record_view("s1", feed(rev.clone(), "v")).unwrap();
    store.flush().unwrap();
    let before = store.stats();
    // 1000 changes between two copies: one write, 999 coalesced.
    rev.store(1001, Ordering::SeqCst);
    store.flush().unwrap();
    let after = store.stats();
    assert_eq!(after.views_written - before.views_written, 1);
    assert_eq!(after.coalesced - before.coalesced, 999);
    assert_eq!(
        get(&store, "s1")["view"]["entries"][0]["content"][0]["text"],
        "v at 1001"
    );
}

#[test]
fn stop_view_writes_the_last_state() {
    let dir = scratch("stop");
    let store = Store::open(
        dir.path(),
        StoreOptions {
            interval: Duration::from_secs(3600),
            ..options()
        },
    )
    .unwrap();
    let rev = Arc::new(AtomicU64::new(1));
    store.create(session("s1", "t")).unwrap();
    store.record_view("s1", feed(rev.clone(), "v")).unwrap();
    rev.store(7, Ordering::SeqCst);
    store.stop_view("s1").unwrap();
    store.flush().unwrap();
    assert_eq!(
        get(&store, "s1")["view"]["entries"][0]["content"][0]["text"],
        "v at 7"
    );
    rev.store(8, Ordering::SeqCst);
    store.flush().unwrap();
    assert_eq!(get(&store, "s1")["viewRevision"], 7, "no copy after stop");
}

#[test]
fn delete_removes_the_session_its_journal_and_its_search_text() {
    let dir = scratch("delete");
    let store = Store::open(dir.path(), options()).unwrap();
    store.create(session("s1", "walrus")).unwrap();
    store
        .journal("s1", JournalKind::TurnEnd, "{}".into())
        .unwrap();
    store.create(session("s2", "other")).unwrap();
    store.flush().unwrap();
    store.delete("s1").unwrap();
    store.flush().unwrap();
    assert!(matches!(
        store.get("s1", true),
        Err(StoreError::NotFound(_))
    ));
    assert!(store.search("walrus", 10).unwrap().is_empty());
    assert_eq!(store.count().unwrap(), 1);
}

#[test]
fn retention_keeps_the_newest_and_spares_live_sessions() {
    let dir = scratch("retention");
    let store = Store::open(
        dir.path(),
        StoreOptions {
            retention: Retention {
                max_sessions: Some(3),
                max_bytes: None,
                max_age_ms: None,
            },
            ..options()
        },
    )
    .unwrap();
    let rev = Arc::new(AtomicU64::new(1));
    store
        .create(session("live", "oldest but recorded"))
        .unwrap();
    store.record_view("live", feed(rev, "v")).unwrap();
    store.flush().unwrap();
    for i in 0..5 {
        store.create(session(&format!("s{i}"), "t")).unwrap();
        store.flush().unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    let ids: Vec<String> = store
        .list(ListOptions::default())
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert!(ids.contains(&"live".to_string()), "{ids:?}");
    assert!(
        ids.contains(&"s4".to_string()) && ids.contains(&"s3".to_string()),
        "{ids:?}"
    );
    assert!(store.stats().pruned >= 3);
}

#[test]
fn retention_by_bytes() {
    let dir = scratch("bytes");
    let store = Store::open(
        dir.path(),
        StoreOptions {
            retention: Retention {
                max_sessions: None,
                max_bytes: Some(10_000),
                max_age_ms: None,
            },
            ..options()
        },
    )
    .unwrap();
    for i in 0..10 {
        store.create(session(&format!("s{i}"), "t")).unwrap();
        store
            .journal(
                &format!("s{i}"),
                JournalKind::TurnEnd,
                json!({"pad": "x".repeat(3000)}).to_string(),
            )
            .unwrap();
        store.flush().unwrap();
    }
    let left = store.list(ListOptions::default()).unwrap();
    let bytes: i64 = left.iter().map(|s| s["bytes"].as_i64().unwrap()).sum();
    assert!(bytes <= 10_000, "{bytes}");
    assert!(left.len() >= 3, "{}", left.len());
}

#[test]
fn a_file_that_is_not_a_store_is_refused_untouched() {
    // Not a database at all.
    let dir = scratch("corrupt");
    let file = dir.path().join(FILE_NAME);
    std::fs::write(
        &file,
        b"this is not sqlite, it is a shopping list".repeat(200),
    )
    .unwrap();
    let before = std::fs::read(&file).unwrap();
    let err = Store::open(dir.path(), options()).err().unwrap();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert_eq!(err.code(), "ERR_ACP_STORE_CORRUPT");
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // Some other program's SQLite file.
    let dir = scratch("foreign");
    let db = rusqlite::Connection::open(dir.path().join(FILE_NAME)).unwrap();
    db.execute_batch("CREATE TABLE cookies (name TEXT); INSERT INTO cookies VALUES ('x');")
        .unwrap();
    drop(db);
    let err = Store::open(dir.path(), options()).err().unwrap();
    assert!(matches!(err, StoreError::Foreign { .. }), "{err:?}");

    // A store from a newer acp-native.
    let dir = scratch("newer");
    Store::open(dir.path(), options()).unwrap().close().unwrap();
    let db = rusqlite::Connection::open(dir.path().join(FILE_NAME)).unwrap();
    db.pragma_update(None, "user_version", 99).unwrap();
    drop(db);
    let err = Store::open(dir.path(), options()).err().unwrap();
    assert!(
        matches!(
            err,
            StoreError::Newer {
                found: 99,
                supported: 1,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn two_processes_share_one_store() {
    // Two stores on one directory stand for two hosts (two editor
    // windows): both write, each sees the other's sessions.
    let dir = scratch("shared");
    let a = Store::open(dir.path(), options()).unwrap();
    let b = Store::open(dir.path(), options()).unwrap();
    for i in 0..20 {
        a.create(session(&format!("a{i}"), "from a")).unwrap();
        b.create(session(&format!("b{i}"), "from b")).unwrap();
    }
    a.flush().unwrap();
    b.flush().unwrap();
    assert_eq!(a.count().unwrap(), 40);
    assert_eq!(b.search("from b", 100).unwrap().len(), 20);
}

/// A tmpfs of 1 MiB (root only; skipped with the reason otherwise).
fn small_disk() -> Option<TempDir> {
    let dir = scratch("full");
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(dir.path())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIP full-disk test: cannot mount a small tmpfs here (needs root)");
        return None;
    }
    Some(dir)
}

fn unmount(dir: &Path) {
    let _ = std::process::Command::new("umount").arg(dir).status();
}

#[test]
fn a_full_disk_is_a_typed_error_and_loses_nothing_committed() {
    let Some(dir) = small_disk() else { return };
    let result = std::panic::catch_unwind(|| {
        let store = Store::open(dir.path(), options()).unwrap();
        store
            .create(session("kept", "committed before the disk filled"))
            .unwrap();
        store.flush().unwrap();
        // Fill the disk with journal records until a batch fails.
        let mut err = None;
        for i in 0..400 {
            store
                .journal(
                    "kept",
                    JournalKind::TurnEnd,
                    json!({"i": i, "pad": "y".repeat(8000)}).to_string(),
                )
                .unwrap();
            if let Err(e) = store.flush() {
                err = Some(e);
                break;
            }
        }
        let err = err.expect("a 1 MiB disk fills");
        assert_eq!(err.code(), "ERR_ACP_STORE_FULL", "{err:?}");
        assert!(store.stats().errors >= 1);
        // What was committed is intact and readable.
        let s = get(&store, "kept");
        assert_eq!(s["title"], "committed before the disk filled");
        drop(store);
        let store = Store::open(dir.path(), options());
        // Reopening a full disk may fail to create its WAL files, but only
        // with a typed error; whenever it opens, the session is there.
        if let Ok(store) = store {
            assert_eq!(
                get(&store, "kept")["title"],
                "committed before the disk filled"
            );
        }
    });
    unmount(dir.path());
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// SQLite's own memory high-water mark (all connections of the process).
fn sqlite_highwater(reset: bool) -> i64 {
    // SAFETY: a plain query of SQLite's global counters.
    unsafe { rusqlite::ffi::sqlite3_memory_highwater(i32::from(reset)) }
}

#[test]
fn a_big_view_is_written_without_sqlite_holding_copies_of_it() {
    const BIG: usize = 48 << 20;
    let dir = scratch("big-view");
    let store = Store::open(dir.path(), options()).unwrap();
    store.create(session("s1", "t")).unwrap();
    store.flush().unwrap();
    let json = Arc::new(view(&"a".repeat(BIG)));
    let copy = json.clone();
    sqlite_highwater(true);
    store
        .record_view(
            "s1",
            Box::new(move |since| {
                if since == 1 {
                    FeedPoll::Unchanged
                } else {
                    FeedPoll::Changed {
                        revision: 1,
                        json: copy.to_string(),
                    }
                }
            }),
        )
        .unwrap();
    store.stop_view("s1").unwrap();
    store.flush().unwrap();
    // Bound as a value, SQLite copied the text when bound and again into
    // the row's record: twice the view. Written in place, a few pages.
    let peak = sqlite_highwater(false);
    assert!(
        peak < (BIG / 4) as i64,
        "SQLite held {peak} bytes for a {BIG}-byte view"
    );
    let got = get(&store, "s1");
    assert_eq!(got["viewRevision"], 1);
    assert_eq!(
        got["view"]["entries"][0]["content"][0]["text"]
            .as_str()
            .map(str::len),
        Some(BIG)
    );
}
