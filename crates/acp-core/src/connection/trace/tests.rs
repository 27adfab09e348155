//! The tracer through its API: numbering, order, cuts and the history's
//! bounds, whatever the mix of records and batches.

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::history::SMALL_BATCH;
use super::record::MAX_NAME_BYTES;
use super::{Direction, Kind, TraceBatch, TraceConfig, Tracer, WireMeta};
use crate::acp::methods;
use crate::rpc::floor_char_boundary;

thread_local! {
    /// Called after each record a history encodes.
    pub(super) static ENCODED: Cell<Option<fn(&Tracer)>> = const { Cell::new(None) };
}

#[test]
fn a_history_is_encoded_with_the_ring_free_and_keeps_its_moment() {
    let t = Tracer::new(TraceConfig {
        history: 300,
        ..TraceConfig::default()
    });
    for _ in 0..300 {
        t.record(meta("before"), r#"{"m":"before"}"#);
    }
    // While the history is being encoded, the reader records on (it
    // would wait for the lock until the whole history was done).
    ENCODED.with(|hook| {
        hook.set(Some(|t: &Tracer| {
            assert!(t.ring.try_lock().is_ok(), "the ring is held while encoding");
            t.record(meta("during"), r#"{"m":"during"}"#);
        }))
    });
    let history = t.history_json();
    ENCODED.with(|hook| hook.set(None));
    let records: Vec<serde_json::Value> = serde_json::from_str(&history).unwrap();
    assert_eq!(records.len(), 300);
    assert!(records.iter().all(|r| r["method"] == "before"));
    // The ring went on: the last 300 are those recorded meanwhile.
    let after = history_of(&t);
    assert_eq!(after.len(), 300);
    assert!(after.iter().all(|(_, m, _)| m == "during"));
}

fn meta(method: &str) -> WireMeta<'_> {
    WireMeta {
        direction: Direction::Receive,
        kind: Kind::Notification,
        method: Some(method),
        id: None,
        at: Instant::now(),
        request_at: None,
    }
}

#[test]
fn the_ring_keeps_exactly_the_last_n_in_order() {
    let t = Tracer::new(TraceConfig {
        history: 3,
        ..Default::default()
    });
    for i in 0..10 {
        t.record(meta(&format!("m{i}")), "{}");
    }
    let v: serde_json::Value = serde_json::from_str(&t.history_json()).unwrap();
    let methods: Vec<_> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["method"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(methods, ["m7", "m8", "m9"]);
    assert_eq!(v[2]["seq"], 10);
    assert_eq!(t.counters.messages_in.load(Ordering::Relaxed), 10);
}

#[test]
fn the_ring_keeps_each_records_texts_through_many_wraps() {
    let t = Tracer::new(TraceConfig {
        history: 5,
        history_max_payload: 7,
        ..Default::default()
    });
    let line = |i: usize| format!("{}é{}", "p".repeat(i % 9), i);
    for i in 0..103 {
        let id = i.to_string().repeat(i % 4);
        t.record(
            WireMeta {
                id: (!id.is_empty()).then_some(&id),
                ..meta(&"m".repeat(i % 5 + 1))
            },
            &line(i),
        );
    }
    let v: serde_json::Value = serde_json::from_str(&t.history_json()).unwrap();
    let v = v.as_array().unwrap();
    assert_eq!(v.len(), 5);
    for (r, i) in v.iter().zip(98..) {
        let full = line(i);
        let cut = floor_char_boundary(&full, 7);
        assert_eq!(r["seq"], i as u64 + 1);
        assert_eq!(r["method"], "m".repeat(i % 5 + 1));
        assert_eq!(r["payload"], &full[..cut], "record {i}");
        assert_eq!(r["bytes"], full.len());
        assert_eq!(r.get("truncated").is_some(), cut < full.len());
        match i % 4 {
            0 => assert!(r.get("id").is_none()),
            n => assert_eq!(r["id"], i.to_string().repeat(n).parse::<u64>().unwrap()),
        }
    }
}

fn history_of(t: &Tracer) -> Vec<(u64, String, String)> {
    let v: serde_json::Value = serde_json::from_str(&t.history_json()).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let text = |k: &str| r[k].as_str().unwrap_or("").to_string();
            (r["seq"].as_u64().unwrap(), text("method"), text("payload"))
        })
        .collect()
}

/// A text chunk line with `text` (as sent), and the span of that.
fn chunk_line(envelope: usize, text: &str) -> (String, (usize, usize)) {
    let head = format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{}","update":{{"content":{{"type":"text","text":""#,
        "s".repeat(envelope)
    );
    let line = format!(r#"{head}{text}"}}}}}}}}"#);
    (line, (head.len(), head.len() + text.len()))
}

/// Defer a chunk line read at `at` (the lines of one read share it).
fn defer_chunk(
    t: &Tracer,
    batch: &mut TraceBatch,
    at: Instant,
    envelope: usize,
    text: &str,
    shape: Option<u64>,
) -> String {
    let (line, raw) = chunk_line(envelope, text);
    assert!(t.defer(batch, at, &line, raw, shape));
    line
}

#[test]
fn a_committed_batch_lands_in_order_after_what_was_recorded_before_it() {
    let t = Tracer::new(TraceConfig {
        history: 100,
        ..Default::default()
    });
    t.record(meta("before"), "{}");
    let mut batch = TraceBatch::default();
    let sent: Vec<_> = (0..4)
        .map(|i| {
            defer_chunk(
                &t,
                &mut batch,
                Instant::now(),
                3,
                &format!("chunk {i}"),
                Some(7),
            )
        })
        .collect();
    assert_eq!(t.counters.messages_in.load(Ordering::Relaxed), 1);
    assert_eq!(history_of(&t).len(), 1);
    t.commit(&mut batch);
    t.record(meta("after"), "{}");
    let want: Vec<_> = [("before".to_string(), "{}".to_string())]
        .into_iter()
        .chain(
            sent.iter()
                .map(|l| (methods::SESSION_UPDATE.to_string(), l.clone())),
        )
        .chain([("after".to_string(), "{}".to_string())])
        .collect();
    let got = history_of(&t);
    assert_eq!(
        got.iter().map(|r| r.0).collect::<Vec<_>>(),
        (1..=6).collect::<Vec<_>>()
    );
    assert_eq!(
        got.into_iter().map(|r| (r.1, r.2)).collect::<Vec<_>>(),
        want
    );
    assert_eq!(t.counters.messages_in.load(Ordering::Relaxed), 6);
    let bytes = 2 + sent.iter().map(|l| l.len() as u64).sum::<u64>() + 2;
    assert_eq!(t.counters.bytes_in.load(Ordering::Relaxed), bytes);
    t.commit(&mut batch);
    assert_eq!(t.counters.messages_in.load(Ordering::Relaxed), 6);
}

#[test]
fn a_batch_bigger_than_the_history_leaves_its_last_records_numbered_in_turn() {
    let t = Tracer::new(TraceConfig {
        history: 3,
        ..Default::default()
    });
    t.record(meta("first"), "{}");
    let mut batch = TraceBatch::default();
    for round in 0..3 {
        let sent: Vec<_> = (0..7)
            .map(|i| {
                defer_chunk(
                    &t,
                    &mut batch,
                    Instant::now(),
                    i,
                    &format!("r{round}m{i}"),
                    None,
                )
            })
            .collect();
        t.commit(&mut batch);
        let got = history_of(&t);
        let seqs: Vec<_> = got.iter().map(|r| r.0).collect();
        let last = 1 + 7 * (round + 1) as u64;
        assert_eq!(seqs, [last - 2, last - 1, last]);
        let payloads: Vec<_> = got.into_iter().map(|r| r.2).collect();
        assert_eq!(payloads, sent[4..]);
    }
}

proptest::proptest! {
    /// Single records and batches of text chunk lines (the same shape
    /// or a new one, short or cut), in any order, under any cap: the
    /// history is always the last `cap` messages, numbered in turn,
    /// each line as sent or cut, and holds no more records than the
    /// cap and one block.
    #[test]
    fn the_history_is_the_last_messages_whatever_the_mix(
        cap in 1usize..80,
        max in 100usize..400,
        steps in proptest::collection::vec((0usize..2, proptest::prop_oneof![0usize..8, 0usize..300]), 1..60),
    ) {
        let t = Tracer::new(TraceConfig {
            history: cap,
            history_max_payload: max,
            ..Default::default()
        });
        let mut batch = TraceBatch::default();
        let mut all: Vec<(String, String)> = Vec::new();
        // When each chunk line was read (singles: not known here).
        let mut times: Vec<Option<Instant>> = Vec::new();
        let mut shape = 0u64;
        for (kind, n) in steps {
            if kind == 0 {
                for _ in 0..n % 5 + 1 {
                    let i = all.len();
                    let (m, line) = (format!("m{i}"), format!("{i}:{}", "é".repeat(i % 7)));
                    t.record(meta(&m), &line);
                    all.push((m, line));
                    times.push(None);
                }
            } else {
                // The lines of one read share their time.
                let mut at = Instant::now();
                for k in 0..n {
                    if k % 37 == 36 {
                        at += Duration::from_millis(1);
                    }
                    // A new shape now and then, some unnumbered; texts
                    // of every length, some over the max.
                    let i = all.len();
                    if (i + n).is_multiple_of(13) {
                        shape += 1;
                    }
                    let number = (!i.is_multiple_of(11)).then_some(shape);
                    let envelope = (shape % 4) as usize * 50;
                    let text = format!("{k}\\n{}", "é".repeat(i % 90));
                    let line = defer_chunk(&t, &mut batch, at, envelope, &text, number);
                    all.push((methods::SESSION_UPDATE.to_string(), line));
                    times.push(Some(at));
                }
                t.commit(&mut batch);
            }
            let want: Vec<_> = all
                .iter()
                .enumerate()
                .skip(all.len().saturating_sub(cap))
                .map(|(i, (m, line))| {
                    let cut = floor_char_boundary(line, max);
                    (i as u64 + 1, m.clone(), line[..cut].to_string())
                })
                .collect();
            proptest::prop_assert_eq!(&history_of(&t), &want);
            let v: serde_json::Value = serde_json::from_str(&t.history_json()).unwrap();
            for r in v.as_array().unwrap() {
                let i = r["seq"].as_u64().unwrap() as usize - 1;
                if let Some(at) = times[i] {
                    let want: f64 = format!("{:.3}", t.unix_ms(at)).parse().unwrap();
                    proptest::prop_assert_eq!(r["time"].as_f64(), Some(want), "record {}", i);
                }
            }
            let ring = t.ring.lock().unwrap();
            let held: usize = ring.blocks.iter().map(|b| b.records.len()).sum();
            let biggest = ring.blocks.iter().map(|b| b.records.len()).max().unwrap_or(0);
            proptest::prop_assert!(held <= cap + biggest);
            // Each block under SMALL_BATCH records follows a nearly
            // full one: about `cap / SMALL_BATCH` blocks' slack at most.
            let most = 2 * (cap / SMALL_BATCH) + 3;
            proptest::prop_assert!(ring.blocks.len() <= most, "{} blocks", ring.blocks.len());
            proptest::prop_assert_eq!(ring.len, want.len());
        }
    }
}

#[test]
fn nothing_is_deferred_under_a_live_trace() {
    let t = Tracer::new(TraceConfig {
        live: true,
        ..Default::default()
    });
    let mut batch = TraceBatch::default();
    let (line, raw) = chunk_line(1, "x");
    assert!(!t.defer(&mut batch, Instant::now(), &line, raw, Some(1)));
    t.commit(&mut batch);
    assert_eq!(t.counters.messages_in.load(Ordering::Relaxed), 0);
    assert!(history_of(&t).is_empty());
}

#[test]
fn an_agents_long_method_and_id_are_not_kept_whole() {
    let t = Tracer::new(TraceConfig {
        history: 2,
        ..Default::default()
    });
    let method = "é".repeat(10_000);
    let id = format!("\"{}\"", "i".repeat(10_000));
    t.record(
        WireMeta {
            id: Some(&id),
            ..meta(&method)
        },
        "{}",
    );
    let v: serde_json::Value = serde_json::from_str(&t.history_json()).unwrap();
    let r = &v[0];
    let kept = r["method"].as_str().unwrap();
    assert!(kept.len() <= MAX_NAME_BYTES && method.starts_with(kept) && !kept.is_empty());
    assert!(r.get("id").is_none(), "a long id is left out, not cut");
    assert_eq!(r["truncated"], true);
}

#[test]
fn payloads_are_cut_on_a_char_boundary_and_marked() {
    let t = Tracer::new(TraceConfig {
        live: true,
        live_max_payload: 4,
        ..Default::default()
    });
    // "é" is two bytes: a cut at 4 would split the second one.
    let live = t.record(meta("x"), r#""éé""#).unwrap();
    let v: serde_json::Value = serde_json::from_str(&live).unwrap();
    assert_eq!(v["payload"], "\"é");
    assert_eq!(v["truncated"], true);
    assert_eq!(v["bytes"], 6);
}

#[test]
fn ids_are_kept_as_json_and_durations_in_ms() {
    let t = Tracer::new(TraceConfig {
        live: true,
        ..Default::default()
    });
    let now = Instant::now();
    let live = t
        .record(
            WireMeta {
                direction: Direction::Send,
                kind: Kind::Response,
                method: Some("session/request_permission"),
                id: Some(r#""srv_1""#),
                at: now + Duration::from_micros(1500),
                request_at: Some(now),
            },
            r#"{"id":"srv_1","result":{}}"#,
        )
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&live).unwrap();
    assert_eq!(v["id"], "srv_1");
    assert_eq!(v["direction"], "send");
    assert_eq!(v["durationMs"], 1.5);
    assert!(v.get("truncated").is_none());
}

#[test]
fn nothing_is_kept_when_history_and_live_are_off() {
    let t = Tracer::new(TraceConfig {
        history: 0,
        ..Default::default()
    });
    assert!(t.record(meta("x"), "{}").is_none());
    assert_eq!(t.history_json(), "[]");
    assert_eq!(t.counters.bytes_in.load(Ordering::Relaxed), 2);
}
