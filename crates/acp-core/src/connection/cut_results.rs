//! The full results of our requests whose answers the host was given cut
//! (see `acp::bounded_result`): each waits here from the reader's cut to
//! the host's handling of that answer, which takes it (the host then keeps
//! it as long as it keeps the result). Whatever the host never takes (a
//! batch of a process it no longer follows) goes when it releases the
//! connection, or with the connection.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::rpc::RequestId;

#[derive(Debug, Default)]
pub(super) struct CutResults(Mutex<HashMap<RequestId, String>>);

impl CutResults {
    pub fn keep(&self, id: RequestId, full: String) {
        self.lock().insert(id, full);
    }

    pub fn take(&self, id: RequestId) -> Option<String> {
        self.lock().remove(&id)
    }

    pub fn clear(&self) {
        // Dropped outside the lock: freeing big texts takes a while.
        let all = std::mem::take(&mut *self.lock());
        drop(all);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taken_once_and_cleared() {
        let t = CutResults::default();
        t.keep(RequestId::new(1), "a".into());
        t.keep(RequestId::new(2), "b".into());
        assert_eq!(t.take(RequestId::new(1)).as_deref(), Some("a"));
        assert_eq!(t.take(RequestId::new(1)), None);
        t.clear();
        assert_eq!(t.take(RequestId::new(2)), None);
    }
}
