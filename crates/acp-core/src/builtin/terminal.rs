//! One terminal: a command run without a shell in its own process group,
//! its stdout and stderr captured together, its exit status kept.

use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};

use crate::rpc::{json_str_len, push_json_str, ENVELOPE_SLACK};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::sync::watch;

use super::output::OutputBuffer;
use crate::transport::{adopt_spawned, isolate_process_tree, signal_group, GroupSignal};

/// After the command exits, how long its last output may take to arrive
/// (a background process still holding the pipe must not delay the exit).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(250);

/// What to run.
#[derive(Debug, Clone)]
pub struct TerminalSpec {
    pub command: String,
    pub args: Vec<String>,
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
        #[cfg(unix)]
        let signal = {
            use std::os::unix::process::ExitStatusExt;
            status.signal().map(crate::transport::signal_name)
        };
        #[cfg(not(unix))]
        let signal = None;
        Self {
            // Windows exit codes are unsigned (0xC0000005…): the cast keeps them.
            exit_code: status.code().map(|c| c as u32),
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
    pid: u32,
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
    /// Start the command. Must be called inside a tokio runtime.
    pub fn spawn(session_id: &str, spec: &TerminalSpec) -> io::Result<Self> {
        let mut cmd = Command::new(&spec.command);
        cmd.args(&spec.args)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&spec.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(false);
        merge_stderr_into_stdout(&mut cmd);
        isolate_process_tree(&mut cmd);
        let mut child = cmd.spawn()?;
        adopt_spawned(&child);
        let pid = child.id().unwrap_or_default();
        let output = Arc::new(Mutex::new(OutputBuffer::new(spec.output_limit)));
        let (exit_tx, exit) = watch::channel(None);
        let mut pumps = Vec::new();
        if let Some(stdout) = child.stdout.take() {
            pumps.push(tokio::spawn(pump(stdout, output.clone())));
        }
        if let Some(stderr) = child.stderr.take() {
            pumps.push(tokio::spawn(pump(stderr, output.clone())));
        }
        let pump_handles = pumps.iter().map(|p| p.abort_handle()).collect();
        tokio::spawn(watch_exit(child, pumps, exit_tx));
        Ok(Self {
            session_id: session_id.into(),
            output_limit: spec.output_limit,
            pid,
            output,
            pumps: pump_handles,
            exit,
        })
    }

    pub fn exit_status(&self) -> Option<TerminalExit> {
        self.exit.borrow().clone()
    }

    /// The `TerminalOutputResponse` as JSON text, in one buffer of the
    /// exact size (the output may be megabytes that escape six-fold).
    pub fn output_json(&self) -> String {
        // Exit first: output read after it is complete.
        let exit = self.exit_status().map(|e| e.to_json().to_string());
        let out = lock(&self.output);
        let (text, cut) = out.text(exit.is_some());
        let truncated = out.truncated() || cut;
        drop(out);
        let exit_len = exit.as_ref().map_or(0, |e| e.len() + 16);
        let mut v = String::with_capacity(json_str_len(&text) + exit_len + 40 + ENVELOPE_SLACK);
        v.push_str(r#"{"output":"#);
        push_json_str(&mut v, &text);
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
        v
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

    /// SIGKILL the command's whole process group; synchronous, for exit
    /// hooks. Whatever it started in the background goes too.
    pub fn kill(&self) {
        signal_group(self.pid, GroupSignal::Kill);
    }

    /// Stop reading the output and free it (release, connection end).
    pub fn stop_pumps(&self) {
        for p in &self.pumps {
            p.abort();
        }
        let mut out = lock(&self.output);
        *out = OutputBuffer::new(0);
    }
}

/// Both streams into one pipe, so the output interleaves exactly as the
/// command wrote it.
#[cfg(unix)]
fn merge_stderr_into_stdout(cmd: &mut Command) {
    cmd.stderr(Stdio::null());
    // SAFETY: runs in the forked child after its stdio is set up and before
    // exec; dup2 is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::dup2(1, 2) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Without `dup2` before exec: two pipes, merged in arrival order.
#[cfg(not(unix))]
fn merge_stderr_into_stdout(cmd: &mut Command) {
    cmd.stderr(Stdio::piped());
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
    mut child: Child,
    pumps: Vec<tokio::task::JoinHandle<()>>,
    exit_tx: watch::Sender<Option<TerminalExit>>,
) {
    let status = child.wait().await;
    let drained = async {
        for p in pumps {
            let _ = p.await;
        }
    };
    let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, drained).await;
    exit_tx.send_replace(Some(TerminalExit::from_status(status)));
}
