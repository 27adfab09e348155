//! Built-in answers to the agent's `fs/*` and `terminal/*` requests, served
//! in Rust off the host's thread, for hosts that switch them on.
//!
//! Security model: every path (a file, a terminal's cwd) must resolve,
//! symlinks followed by the OS, inside an allowed root (by default the cwd
//! of the session the request names); the open then re-walks the path
//! without following symlinks ([`roots`], [`confined`]). Terminals run a
//! program with arguments directly and a command line alone through the
//! shell ([`shell`], unless switched off), in their own process tree,
//! which is killed on release and when the connection ends. A terminal's
//! command is still arbitrary code running as the host's user: the roots
//! confine where it starts, not what it does.

mod config;
mod confined;
mod error;
mod fs;
mod jobs;
mod lines;
mod output;
mod roots;
mod sessions;
mod shell;
mod terminal;
mod terminals;
#[cfg(windows)]
mod windows_names;

use std::collections::HashSet;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};

use serde::de::DeserializeOwned;

pub use config::{BuiltinConfig, FsConfig, TerminalConfig, DEFAULT_MAX_JOBS};
pub use error::{BuiltinError, RESOURCE_NOT_FOUND};
pub use jobs::{lower_thread_priority, BlockingWork, Cancel, Jobs};
pub use sessions::Sessions;

use crate::acp::methods::*;
use crate::acp::Reply;
use roots::Scope;
use terminals::Terminals;

/// A request the built-ins took on: answered already, once the future
/// resolves, or by blocking work the caller runs in one of [`Jobs`]' slots
/// on the blocking pool.
pub enum Started {
    Done(Reply),
    Later(Pin<Box<dyn Future<Output = Reply> + Send + 'static>>),
    Blocking(BlockingWork),
}

pub struct Builtins {
    fs: Option<FsConfig>,
    terminals: Option<Terminals>,
    sessions: Sessions,
    jobs: Jobs,
    /// Methods the host answers itself: those are never served here.
    host_methods: Mutex<HashSet<String>>,
}

impl Builtins {
    pub fn new(config: BuiltinConfig) -> Self {
        Self {
            fs: config.fs,
            terminals: config.terminals.map(Terminals::new),
            sessions: Sessions::default(),
            jobs: Jobs::new(config.max_jobs),
            host_methods: Mutex::new(config.host_methods.into_iter().collect()),
        }
    }

    fn host(&self) -> MutexGuard<'_, HashSet<String>> {
        self.host_methods.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The methods switched on (host handlers aside): what `initialize`
    /// advertises together with the host's own handlers.
    pub fn methods(&self) -> Vec<&'static str> {
        let mut m = Vec::new();
        if let Some(fs) = &self.fs {
            m.push(FS_READ_TEXT_FILE);
            if !fs.read_only {
                m.push(FS_WRITE_TEXT_FILE);
            }
        }
        if self.terminals.is_some() {
            m.extend(TERMINAL_METHODS);
        }
        m
    }

    /// Whether a request for `method` is answered here rather than by the
    /// host. A host handler wins; for terminals a host handler for any of
    /// the five takes all five (the ids must come from one place).
    pub fn serves(&self, method: &str) -> bool {
        if self.fs.is_none() && self.terminals.is_none() {
            return false;
        }
        if !self.methods().contains(&method) {
            return false;
        }
        let host = self.host();
        if TERMINAL_METHODS.contains(&method) {
            !TERMINAL_METHODS.iter().any(|m| host.contains(*m))
        } else {
            !host.contains(method)
        }
    }

    /// The host registered (or dropped) its own handler for `method`.
    pub fn set_host_handler(&self, method: &str, handled: bool) {
        let mut host = self.host();
        if handled {
            host.insert(method.to_string());
        } else {
            host.remove(method);
        }
    }

    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// The slots blocking work runs in.
    pub fn jobs(&self) -> &Jobs {
        &self.jobs
    }

    /// Start answering one request (`params` is its JSON text). What can
    /// be done at once is (terminal calls, so they take effect in the
    /// order the agent sent them); file I/O and waiting for an exit come
    /// back as a future. Must run inside a tokio runtime.
    pub fn start(&self, method: &str, params: &str) -> Started {
        self.dispatch(method, params)
            .unwrap_or_else(|e| Started::Done(e.into_reply()))
    }

    fn dispatch(&self, method: &str, params: &str) -> Result<Started, BuiltinError> {
        let done = |r: Result<String, BuiltinError>| {
            Ok(Started::Done(
                r.map_or_else(BuiltinError::into_reply, Reply::Result),
            ))
        };
        match method {
            FS_READ_TEXT_FILE | FS_WRITE_TEXT_FILE => {
                let cfg = self.fs.as_ref().ok_or_else(|| not_served(method))?;
                let work: BlockingWork = if method == FS_READ_TEXT_FILE {
                    let p: fs::ReadParams = parse(params)?;
                    let scope = self.scope(&cfg.roots, &p.session_id)?;
                    let cfg = cfg.clone();
                    Box::new(move |cancel| fs::read(&scope, &cfg, &p, cancel))
                } else {
                    let p: fs::WriteParams = parse(params)?;
                    let scope = self.scope(&cfg.roots, &p.session_id)?;
                    let max = cfg.max_file_bytes;
                    Box::new(move |cancel| fs::write(&scope, max, &p, cancel))
                };
                Ok(Started::Blocking(work))
            }
            TERMINAL_CREATE => {
                let terminals = self.terminals.as_ref().ok_or_else(|| not_served(method))?;
                let p: terminals::CreateParams = parse(params)?;
                let scope = self.scope(&terminals.config().roots, &p.session_id)?;
                done(terminals.create(&scope, &p))
            }
            TERMINAL_OUTPUT | TERMINAL_WAIT_FOR_EXIT | TERMINAL_KILL | TERMINAL_RELEASE => {
                let terminals = self.terminals.as_ref().ok_or_else(|| not_served(method))?;
                let r: terminals::TerminalRef = parse(params)?;
                match method {
                    // The terminal is looked up now (in wire order); its
                    // reply, up to megabytes of escaped text, is built off
                    // the shared worker.
                    TERMINAL_OUTPUT => Ok(Started::Blocking(terminals.output(&r)?)),
                    TERMINAL_KILL => done(terminals.kill(&r)),
                    TERMINAL_RELEASE => done(terminals.release(&r)),
                    _ => {
                        let exited = terminals.wait_for_exit(&r)?;
                        Ok(Started::Later(Box::pin(async move {
                            Reply::Result(exited.await.to_json().to_string())
                        })))
                    }
                }
            }
            _ => Err(not_served(method)),
        }
    }

    /// Where a session's requests may reach: the configured roots, or the
    /// session's cwd and `additionalDirectories`. Relative paths are taken
    /// against the session's cwd.
    fn scope(&self, roots: &[PathBuf], session_id: &str) -> Result<Scope, BuiltinError> {
        let workspace = self.sessions.workspace(session_id);
        match (roots.first(), workspace) {
            (Some(first), workspace) => Ok(Scope {
                base: workspace.map_or_else(|| first.clone(), |w| w.cwd),
                roots: roots.to_vec(),
            }),
            (None, Some(w)) => Ok(Scope {
                roots: std::iter::once(w.cwd.clone()).chain(w.additional).collect(),
                base: w.cwd,
            }),
            (None, None) => Err(BuiltinError::not_found(format!(
                "unknown session {session_id}: no cwd known for it (sessions are learnt from \
                 session/new and session/load sent by this client)"
            ))),
        }
    }

    /// Kill every terminal now; synchronous (exit hooks, teardown).
    pub fn shutdown(&self) {
        if let Some(t) = &self.terminals {
            t.kill_all();
        }
    }

    /// Terminals created and not released.
    pub fn open_terminals(&self) -> usize {
        self.terminals.as_ref().map_or(0, Terminals::open_count)
    }
}

fn parse<T: DeserializeOwned>(params: &str) -> Result<T, BuiltinError> {
    serde_json::from_str(params).map_err(|e| BuiltinError::invalid(format!("invalid params: {e}")))
}

fn not_served(method: &str) -> BuiltinError {
    BuiltinError::method_not_found(method)
}
