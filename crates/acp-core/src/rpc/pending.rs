//! The two tables of unanswered requests: ours to the agent (keyed by the
//! [`RequestId`] we chose) and the agent's to us (keyed by a token we hand
//! to the host, because the agent's ids may be any JSON value). Each entry may
//! carry a timer; whoever takes the entry first (answer, timeout,
//! cancellation) wins and the timer is stopped, so every request is
//! settled exactly once.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use tokio::task::AbortHandle;

use super::deadlines::Deadline;
use super::{AgentRequestId, RequestId};

/// What stops with an entry taken: its timeout, or the task doing its work.
#[derive(Debug)]
pub enum Timer {
    Deadline(Deadline),
    Task(AbortHandle),
}

impl Timer {
    fn stop(self) {
        match self {
            Timer::Deadline(deadline) => deadline.stop(),
            Timer::Task(task) => task.abort(),
        }
    }
}

/// A request we sent and still wait on.
#[derive(Debug)]
pub struct OutgoingRequest {
    pub method: Box<str>,
    pub sent: Instant,
    /// Its timeout; stopped when the answer arrives first.
    pub timer: Option<Timer>,
}

/// A request from the agent the host has not answered yet.
#[derive(Debug)]
pub struct IncomingRequest {
    /// The agent's id, echoed in the answer.
    pub id: AgentRequestId,
    pub method: Box<str>,
    pub session_id: Option<Box<str>>,
    pub received: Instant,
    /// Size of the request line: what it holds while it waits.
    pub bytes: usize,
    pub timer: Option<Timer>,
    /// The agent's params, kept when the host's handler was given them
    /// cut (see `acp::bounded_request`): the host reads them on demand.
    /// Counted in `bytes` already (they are part of the line).
    pub full_params: Option<std::sync::Arc<str>>,
}

pub trait Timed {
    fn timer(&mut self) -> &mut Option<Timer>;
    /// A second key the entry can be found by in O(1) (the agent's wire id).
    fn alias(&self) -> Option<&str> {
        None
    }
    /// What the entry counts against the table's byte total.
    fn weight(&self) -> usize {
        0
    }
}

impl Timed for OutgoingRequest {
    fn timer(&mut self) -> &mut Option<Timer> {
        &mut self.timer
    }
}

impl Timed for IncomingRequest {
    fn timer(&mut self) -> &mut Option<Timer> {
        &mut self.timer
    }
    fn alias(&self) -> Option<&str> {
        Some(self.id.as_str())
    }
    fn weight(&self) -> usize {
        self.bytes
    }
}

struct Inner<K, T> {
    map: HashMap<K, T>,
    /// alias → key, for entries that have one: a lookup by wire id must
    /// not scan the table (an agent can send thousands of cancels).
    aliases: HashMap<Box<str>, K>,
    /// Sum of the entries' weights.
    weight: usize,
}

/// Unanswered requests keyed by an id, each with an optional timer.
pub struct PendingTable<K, T> {
    inner: Mutex<Inner<K, T>>,
}

impl<K, T> std::fmt::Debug for PendingTable<K, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PendingTable")
    }
}

pub type OutgoingTable = PendingTable<RequestId, OutgoingRequest>;
/// Keyed by the token the host answers with.
pub type IncomingTable = PendingTable<u64, IncomingRequest>;

impl<K, T> Default for PendingTable<K, T> {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                aliases: HashMap::new(),
                weight: 0,
            }),
        }
    }
}

fn stopped<T: Timed>(mut entry: T) -> T {
    if let Some(t) = entry.timer().take() {
        t.stop();
    }
    entry
}

/// What a table can be keyed by.
pub trait Key: Copy + Eq + Hash + Ord {}

impl<K: Copy + Eq + Hash + Ord> Key for K {}

impl<K: Key, T: Timed> Inner<K, T> {
    fn remove(&mut self, key: K) -> Option<T> {
        let entry = self.map.remove(&key)?;
        if let Some(alias) = entry.alias() {
            if self.aliases.get(alias) == Some(&key) {
                self.aliases.remove(alias);
            }
        }
        self.weight -= entry.weight();
        Some(stopped(entry))
    }
}

/// Why [`PendingTable::insert_within`] refused an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// `count` entries are waiting already.
    Count(usize),
    /// `bytes` are waiting already.
    Bytes(usize),
}

impl<K: Key, T: Timed> PendingTable<K, T> {
    fn lock(&self) -> MutexGuard<'_, Inner<K, T>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn insert(&self, key: K, entry: T) {
        let mut inner = self.lock();
        if let Some(alias) = entry.alias() {
            inner.aliases.insert(alias.into(), key);
        }
        inner.weight += entry.weight();
        if let Some(old) = inner.map.insert(key, entry) {
            inner.weight -= old.weight();
        }
    }

    /// Insert unless the table holds `max_count` entries, or the entry
    /// would take it over `max_bytes` (an empty table takes any one entry,
    /// so a single big request is never refused).
    pub fn insert_within(
        &self,
        key: K,
        entry: T,
        max_count: usize,
        max_bytes: usize,
    ) -> Result<(), (Full, T)> {
        let inner = self.lock();
        if inner.map.len() >= max_count {
            return Err((Full::Count(inner.map.len()), entry));
        }
        if inner.weight > 0 && inner.weight + entry.weight() > max_bytes {
            return Err((Full::Bytes(inner.weight), entry));
        }
        drop(inner);
        self.insert(key, entry);
        Ok(())
    }

    /// Attach the timer after the entry was registered (it may already be
    /// gone: then the timer is stopped at once).
    pub fn set_timer(&self, key: K, timer: Timer) {
        match self.lock().map.get_mut(&key) {
            Some(entry) => *entry.timer() = Some(timer),
            None => timer.stop(),
        }
    }

    pub fn take(&self, key: K) -> Option<T> {
        self.lock().remove(key)
    }

    /// Take every entry `pick` selects, in key order.
    pub fn take_where(&self, pick: impl Fn(&T) -> bool) -> Vec<(K, T)> {
        let mut inner = self.lock();
        let mut keys: Vec<K> = inner
            .map
            .iter()
            .filter(|(_, e)| pick(e))
            .map(|(k, _)| *k)
            .collect();
        keys.sort_unstable();
        keys.into_iter()
            .filter_map(|k| inner.remove(k).map(|e| (k, e)))
            .collect()
    }

    /// Take everything, in key order.
    pub fn drain(&self) -> Vec<(K, T)> {
        self.take_where(|_| true)
    }

    /// How many entries there are per `key` (e.g. per method), sorted.
    pub fn count_by(&self, key: impl Fn(&T) -> &str) -> Vec<(String, usize)> {
        let mut counts = std::collections::BTreeMap::<String, usize>::new();
        for entry in self.lock().map.values() {
            *counts.entry(key(entry).to_string()).or_default() += 1;
        }
        counts.into_iter().collect()
    }

    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Take the entry whose alias is exactly `alias` (the newest, should
    /// an agent reuse a wire id while the first is still pending).
    pub fn take_by_alias(&self, alias: &str) -> Option<(K, T)> {
        let mut inner = self.lock();
        let key = *inner.aliases.get(alias)?;
        inner.remove(key).map(|e| (key, e))
    }
}

impl IncomingTable {
    /// Keep the full params of request `key` (delivered cut to the host).
    pub fn keep_params(&self, key: u64, params: &str) {
        if let Some(entry) = self.lock().map.get_mut(&key) {
            entry.full_params = Some(params.into());
        }
    }

    /// The full params kept for request `key`, while it waits.
    pub fn full_params(&self, key: u64) -> Option<std::sync::Arc<str>> {
        self.lock().map.get(&key)?.full_params.clone()
    }

    /// Take every request of `session_id` whose method `pick` selects.
    pub fn take_session(
        &self,
        session_id: &str,
        pick: impl Fn(&str) -> bool,
    ) -> Vec<(u64, IncomingRequest)> {
        self.take_where(|r| r.session_id.as_deref() == Some(session_id) && pick(&r.method))
    }

    /// Take the request whose wire id is exactly `id` (raw JSON).
    pub fn take_by_wire_id(&self, id: &str) -> Option<(u64, IncomingRequest)> {
        self.take_by_alias(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: &str, bytes: usize) -> IncomingRequest {
        IncomingRequest {
            id: AgentRequestId::new(id),
            method: "m".into(),
            session_id: None,
            received: Instant::now(),
            bytes,
            timer: None,
            full_params: None,
        }
    }

    #[test]
    fn lookups_by_wire_id_and_the_caps() {
        let t = IncomingTable::default();
        t.insert(1, req("\"a\"", 10));
        t.insert(2, req("7", 10));
        // A reused wire id finds the newest entry; the older one stays.
        t.insert(3, req("7", 10));
        assert_eq!(t.take_by_wire_id("7").map(|(k, _)| k), Some(3));
        assert_eq!(t.take_by_wire_id("7").map(|(k, _)| k), None);
        assert_eq!(t.take(2).map(|r| r.bytes), Some(10));
        assert!(t.take_by_wire_id("\"b\"").is_none());
        // Caps: count, then bytes; an empty table takes anything.
        assert!(matches!(
            t.insert_within(4, req("4", 10), 1, 100),
            Err((Full::Count(1), _))
        ));
        assert_eq!(t.take_by_wire_id("\"a\"").map(|(k, _)| k), Some(1));
        assert!(t.insert_within(5, req("5", 1000), 2, 100).is_ok());
        assert!(matches!(
            t.insert_within(6, req("6", 1), 2, 100),
            Err((Full::Bytes(1000), _))
        ));
        t.drain();
        assert!(t.insert_within(7, req("7", 50), 2, 100).is_ok());
        assert!(t.insert_within(8, req("8", 50), 2, 100).is_ok());
        assert_eq!(t.len(), 2);
    }
}
