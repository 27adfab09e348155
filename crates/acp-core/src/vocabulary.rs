//! The words a host reads: every error code and every event of an
//! `AcpClient` or a `SessionView`, each with its one-line meaning. Written here once; the binding hands
//! the lists to JS (`vocabulary()`), and a test
//! (`__test__/vocabulary.test.mjs`) checks `index.d.ts`, the docs and
//! every place that spells a code or emits an event against them.

/// Declares an enum whose variants each carry a name and a meaning, with
/// `ALL` (in declaration order), `as_str()` and `meaning()`.
macro_rules! words {
    ($(#[$doc:meta])* $enum:ident { $($variant:ident => $name:literal, $meaning:literal;)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $enum {
            $($variant,)+
        }

        impl $enum {
            /// Every one, in the order of the docs.
            pub const ALL: &'static [$enum] = &[$($enum::$variant,)+];

            /// The name as JS sees it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($enum::$variant => $name,)+
                }
            }

            /// What it means, in one line.
            pub const fn meaning(self) -> &'static str {
                match self {
                    $($enum::$variant => $meaning,)+
                }
            }
        }
    };
}

words! {
    /// The `code` of an `AcpError` (and of `status().lastError`).
    ErrorCode {
        Rpc => "ERR_ACP_RPC", "the agent answered with a JSON-RPC error";
        Spawn => "ERR_ACP_SPAWN", "the agent could not be started";
        Closed => "ERR_ACP_CLOSED", "the agent exited or was closed before answering; every later call";
        Timeout => "ERR_ACP_TIMEOUT", "no answer within the timeout (the request is cancelled on the wire)";
        Protocol => "ERR_ACP_PROTOCOL", "the agent broke the protocol (e.g. another protocolVersion)";
        Aborted => "ERR_ACP_ABORTED", "the call's AbortSignal fired";
        Backpressure => "ERR_ACP_BACKPRESSURE", "the agent does not read its stdin and the write queue is full";
        InvalidArgument => "ERR_ACP_INVALID_ARGUMENT", "a call cannot be sent as given (nothing was sent)";
        NativeBinding => "ERR_ACP_NATIVE_BINDING", "the native binary could not be loaded";
        StoreCorrupt => "ERR_ACP_STORE_CORRUPT", "the session store file is not an SQLite database, or is damaged";
        StoreForeign => "ERR_ACP_STORE_FOREIGN", "the store file is another program's SQLite database";
        StoreNewer => "ERR_ACP_STORE_NEWER", "the store file was written by a newer acp-native";
        StoreBusy => "ERR_ACP_STORE_BUSY", "another process held the store's write lock too long";
        StoreFull => "ERR_ACP_STORE_FULL", "the disk holding the store is full";
        StoreNotFound => "ERR_ACP_STORE_NOT_FOUND", "no stored session with that id";
        StoreClosed => "ERR_ACP_STORE_CLOSED", "the store was closed";
        StoreIo => "ERR_ACP_STORE_IO", "any other failure reading or writing the store";
        UnsafePath => "ERR_ACP_UNSAFE_PATH", "a file to write has a symlink, FIFO, device, directory or socket at its path";
        AgentIndex => "ERR_ACP_AGENT_INDEX", "the agent index is malformed, after its fallbacks";
        AgentNotFound => "ERR_ACP_AGENT_NOT_FOUND", "no agent of that id in the index or the presets";
        AgentNotInstalled => "ERR_ACP_AGENT_NOT_INSTALLED", "a launch with `install: false` of an agent that is not installed";
        AgentDownload => "ERR_ACP_AGENT_DOWNLOAD", "a download failed, stalled, was cut short, was too big or came re-encoded";
        AgentIntegrity => "ERR_ACP_AGENT_INTEGRITY", "a download's SHA-256 is not the one the index gives";
        AgentArchive => "ERR_ACP_AGENT_ARCHIVE", "an archive breaks an extraction rule";
        AgentInstall => "ERR_ACP_AGENT_INSTALL", "npm or pip failed, no distribution for this platform, or no entry point";
        Handler => "ERR_ACP_HANDLER", "one of the host's callbacks threw or rejected";
        Unknown => "ERR_ACP_UNKNOWN", "something failed without a code";
    }
}

impl ErrorCode {
    /// Thrown at the host (an `AcpError`), or only ever seen in
    /// `status().lastError`: a callback's own failure is not the call's.
    pub const fn thrown(self) -> bool {
        !matches!(self, ErrorCode::Handler | ErrorCode::Unknown)
    }
}

words! {
    /// An event an `AcpClient` emits (its `AcpClientEvents` in index.d.ts).
    ClientEvent {
        Exit => "exit", "the current agent process is gone; every pending call has settled";
        Stderr => "stderr", "a line the agent wrote to stderr";
        ProtocolNoise => "protocolNoise", "a non-JSON line on stdout";
        ProtocolError => "protocolError", "a line that is not usable JSON-RPC";
        RequestRefused => "requestRefused", "agent requests are being refused: too many wait for an answer";
        ReadError => "readError", "reading the agent's stdout or stderr failed (not EOF)";
        Restart => "restart", "the restart policy started a new agent process";
        RestartFailed => "restartFailed", "the restart policy gave up";
        Recovering => "recovering", "`recover()` started on a stored session";
        Recovered => "recovered", "the stored session continues";
        RecoveryFailed => "recoveryFailed", "`recover()` could not continue the stored session";
        HandlerError => "handlerError", "a host callback threw or rejected";
        State => "state", "the lifecycle state changed";
    }
}

words! {
    /// An event a `SessionView` emits (its `SessionViewEvents` in
    /// types/session-view.d.ts).
    ViewEvent {
        Change => "change", "what changed in the view since the previous event";
        Reset => "reset", "the agent process was restarted: the view starts over, empty";
    }
}

/// The lists as JSON: `{"errorCodes": [{code, meaning, thrown}],
/// "events": [{name, meaning}], "viewEvents": [{name, meaning}]}`.
pub fn to_json() -> String {
    let codes: Vec<_> = ErrorCode::ALL
        .iter()
        .map(|c| serde_json::json!({"code": c.as_str(), "meaning": c.meaning(), "thrown": c.thrown()}))
        .collect();
    let events: Vec<_> = ClientEvent::ALL
        .iter()
        .map(|e| serde_json::json!({"name": e.as_str(), "meaning": e.meaning()}))
        .collect();
    let view_events: Vec<_> = ViewEvent::ALL
        .iter()
        .map(|e| serde_json::json!({"name": e.as_str(), "meaning": e.meaning()}))
        .collect();
    serde_json::json!({"errorCodes": codes, "events": events, "viewEvents": view_events})
        .to_string()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn names_are_unique_and_codes_are_spelled_alike() {
        let codes: HashSet<_> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(codes.len(), ErrorCode::ALL.len());
        for code in &codes {
            let rest = code.strip_prefix("ERR_ACP_").expect("ERR_ACP_ prefix");
            assert!(
                !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
                "{code}"
            );
        }
        let events: HashSet<_> = ClientEvent::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(events.len(), ClientEvent::ALL.len());
        let view_events: HashSet<_> = ViewEvent::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(view_events.len(), ViewEvent::ALL.len());
        let all = ErrorCode::ALL.iter().map(|c| c.meaning());
        assert!(all
            .chain(ClientEvent::ALL.iter().map(|e| e.meaning()))
            .chain(ViewEvent::ALL.iter().map(|e| e.meaning()))
            .all(|m| !m.is_empty() && !m.contains('\n')));
    }
}
