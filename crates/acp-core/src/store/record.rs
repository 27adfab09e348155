//! What the store keeps of a session, as the host hands it over.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

/// A session to start recording.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// The store's id (see [`new_store_id`]): ours, so that a session
    /// recovered as a fresh agent session keeps it.
    pub id: String,
    /// JSON: how the agent was started and who it said it was
    /// (`{command, args, name, version}`).
    pub agent: String,
    pub agent_session_id: Option<String>,
    pub cwd: Option<String>,
    /// JSON: the agent's `agentCapabilities`.
    pub capabilities: Option<String>,
    pub title: Option<String>,
    /// The stored session this one was forked from.
    pub forked_from: Option<String>,
    /// JSON: a view to start from (a fork's, or a recovered session's).
    pub view: Option<String>,
}

/// Fields of a stored session to change; `None` leaves one as it is.
#[derive(Debug, Clone, Default)]
pub struct SessionPatch {
    pub agent: Option<String>,
    pub agent_session_id: Option<String>,
    pub capabilities: Option<String>,
    pub title: Option<String>,
    /// `open`, `closed` or `interrupted` (a turn was cut by the agent's
    /// death or the host's).
    pub state: Option<String>,
}

/// What a journal record is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalKind {
    /// The host sent a prompt: `{prompt: ContentBlock[]}`.
    Prompt,
    /// A turn ended: `{stopReason}` or `{error}`.
    TurnEnd,
    /// A turn was cut: the agent died, or the host did.
    Interrupted,
    /// The session was recovered: `{how, agentSessionId}`.
    Recovered,
}

impl JournalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            JournalKind::Prompt => "prompt",
            JournalKind::TurnEnd => "turn_end",
            JournalKind::Interrupted => "interrupted",
            JournalKind::Recovered => "recovered",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "prompt" => JournalKind::Prompt,
            "turn_end" => JournalKind::TurnEnd,
            "interrupted" => JournalKind::Interrupted,
            "recovered" => JournalKind::Recovered,
            _ => return None,
        })
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A new store id: `s_` and 32 hex digits, random (std's hash keys are
/// seeded from the OS's randomness) and time-ordered in no way.
pub fn new_store_id() -> String {
    let mut out = String::from("s_");
    for _ in 0..2 {
        let mut h = RandomState::new().build_hasher();
        h.write_i64(now_ms());
        h.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out
}
