//! Timeouts of many requests kept by one task that sleeps until the
//! earliest. A task (and a timer) per request would make every call from
//! the host's thread wake the runtime's worker to start it; arming a
//! deadline here takes a lock and wakes the task only when the new one is
//! due before the one it already sleeps until (with one timeout for all
//! calls, only the first of a quiet stretch).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::Notify;
// The runtime's clock: the same as std's, except in tests that pause it.
use tokio::time::Instant;

/// When a deadline is due, and its place among those due together.
type Key = (Instant, u64);

/// Far enough for any timeout a host can ask for, near enough never to
/// overflow the clock.
const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

pub struct Deadlines<T> {
    state: Mutex<State<T>>,
    wake: Notify,
}

struct State<T> {
    due: BTreeMap<Key, T>,
    next_seq: u64,
    /// When the task looks next; `None` while it waits for a wake.
    /// Stopping a deadline leaves this as it is: the task then wakes once
    /// for nothing, which costs less than waking it to sleep longer.
    armed: Option<Instant>,
    closed: bool,
}

/// One armed deadline; [`Deadline::stop`] takes it out before it is due.
pub struct Deadline {
    key: Key,
    owner: Weak<dyn Stop>,
}

impl std::fmt::Debug for Deadline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deadline").field("at", &self.key.0).finish()
    }
}

trait Stop: Send + Sync {
    fn stop(&self, key: Key);
}

impl Deadline {
    /// Take it out (a no-op once it fired or the table closed).
    pub fn stop(self) {
        if let Some(owner) = self.owner.upgrade() {
            owner.stop(self.key);
        }
    }
}

impl<T: Send + 'static> Stop for Deadlines<T> {
    fn stop(&self, key: Key) {
        // Dropped outside the lock: an entry's drop may take other locks.
        let _gone = self.lock().due.remove(&key);
    }
}

impl<T: Send + 'static> Deadlines<T> {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                due: BTreeMap::new(),
                next_seq: 0,
                armed: None,
                closed: false,
            }),
            wake: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `what` is handed to [`Self::run`]'s `fire` after `after`, unless
    /// stopped first. Once closed, nothing fires (the handle is inert).
    pub fn arm(self: &Arc<Self>, after: Duration, what: T) -> Deadline {
        let now = Instant::now();
        let at = now.checked_add(after).unwrap_or_else(|| now + FAR);
        let mut state = self.lock();
        let key = (at, state.next_seq);
        state.next_seq += 1;
        let wake = !state.closed && !matches!(state.armed, Some(armed) if armed <= at);
        if !state.closed {
            state.due.insert(key, what);
        }
        if wake {
            state.armed = Some(at);
        }
        drop(state);
        if wake {
            self.wake.notify_one();
        }
        let owner: Weak<dyn Stop> = Arc::downgrade(self) as Weak<dyn Stop>;
        Deadline { key, owner }
    }

    /// Fire what is due, in deadline order, until [`Self::close`].
    pub async fn run(&self, mut fire: impl FnMut(T)) {
        let mut expired = Vec::new();
        loop {
            let next = {
                let mut state = self.lock();
                if state.closed {
                    return;
                }
                let now = Instant::now();
                while let Some(entry) = state.due.first_entry() {
                    if entry.key().0 > now {
                        break;
                    }
                    expired.push(entry.remove());
                }
                state.armed = state.due.keys().next().map(|k| k.0);
                state.armed
            };
            for what in expired.drain(..) {
                fire(what);
            }
            match next {
                Some(at) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = self.wake.notified() => {}
                    }
                }
                None => self.wake.notified().await,
            }
        }
    }

    /// Nothing fires any more, and [`Self::run`] returns.
    pub fn close(&self) {
        let gone = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.due)
        };
        drop(gone);
        self.wake.notify_one();
    }

    /// How many are armed.
    pub fn len(&self) -> usize {
        self.lock().due.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(start_paused = true)]
    async fn fires_in_order_skips_the_stopped_and_ends_on_close() {
        let deadlines = Deadlines::<u32>::new();
        let fired = Arc::new(Mutex::new(Vec::new()));
        let runner = {
            let (deadlines, fired) = (Arc::clone(&deadlines), Arc::clone(&fired));
            tokio::spawn(async move { deadlines.run(|n| fired.lock().unwrap().push(n)).await })
        };
        let late = deadlines.arm(Duration::from_secs(30), 30);
        let stopped = deadlines.arm(Duration::from_secs(10), 10);
        // Armed after the task went to sleep for the 30 s one: due first.
        let _early = deadlines.arm(Duration::from_secs(5), 5);
        stopped.stop();
        assert_eq!(deadlines.len(), 2);
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert_eq!(*fired.lock().unwrap(), vec![5]);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(*fired.lock().unwrap(), vec![5, 30]);
        // Stopping one that fired already is a no-op.
        late.stop();
        let _never = deadlines.arm(Duration::from_secs(1), 1);
        deadlines.close();
        runner.await.unwrap();
        assert!(deadlines.is_empty());
        assert_eq!(*fired.lock().unwrap(), vec![5, 30]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_quiet_task_still_sees_a_new_earlier_deadline() {
        let deadlines = Deadlines::<()>::new();
        let count = Arc::new(AtomicUsize::new(0));
        {
            let (deadlines, count) = (Arc::clone(&deadlines), Arc::clone(&count));
            tokio::spawn(async move {
                deadlines
                    .run(|()| {
                        count.fetch_add(1, Ordering::Relaxed);
                    })
                    .await
            });
        }
        // Let the task go to sleep with nothing armed.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let _one = deadlines.arm(Duration::from_millis(10), ());
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(count.load(Ordering::Relaxed), 1);
        deadlines.close();
    }
}
