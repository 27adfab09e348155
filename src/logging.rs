//! The core's `tracing` events, forwarded as JSON text to JS, which
//! routes them to each client's `logger` by pid. The addon never writes to
//! stdout or stderr itself.
//!
//! Records wait in one bounded queue; the JS callback is only woken, and
//! takes them all with [`take_log_records`]. So JS can also take them at
//! a moment of its choosing: before it forgets an agent that exited, it
//! takes what was logged about it (its last records, such as "agent
//! stopped", are logged before its exit is reported, but came through a
//! channel of their own and could land after the exit, with nobody left to
//! route them to).

use std::collections::VecDeque;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, Once};
use std::time::{SystemTime, UNIX_EPOCH};

use napi::bindgen_prelude::Function;
use napi::threadsafe_function::UnknownReturnValue;
use napi::{Error, Result, Status};
use napi_derive::napi;
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

use crate::sink::{JsText, JsTextCallback};

const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// 0 = off … 5 = trace; events above it are not even formatted.
static MAX_LEVEL: AtomicU8 = AtomicU8::new(0);
static SINK: Mutex<Option<JsTextCallback>> = Mutex::new(None);
static QUEUE: Mutex<LogQueue> = Mutex::new(LogQueue {
    records: VecDeque::new(),
    bytes: 0,
    dropped: 0,
    woken: false,
});

/// Records waiting for JS, at most this many or bytes (a debug-level
/// logger and an agent flooding noise lines while JS is busy made one
/// record per line).
const MAX_QUEUED_RECORDS: usize = 10_000;
const MAX_QUEUED_BYTES: usize = 8 << 20;

struct LogQueue {
    records: VecDeque<String>,
    bytes: usize,
    /// Refused since the last take: said by a record of its own.
    dropped: u64,
    /// JS was woken and has not taken since: no second wake-up.
    woken: bool,
}

impl LogQueue {
    /// Queue `record` (or count it dropped); true when JS is to be woken.
    fn push(&mut self, record: String) -> bool {
        if self.records.len() >= MAX_QUEUED_RECORDS || self.bytes + record.len() > MAX_QUEUED_BYTES
        {
            self.dropped += 1;
        } else {
            self.bytes += record.len();
            self.records.push_back(record);
        }
        !std::mem::replace(&mut self.woken, true)
    }

    fn take(&mut self) -> Vec<String> {
        let mut out: Vec<String> = self.records.drain(..).collect();
        self.bytes = 0;
        self.woken = false;
        if self.dropped > 0 {
            out.push(
                serde_json::json!({
                    "level": "warn",
                    "target": module_path!(),
                    "message": format!("{} log records dropped: the logger fell behind", self.dropped),
                    "fields": { "dropped": self.dropped },
                    "time": now_ms(),
                })
                .to_string(),
            );
            self.dropped = 0;
        }
        out
    }
}

/// The log records waiting, oldest first (JSON texts), and the queue
/// emptied. Called by the JS side when woken, and before it forgets an
/// agent.
#[napi]
pub fn take_log_records() -> Vec<String> {
    QUEUE.lock().unwrap_or_else(|e| e.into_inner()).take()
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

fn rank(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 1,
        Level::WARN => 2,
        Level::INFO => 3,
        Level::DEBUG => 4,
        Level::TRACE => 5,
    }
}

/// Queue the core's log records (JSON text: `{level, target, message,
/// fields, time}`) at `level` and more severe, and call `callback` (with
/// an empty string) when records wait: it takes them with
/// `takeLogRecords`. `null` or level `"off"` stops them.
#[napi]
pub fn set_log_sink(
    callback: Option<Function<String, UnknownReturnValue>>,
    level: String,
) -> Result<()> {
    let rank = LEVELS.iter().position(|l| *l == level).ok_or_else(|| {
        Error::new(
            Status::InvalidArg,
            format!("ERR_ACP_INVALID_ARGUMENT: unknown log level {level:?}"),
        )
    })? as u8;
    install_once();
    let sink = callback.map(JsTextCallback::new).transpose()?;
    let rank = if sink.is_some() { rank } else { 0 };
    *SINK.lock().unwrap_or_else(|e| e.into_inner()) = sink;
    MAX_LEVEL.store(rank, Ordering::Relaxed);
    // A wake-up sent through the sink this one replaces may never come:
    // wake through this one for what waits.
    let waiting = {
        let mut queue = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
        queue.woken = !queue.records.is_empty() || queue.dropped > 0;
        queue.woken
    };
    if waiting {
        wake_js();
    }
    Ok(())
}

/// Tell JS that records wait (an empty text: it takes them itself).
fn wake_js() {
    if let Some(sink) = SINK.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        sink.send(JsText::new(String::new()));
    }
}

fn install_once() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let subscriber = tracing_subscriber::registry().with(JsLogLayer);
        // Only fails if this library's tracing already has a global
        // subscriber, which then keeps its own routing.
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

struct JsLogLayer;

impl<S: Subscriber> Layer<S> for JsLogLayer {
    // Decided per event, because the level changes at run time.
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        rank(metadata.level()) <= MAX_LEVEL.load(Ordering::Relaxed)
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        let mut fields = FieldsJson::default();
        event.record(&mut fields);
        let record = serde_json::json!({
            "level": LEVELS[rank(meta.level()) as usize],
            "target": meta.target(),
            "message": fields.message.unwrap_or_default(),
            "fields": Value::Object(fields.fields),
            "time": now_ms(),
        });
        let wake = QUEUE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(record.to_string());
        if wake {
            wake_js();
        }
    }
}

#[derive(Default)]
struct FieldsJson {
    message: Option<String>,
    fields: Map<String, Value>,
}

impl FieldsJson {
    fn put(&mut self, field: &Field, value: Value) {
        if field.name() == "message" {
            self.message = Some(match value {
                Value::String(s) => s,
                other => other.to_string(),
            });
        } else {
            self.fields.insert(field.name().to_string(), value);
        }
    }
}

impl Visit for FieldsJson {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.put(field, Value::String(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::String(value.to_string()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> LogQueue {
        LogQueue {
            records: VecDeque::new(),
            bytes: 0,
            dropped: 0,
            woken: false,
        }
    }

    #[test]
    fn one_wake_up_per_take_and_records_in_order() {
        let mut q = queue();
        assert!(q.push("a".into()));
        assert!(!q.push("b".into()), "already woken");
        assert_eq!(q.take(), ["a", "b"]);
        assert!(q.take().is_empty());
        assert!(q.push("c".into()), "taken: wake again");
    }

    #[test]
    fn a_full_queue_drops_and_says_how_many_once_taken() {
        let mut q = queue();
        for i in 0..MAX_QUEUED_RECORDS + 5 {
            q.push(format!("r{i}"));
        }
        let taken = q.take();
        assert_eq!(taken.len(), MAX_QUEUED_RECORDS + 1);
        let note: Value = serde_json::from_str(taken.last().unwrap()).unwrap();
        assert_eq!(note["fields"]["dropped"], 5);
        assert_eq!(note["level"], "warn");
        assert_eq!(q.take().len(), 0, "said once");
    }

    #[test]
    fn a_record_over_the_byte_budget_is_dropped_and_still_wakes() {
        let mut q = queue();
        assert!(
            q.push("x".repeat(MAX_QUEUED_BYTES + 1)),
            "the drop is news too"
        );
        assert!(!q.push("small".into()));
        let taken = q.take();
        assert_eq!(taken[0], "small");
        assert!(taken[1].contains("1 log records dropped"));
        assert_eq!(q.bytes, 0);
    }
}
