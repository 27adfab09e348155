//! Who waits on whom: our requests to the agent and the agent's to the
//! host, their ids and tokens, and the caps on the agent's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::config::ConnectionConfig;
use super::cut_results::CutResults;
use crate::acp::{self, methods, Reply};
use crate::rpc::{Deadlines, GivenUp, IncomingTable, OutgoingTable, RequestId, RequestIds};

pub(super) struct Requests {
    pub ids: RequestIds,
    pub outgoing: OutgoingTable,
    /// The timeouts of both tables' entries.
    pub timeouts: Arc<Deadlines<Timeout>>,
    /// Our requests the host stopped waiting for (timeout, abort).
    pub given_up: GivenUp,
    /// Agent requests, by the token the host answers with.
    pub incoming: IncomingTable,
    /// Results of ours bigger than this reach the host cut.
    pub result_budget: usize,
    /// The full results of those, until the host takes them.
    pub cut_results: CutResults,
    next_token: AtomicU64,
    /// How long a host handler may take before it is answered for.
    pub handler_timeout: Option<Duration>,
    /// Agent requests that may wait for an answer at once.
    pub caps: PendingCaps,
    /// Refusing agent requests since the last one was taken in (the host
    /// hears once per episode, not once per refused request).
    refusing: AtomicBool,
    /// Agent requests refused so far.
    refused: AtomicU64,
    /// Host-given cancelled results of extension requests, by method.
    cancelled_results: HashMap<String, String>,
}

/// What a timeout that came due is about.
pub(super) enum Timeout {
    /// Our request got no answer.
    Request { id: RequestId, timeout: Duration },
    /// The host's handler did not answer the agent's request.
    Handler { token: u64, timeout: Duration },
}

impl Drop for Requests {
    /// The timeouts' task ends with the connection.
    fn drop(&mut self) {
        self.timeouts.close();
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct PendingCaps {
    pub count: usize,
    pub bytes: usize,
    /// Params bigger than this reach a host handler cut.
    pub handler_params: usize,
}

impl Requests {
    pub fn new(config: &ConnectionConfig) -> Self {
        Self {
            ids: RequestIds::default(),
            outgoing: Default::default(),
            timeouts: Deadlines::new(),
            given_up: Default::default(),
            incoming: Default::default(),
            result_budget: config.max_result_bytes,
            cut_results: Default::default(),
            next_token: AtomicU64::new(1),
            handler_timeout: config.handler_timeout.filter(|d| !d.is_zero()),
            caps: PendingCaps {
                count: config.max_pending_agent_requests.max(1),
                bytes: config.max_pending_agent_request_bytes,
                handler_params: config.max_handler_params_bytes,
            },
            refusing: AtomicBool::new(false),
            refused: AtomicU64::new(0),
            cancelled_results: config.cancelled_results.clone(),
        }
    }

    /// A new token for an agent request.
    pub fn next_token(&self) -> u64 {
        self.next_token.fetch_add(1, Ordering::Relaxed)
    }

    /// An agent request was taken in: a later refusal starts a new episode.
    pub fn taken_in(&self) {
        self.refusing.store(false, Ordering::Relaxed);
    }

    /// An agent request was refused: the total so far, and whether it is
    /// the first of its episode (the host is told then).
    pub fn refused_one(&self) -> (u64, bool) {
        let total = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
        (total, !self.refusing.swap(true, Ordering::Relaxed))
    }

    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// What `cancel_session` answers an agent request of `method` with.
    pub fn cancelled_reply(&self, method: &str) -> Reply {
        match self.cancelled_results.get(method) {
            Some(result) if methods::is_extension(method) => Reply::Result(result.clone()),
            _ => acp::cancelled_reply(method),
        }
    }
}
