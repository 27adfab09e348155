//! Request ids: ours, which we count, and the agent's, which we echo.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// The id of a request we sent the agent: a number we chose, on the wire
/// as a JSON integer, and the key the host's answers and timeouts use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(u64);

impl RequestId {
    pub const fn new(n: u64) -> Self {
        Self(n)
    }

    pub const fn get(self) -> u64 {
        self.0
    }

    /// The id of an answer, as it was on the wire (raw JSON), if it can be
    /// one of ours (a plain integer).
    pub fn from_wire(raw: &str) -> Option<Self> {
        raw.parse::<u64>().ok().map(Self)
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Hands out our request ids, from 1, each once.
#[derive(Debug)]
pub struct RequestIds(AtomicU64);

impl Default for RequestIds {
    fn default() -> Self {
        Self(AtomicU64::new(1))
    }
}

impl RequestIds {
    pub fn next(&self) -> RequestId {
        RequestId(self.0.fetch_add(1, Ordering::Relaxed))
    }
}

/// The id of a request the agent sent us, exactly as it was on the wire
/// (any JSON value): echoed back unchanged in the answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AgentRequestId(Box<str>);

impl AgentRequestId {
    pub fn new(raw: &str) -> Self {
        Self(raw.into())
    }

    /// The raw JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentRequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_ids_count_from_one_and_read_back_from_the_wire() {
        let ids = RequestIds::default();
        assert_eq!(ids.next(), RequestId::new(1));
        assert_eq!(ids.next().to_string(), "2");
        assert_eq!(RequestId::from_wire("7"), Some(RequestId::new(7)));
        assert_eq!(RequestId::from_wire("\"7\""), None);
        assert_eq!(AgentRequestId::new("\"srv_1\"").to_string(), "\"srv_1\"");
    }
}
