//! The stderr side: always drained (an agent blocked on a full stderr pipe
//! is the classic ACP hang), kept in a ring for crash reports, and
//! forwarded as whole lines when the host has room for them.

use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

use super::event::Event;
use super::shared::Shared;
use crate::rpc::json_str;

const MAX_PARTIAL: usize = 64 * 1024;

pub(super) async fn run_stderr(mut stderr: ChildStderr, shared: Arc<Shared>, forward: bool) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        shared
            .stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(chunk);
        if !forward {
            continue;
        }
        partial.extend_from_slice(chunk);
        let cut = match memchr::memrchr(b'\n', &partial) {
            Some(i) => i + 1,
            None if partial.len() >= MAX_PARTIAL => partial.len(),
            None => continue,
        };
        let lines: Vec<u8> = partial.drain(..cut).collect();
        forward_text(&shared, &lines);
    }
    if forward && !partial.is_empty() {
        forward_text(&shared, &partial);
    }
}

/// Never wait here: if the host is behind, the event is dropped (the ring
/// still has the bytes) rather than stalling the agent.
fn forward_text(shared: &Shared, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let _ = shared.events.try_send(Event::Host {
        name: "stderr",
        payload: json_str(&text),
    });
}
