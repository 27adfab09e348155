//! The terminals of one connection: `terminal/create`, `output`,
//! `wait_for_exit`, `kill` and `release`, a cap on how many are open, and
//! killing them all when the connection ends.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Deserialize;
use serde_json::json;

use super::config::TerminalConfig;
use super::error::BuiltinError;
use super::jobs::BlockingWork;
use super::roots::Scope;
use super::shell::invocation;
use super::terminal::{Terminal, TerminalExit, TerminalSpec};
use crate::transport::Cwd;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateParams {
    pub session_id: String,
    pub command: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub args: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub env: Vec<EnvVariable>,
    pub cwd: Option<String>,
    pub output_byte_limit: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub struct EnvVariable {
    pub name: String,
    pub value: String,
}

/// The params of the four methods that name a terminal.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalRef {
    pub session_id: String,
    pub terminal_id: String,
}

/// The schema says `args`/`env` may be `null`, meaning empty.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

pub struct Terminals {
    config: TerminalConfig,
    open: Mutex<HashMap<String, Arc<Terminal>>>,
    next_id: AtomicU64,
    /// Set by `kill_all` (under the `open` lock): a create the reader was
    /// still working on when the connection shut down is refused, not
    /// left running with nobody to kill it.
    shut: AtomicBool,
}

impl Terminals {
    pub fn new(config: TerminalConfig) -> Self {
        Self {
            config,
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            shut: AtomicBool::new(false),
        }
    }

    pub fn config(&self) -> &TerminalConfig {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Terminal>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Start the command; the `CreateTerminalResponse`. Must run inside a
    /// tokio runtime.
    pub fn create(&self, scope: &Scope, p: &CreateParams) -> Result<String, BuiltinError> {
        if p.command.is_empty() {
            return Err(BuiltinError::invalid("command is empty"));
        }
        let has_nul = |s: &str| s.contains('\0');
        if has_nul(&p.command) || p.args.iter().any(|a| has_nul(a)) {
            return Err(BuiltinError::invalid("command or args contain a NUL byte"));
        }
        let run = invocation(&p.command, &p.args, self.config.shell)?;
        let mut env = self.config.env.clone();
        for v in &p.env {
            if v.name.is_empty() || v.name.contains('=') || has_nul(&v.name) || has_nul(&v.value) {
                return Err(BuiltinError::invalid(format!(
                    "invalid environment variable name {:?}",
                    v.name
                )));
            }
            env.push((v.name.clone(), v.value.clone()));
        }
        let cwd_asked = match &p.cwd {
            Some(cwd) => cwd.clone(),
            None => scope.base.to_string_lossy().into_owned(),
        };
        let cwd = scope.resolve(&cwd_asked)?;
        if !cwd.exists() {
            return Err(BuiltinError::not_found(format!(
                "cwd {cwd_asked} does not exist"
            )));
        }
        let target = cwd;
        let cwd = target.path();
        if !cwd.is_dir() {
            return Err(BuiltinError::invalid(format!(
                "cwd {cwd_asked} is not a directory"
            )));
        }
        // Opened now, entered with fchdir in the child: a directory swapped
        // for a symlink after the check is refused here, or not followed.
        #[cfg(unix)]
        let dir = super::confined::open_dir(&target, &cwd_asked)?;
        let asked = p
            .output_byte_limit
            .map_or(self.config.default_output_byte_limit, |l| {
                l.min(self.config.max_output_byte_limit as u64) as usize
            });

        // The count and the output budget are checked and the terminal
        // added under one lock, so concurrent creates cannot overshoot.
        let mut open = self.lock();
        if self.shut.load(Ordering::Relaxed) {
            return Err(BuiltinError::internal("the connection is shutting down"));
        }
        if open.len() >= self.config.max_terminals {
            return Err(BuiltinError::too_many_terminals(self.config.max_terminals));
        }
        let kept: usize = open.values().map(|t| t.output_limit).sum();
        let left = self.config.max_total_output_bytes.saturating_sub(kept);
        if left == 0 && asked > 0 {
            return Err(BuiltinError::output_budget(
                self.config.max_total_output_bytes,
            ));
        }
        let spec = TerminalSpec {
            run,
            env,
            cwd,
            output_limit: asked.min(left),
        };
        #[cfg(unix)]
        let start_in = Cwd::Dir {
            fd: dir,
            path: &spec.cwd,
        };
        #[cfg(not(unix))]
        let start_in = Cwd::Path(&spec.cwd);
        let terminal = Terminal::spawn(&p.session_id, &spec, start_in)
            .map_err(|e| BuiltinError::spawn_failed(&p.command, &e.source))?;
        let id = format!("term_{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        open.insert(id.clone(), Arc::new(terminal));
        Ok(json!({ "terminalId": id }).to_string())
    }

    /// A terminal of that session: another session's ids are not found.
    fn get(&self, r: &TerminalRef) -> Result<Arc<Terminal>, BuiltinError> {
        self.lock()
            .get(&r.terminal_id)
            .filter(|t| *t.session_id == *r.session_id)
            .cloned()
            .ok_or_else(|| unknown(r))
    }

    /// The `TerminalOutputResponse`, built by the returned work (off the
    /// shared worker: it may be megabytes of escaped text).
    pub fn output(&self, r: &TerminalRef) -> Result<BlockingWork, BuiltinError> {
        let terminal = self.get(r)?;
        Ok(Box::new(move |cancel| terminal.output_json(cancel)))
    }

    /// Resolves with the `{exitCode, signal}` once the command exits (the
    /// terminal is looked up now, so a later release cannot lose it).
    pub fn wait_for_exit(
        &self,
        r: &TerminalRef,
    ) -> Result<impl Future<Output = TerminalExit> + Send + 'static, BuiltinError> {
        let terminal = self.get(r)?;
        Ok(async move { terminal.wait().await })
    }

    /// Stop the command; the terminal stays, with its output and status.
    pub fn kill(&self, r: &TerminalRef) -> Result<String, BuiltinError> {
        let terminal = self.get(r)?;
        terminal.kill();
        Ok("{}".into())
    }

    /// Kill the command (and its process group) and forget the terminal.
    pub fn release(&self, r: &TerminalRef) -> Result<String, BuiltinError> {
        let mut open = self.lock();
        match open.get(&r.terminal_id) {
            Some(t) if *t.session_id == *r.session_id => {
                let t = open.remove(&r.terminal_id).expect("just seen");
                drop(open);
                t.release();
                t.stop_pumps();
                Ok("{}".into())
            }
            _ => Err(unknown(r)),
        }
    }

    /// Kill every terminal now (synchronous: also used from exit hooks).
    pub fn kill_all(&self) {
        let all: Vec<_> = {
            let mut open = self.lock();
            self.shut.store(true, Ordering::Relaxed);
            open.drain().map(|(_, t)| t).collect()
        };
        for t in all {
            t.release();
            t.stop_pumps();
        }
    }

    pub fn open_count(&self) -> usize {
        self.lock().len()
    }
}

fn unknown(r: &TerminalRef) -> BuiltinError {
    BuiltinError::not_found(format!(
        "no terminal {} in session {}",
        r.terminal_id, r.session_id
    ))
}
