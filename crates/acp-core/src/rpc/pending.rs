//! The two tables of unanswered requests: ours to the agent (keyed by the
//! numeric id we chose) and the agent's to us (keyed by a token we hand to
//! the host, because the agent's ids may be any JSON value).

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::task::AbortHandle;

/// A request we sent and still wait on.
#[derive(Debug)]
pub struct OutgoingRequest {
    pub method: Box<str>,
    /// Fires the timeout; aborted when the answer arrives first.
    pub timer: Option<AbortHandle>,
}

#[derive(Debug, Default)]
pub struct OutgoingTable {
    map: Mutex<HashMap<u64, OutgoingRequest>>,
}

impl OutgoingTable {
    pub fn insert(&self, id: u64, req: OutgoingRequest) {
        lock(&self.map).insert(id, req);
    }

    /// Attach the timeout timer after the request was registered.
    pub fn set_timer(&self, id: u64, timer: AbortHandle) {
        match lock(&self.map).get_mut(&id) {
            Some(req) => req.timer = Some(timer),
            None => timer.abort(),
        }
    }

    /// Take the entry (answer, timeout or cancellation: whoever comes first
    /// wins, so every request is settled exactly once).
    pub fn take(&self, id: u64) -> Option<OutgoingRequest> {
        let req = lock(&self.map).remove(&id)?;
        if let Some(t) = &req.timer {
            t.abort();
        }
        Some(req)
    }

    pub fn drain(&self) -> Vec<(u64, OutgoingRequest)> {
        let mut all: Vec<_> = lock(&self.map).drain().collect();
        for (_, req) in &all {
            if let Some(t) = &req.timer {
                t.abort();
            }
        }
        all.sort_by_key(|(id, _)| *id);
        all
    }

    pub fn len(&self) -> usize {
        lock(&self.map).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A request from the agent the host has not answered yet.
#[derive(Debug)]
pub struct IncomingRequest {
    /// The agent's id, exactly as it was on the wire.
    pub raw_id: Box<str>,
    pub method: Box<str>,
    pub session_id: Option<Box<str>>,
    pub timer: Option<AbortHandle>,
}

#[derive(Debug, Default)]
pub struct IncomingTable {
    map: Mutex<HashMap<u64, IncomingRequest>>,
}

impl IncomingTable {
    pub fn insert(&self, token: u64, req: IncomingRequest) {
        lock(&self.map).insert(token, req);
    }

    pub fn set_timer(&self, token: u64, timer: AbortHandle) {
        match lock(&self.map).get_mut(&token) {
            Some(req) => req.timer = Some(timer),
            None => timer.abort(),
        }
    }

    pub fn take(&self, token: u64) -> Option<IncomingRequest> {
        let req = lock(&self.map).remove(&token)?;
        if let Some(t) = &req.timer {
            t.abort();
        }
        Some(req)
    }

    /// Take every request of `session_id` that `pick` selects.
    pub fn take_session(
        &self,
        session_id: &str,
        pick: impl Fn(&str) -> bool,
    ) -> Vec<(u64, IncomingRequest)> {
        let mut map = lock(&self.map);
        let tokens: Vec<u64> = map
            .iter()
            .filter(|(_, r)| r.session_id.as_deref() == Some(session_id) && pick(&r.method))
            .map(|(t, _)| *t)
            .collect();
        let mut taken: Vec<_> = tokens
            .into_iter()
            .filter_map(|t| map.remove(&t).map(|r| (t, r)))
            .collect();
        taken.sort_by_key(|(t, _)| *t);
        for (_, r) in &taken {
            if let Some(t) = &r.timer {
                t.abort();
            }
        }
        taken
    }

    pub fn drain(&self) -> Vec<(u64, IncomingRequest)> {
        let all: Vec<_> = lock(&self.map).drain().collect();
        for (_, r) in &all {
            if let Some(t) = &r.timer {
                t.abort();
            }
        }
        all
    }

    pub fn len(&self) -> usize {
        lock(&self.map).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl IncomingTable {
    /// Take the request whose wire id is exactly `raw_id`.
    pub fn take_by_raw_id(&self, raw_id: &str) -> Option<(u64, IncomingRequest)> {
        let mut map = lock(&self.map);
        let token = *map.iter().find(|(_, r)| &*r.raw_id == raw_id)?.0;
        let req = map.remove(&token)?;
        if let Some(t) = &req.timer {
            t.abort();
        }
        Some((token, req))
    }
}
