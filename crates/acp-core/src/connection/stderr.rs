//! The stderr side: always drained (an agent blocked on a full stderr pipe
//! is the classic ACP hang), kept in a ring for crash reports, and
//! forwarded one line per event when the host has room for them (agents
//! such as gemini-cli write several lines at once, or a line in pieces).

use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

use super::event::Event;
use super::shared::Shared;
use super::worker_slice;
use crate::rpc::json_str;

/// A line longer than this is forwarded in pieces of at least this size.
const MAX_PARTIAL: usize = 64 * 1024;

pub(super) async fn run_stderr(mut stderr: ChildStderr, shared: Arc<Shared>, forward: bool) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                shared.emit(shared.read_error("stderr", &e));
                break;
            }
        };
        let chunk = &buf[..n];
        shared.stderr.push(chunk);
        if !forward {
            continue;
        }
        partial.extend_from_slice(chunk);
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', &partial) {
            forward_text(&shared, &partial[start..=end]);
            start = end + 1;
        }
        // Cut between characters: a piece ending inside one would show as
        // U+FFFD at its end and at the next piece's start.
        let cut = partial.len() - unfinished_char(&partial[start..]);
        if cut - start >= MAX_PARTIAL {
            forward_text(&shared, &partial[start..cut]);
            start = cut;
        }
        partial.drain(..start);
        // One chunk per worker slice, as the stdout reader: a flood of
        // stderr must not hold the worker other connections share for all
        // of tokio's cooperative budget.
        worker_slice::yield_point().await;
    }
    if forward && !partial.is_empty() {
        forward_text(&shared, &partial);
    }
}

/// How many bytes at the end of `bytes` begin a UTF-8 character that is
/// not complete yet (0 to 3).
fn unfinished_char(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xC0 != 0x80 {
            let len = match byte {
                0xF0.. => 4,
                0xE0.. => 3,
                0xC0.. => 2,
                _ => 1,
            };
            return if len > back { back } else { 0 };
        }
    }
    0
}

/// Never wait here: the event takes its size from the queue budget it
/// shares with stdout, or is dropped if there is no room (the ring still
/// has the bytes; the drop is counted) rather than stalling the agent.
fn forward_text(shared: &Shared, bytes: &[u8]) {
    // The escaped text is at least as long as the bytes: with less room
    // than that it would be dropped anyway, so skip escaping it.
    if !shared.queue.has_room(bytes.len()) {
        shared.stderr.note_dropped();
        return;
    }
    let event = Event::Host {
        name: "stderr",
        payload: json_str(&String::from_utf8_lossy(bytes)),
        budgeted: true,
    };
    if !shared.queue.try_queue(event) {
        shared.stderr.note_dropped();
    }
}

#[cfg(test)]
mod tests {
    use super::unfinished_char;

    #[test]
    fn an_unfinished_character_is_held_back_whole() {
        let euro = "€".as_bytes();
        let face = "😀".as_bytes();
        assert_eq!(unfinished_char(b"abc"), 0);
        assert_eq!(unfinished_char(b""), 0);
        assert_eq!(unfinished_char(euro), 0);
        assert_eq!(unfinished_char(&euro[..1]), 1);
        assert_eq!(unfinished_char(&euro[..2]), 2);
        assert_eq!(unfinished_char(&face[..3]), 3);
        assert_eq!(unfinished_char(&[b'x', face[0], face[1]]), 2);
        // Bytes that are not UTF-8 are forwarded as they are (shown as U+FFFD).
        assert_eq!(unfinished_char(&[0x80, 0x80, 0x80]), 0);
    }
}
