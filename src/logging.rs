//! The core's `tracing` events, forwarded as JSON text to one JS callback
//! per process (the JS side routes them to each client's `logger` by pid).
//! The addon never writes to stdout or stderr itself.

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

fn rank(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 1,
        Level::WARN => 2,
        Level::INFO => 3,
        Level::DEBUG => 4,
        Level::TRACE => 5,
    }
}

/// Send the core's log records (JSON text: `{level, target, message,
/// fields, time}`) to `callback`, at `level` and more severe; `null` or
/// level `"off"` stops them.
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
    Ok(())
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
        let time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        let record = serde_json::json!({
            "level": LEVELS[rank(meta.level()) as usize],
            "target": meta.target(),
            "message": fields.message.unwrap_or_default(),
            "fields": Value::Object(fields.fields),
            "time": time,
        });
        if let Some(sink) = SINK.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            sink.send(JsText::new(record.to_string()));
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
