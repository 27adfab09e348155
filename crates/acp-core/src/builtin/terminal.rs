//! One terminal: a program (or the shell running a command line, see
//! `shell`) as its own process tree (see `transport::tree`), its stdout
//! and stderr captured together, its exit status kept.

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};

use super::error::BuiltinError;
use super::fs::ESCAPE_PIECE;
use super::jobs::Cancel;
use crate::rpc::{json_str_len, push_json_str_in_pieces, ENVELOPE_SLACK};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

use super::output::OutputBuffer;
use super::shell::Invocation;
use crate::transport::{launch, Cwd, LaunchSpec, ProcessTree, SpawnError, StdioShape, TreeControl};

/// After the command exits, how long its last output may take to arrive
/// (a background process still holding the pipe must not delay the exit).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(250);

/// What to run.
#[derive(Debug, Clone)]
pub struct TerminalSpec {
    pub run: Invocation,
    /// Set over the host's environment, in order.
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub output_limit: usize,
}

/// How the command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalExit {
    pub exit_code: Option<u32>,
    pub signal: Option<String>,
}

impl TerminalExit {
    fn from_status(status: io::Result<ExitStatus>) -> Self {
        let Ok(status) = status else {
            return Self {
                exit_code: None,
                signal: None,
            };
        };
        let (code, signal) = crate::transport::exit_parts(&status);
        Self {
            // Windows exit codes are unsigned (0xC0000005…): the cast keeps them.
            exit_code: code.map(|c| c as u32),
            signal,
        }
    }

    /// `{exitCode, signal}`, the shape of both `TerminalExitStatus` and
    /// `WaitForTerminalExitResponse`.
    pub fn to_json(&self) -> Value {
        json!({ "exitCode": self.exit_code, "signal": self.signal })
    }
}

pub struct Terminal {
    pub session_id: Box<str>,
    /// Output bytes this terminal may keep (counted against the budget).
    pub output_limit: usize,
    tree: TreeControl,
    output: Arc<Mutex<OutputBuffer>>,
    /// Stopped on release: a process that left the group (`setsid`) may
    /// hold the pipe open, and nobody would read what it is kept for.
    pumps: Vec<tokio::task::AbortHandle>,
    exit: watch::Receiver<Option<TerminalExit>>,
}

fn lock(m: &Mutex<OutputBuffer>) -> MutexGuard<'_, OutputBuffer> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Terminal {
    /// Start the command in `cwd` (on Unix the checked directory, already
    /// opened). Must be called inside a tokio runtime.
    pub fn spawn(session_id: &str, spec: &TerminalSpec, cwd: Cwd<'_>) -> Result<Self, SpawnError> {
        let launched = launch(&LaunchSpec {
            program: &spec.run.program,
            args: &spec.run.args,
            verbatim_args: spec.run.verbatim_args,
            env: &spec.env,
            clear_env: false,
            cwd,
            stdio: StdioShape::Terminal,
            keep_detached: false,
        })?;
        let output = Arc::new(Mutex::new(OutputBuffer::new(spec.output_limit)));
        let (exit_tx, exit) = watch::channel(None);
        let mut pumps = vec![tokio::spawn(pump(launched.stdout, output.clone()))];
        if let Some(stderr) = launched.stderr {
            pumps.push(tokio::spawn(pump(stderr, output.clone())));
        }
        let pump_handles = pumps.iter().map(|p| p.abort_handle()).collect();
        tokio::spawn(watch_exit(launched.tree, pumps, exit_tx));
        Ok(Self {
            session_id: session_id.into(),
            output_limit: spec.output_limit,
            tree: launched.control,
            output,
            pumps: pump_handles,
            exit,
        })
    }

    pub fn exit_status(&self) -> Option<TerminalExit> {
        self.exit.borrow().clone()
    }

    /// The `TerminalOutputResponse` as JSON text, in one buffer of the
    /// exact size (the output may be megabytes that escape six-fold),
    /// made in pieces between which another agent's job may take the CPU.
    pub fn output_json(&self, cancel: &Cancel) -> Result<String, BuiltinError> {
        // Exit first: output read after it is complete.
        let exit = self.exit_status().map(|e| e.to_json().to_string());
        let out = lock(&self.output);
        let (snapshot, truncated) = (out.snapshot(exit.is_some()), out.truncated());
        drop(out);
        let stop = || cancel.checkpoint();
        let (text, cut) = snapshot
            .text_in_pieces(&stop)
            .ok_or_else(BuiltinError::cancelled)?;
        let truncated = truncated || cut;
        let exit_len = exit.as_ref().map_or(0, |e| e.len() + 16);
        let mut v = String::with_capacity(json_str_len(&text) + exit_len + 40 + ENVELOPE_SLACK);
        v.push_str(r#"{"output":"#);
        if !push_json_str_in_pieces(&mut v, &text, ESCAPE_PIECE, stop) {
            return Err(BuiltinError::cancelled());
        }
        drop(text);
        v.push_str(if truncated {
            r#","truncated":true"#
        } else {
            r#","truncated":false"#
        });
        if let Some(exit) = exit {
            v.push_str(r#","exitStatus":"#);
            v.push_str(&exit);
        }
        v.push('}');
        Ok(v)
    }

    /// Resolves when the command has exited.
    pub async fn wait(&self) -> TerminalExit {
        let mut rx = self.exit.clone();
        let exit = rx.wait_for(Option::is_some).await.map(|e| e.clone());
        // Err only if the watcher vanished without a status, which cannot
        // happen while it holds the sender: report an unknown end.
        exit.ok().flatten().unwrap_or(TerminalExit {
            exit_code: None,
            signal: None,
        })
    }

    /// SIGKILL the command and everything it started (`setsid` daemons
    /// included); synchronous, for exit hooks. The exit status is kept.
    pub fn kill(&self) {
        self.tree.kill();
    }

    /// Stop reading the output and free it (release, connection end).
    pub fn stop_pumps(&self) {
        for p in &self.pumps {
            p.abort();
        }
        let mut out = lock(&self.output);
        *out = OutputBuffer::new(0);
    }

    /// [`Terminal::kill`], and let go of the process tree for good.
    pub fn release(&self) {
        self.tree.release();
    }
}

async fn pump<R: AsyncRead + Unpin>(mut pipe: R, output: Arc<Mutex<OutputBuffer>>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => lock(&output).push(&buf[..n]),
        }
    }
}

async fn watch_exit(
    mut tree: ProcessTree,
    pumps: Vec<tokio::task::JoinHandle<()>>,
    exit_tx: watch::Sender<Option<TerminalExit>>,
) {
    let status = tree.wait().await;
    let drained = async {
        for p in pumps {
            let _ = p.await;
        }
    };
    let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, drained).await;
    exit_tx.send_replace(Some(TerminalExit::from_status(status)));
    // The tree is let go of only once released: until then whatever the
    // command left in its group can still be stopped.
    tree.gone().await;
}
