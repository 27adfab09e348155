//! The two tables of unanswered requests: ours to the agent (keyed by the
//! numeric id we chose) and the agent's to us (keyed by a token we hand to
//! the host, because the agent's ids may be any JSON value). Each entry may
//! carry a timer; whoever takes the entry first (answer, timeout,
//! cancellation) wins and the timer is stopped, so every request is
//! settled exactly once.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use tokio::task::AbortHandle;

/// A request we sent and still wait on.
#[derive(Debug)]
pub struct OutgoingRequest {
    pub method: Box<str>,
    pub sent: Instant,
    /// Fires the timeout; aborted when the answer arrives first.
    pub timer: Option<AbortHandle>,
}

/// A request from the agent the host has not answered yet.
#[derive(Debug)]
pub struct IncomingRequest {
    /// The agent's id, exactly as it was on the wire.
    pub raw_id: Box<str>,
    pub method: Box<str>,
    pub session_id: Option<Box<str>>,
    pub received: Instant,
    pub timer: Option<AbortHandle>,
}

pub trait Timed {
    fn timer(&mut self) -> &mut Option<AbortHandle>;
}

impl Timed for OutgoingRequest {
    fn timer(&mut self) -> &mut Option<AbortHandle> {
        &mut self.timer
    }
}

impl Timed for IncomingRequest {
    fn timer(&mut self) -> &mut Option<AbortHandle> {
        &mut self.timer
    }
}

/// Unanswered requests keyed by a number, each with an optional timer.
#[derive(Debug)]
pub struct PendingTable<T> {
    map: Mutex<HashMap<u64, T>>,
}

pub type OutgoingTable = PendingTable<OutgoingRequest>;
pub type IncomingTable = PendingTable<IncomingRequest>;

impl<T> Default for PendingTable<T> {
    fn default() -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
        }
    }
}

fn stopped<T: Timed>(mut entry: T) -> T {
    if let Some(t) = entry.timer().take() {
        t.abort();
    }
    entry
}

impl<T: Timed> PendingTable<T> {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, T>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn insert(&self, key: u64, entry: T) {
        self.lock().insert(key, entry);
    }

    /// Attach the timer after the entry was registered (it may already be
    /// gone: then the timer is stopped at once).
    pub fn set_timer(&self, key: u64, timer: AbortHandle) {
        match self.lock().get_mut(&key) {
            Some(entry) => *entry.timer() = Some(timer),
            None => timer.abort(),
        }
    }

    pub fn take(&self, key: u64) -> Option<T> {
        let entry = self.lock().remove(&key)?;
        Some(stopped(entry))
    }

    /// Take every entry `pick` selects, in key order.
    pub fn take_where(&self, pick: impl Fn(&T) -> bool) -> Vec<(u64, T)> {
        let mut map = self.lock();
        let mut keys: Vec<u64> = map
            .iter()
            .filter(|(_, e)| pick(e))
            .map(|(k, _)| *k)
            .collect();
        keys.sort_unstable();
        keys.into_iter()
            .filter_map(|k| map.remove(&k).map(|e| (k, stopped(e))))
            .collect()
    }

    /// Take everything, in key order.
    pub fn drain(&self) -> Vec<(u64, T)> {
        self.take_where(|_| true)
    }

    /// How many entries there are per `key` (e.g. per method), sorted.
    pub fn count_by(&self, key: impl Fn(&T) -> &str) -> Vec<(String, usize)> {
        let mut counts = std::collections::BTreeMap::<String, usize>::new();
        for entry in self.lock().values() {
            *counts.entry(key(entry).to_string()).or_default() += 1;
        }
        counts.into_iter().collect()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn contains(&self, key: u64) -> bool {
        self.lock().contains_key(&key)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl IncomingTable {
    /// Take every request of `session_id` whose method `pick` selects.
    pub fn take_session(
        &self,
        session_id: &str,
        pick: impl Fn(&str) -> bool,
    ) -> Vec<(u64, IncomingRequest)> {
        self.take_where(|r| r.session_id.as_deref() == Some(session_id) && pick(&r.method))
    }

    /// Take the request whose wire id is exactly `raw_id`.
    pub fn take_by_raw_id(&self, raw_id: &str) -> Option<(u64, IncomingRequest)> {
        self.take_where(|r| &*r.raw_id == raw_id).pop()
    }
}
