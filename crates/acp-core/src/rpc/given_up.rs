//! Ids of our requests the host gave up on (timeout, abort). The agent may
//! still answer them — the spec says a cancelled request gets a response —
//! and that answer is expected, not a protocol error. Bounded: an agent
//! that never answers cannot grow it.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use super::RequestId;

/// Given-up ids remembered, at most (the oldest are forgotten first).
pub const GIVEN_UP_CAPACITY: usize = 1024;

#[derive(Debug, Default)]
pub struct GivenUp {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    ids: HashSet<RequestId>,
    order: VecDeque<RequestId>,
}

impl GivenUp {
    pub fn insert(&self, id: RequestId) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if !inner.ids.insert(id) {
            return;
        }
        inner.order.push_back(id);
        while inner.order.len() > GIVEN_UP_CAPACITY {
            if let Some(old) = inner.order.pop_front() {
                inner.ids.remove(&old);
            }
        }
    }

    /// Was `id` given up on? Forgets it: a second answer is a real error.
    pub fn take(&self, id: RequestId) -> bool {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if !inner.ids.remove(&id) {
            return false;
        }
        inner.order.retain(|&x| x != id);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_once_and_forgets_the_oldest() {
        let g = GivenUp::default();
        let id = RequestId::new;
        g.insert(id(1));
        assert!(g.take(id(1)));
        assert!(!g.take(id(1)), "a second answer is not expected");
        for n in 0..(GIVEN_UP_CAPACITY as u64 + 10) {
            g.insert(id(n));
        }
        assert!(!g.take(id(5)), "the oldest were forgotten");
        assert!(g.take(id(GIVEN_UP_CAPACITY as u64 + 9)));
    }
}
