//! Arbitrary bytes from an agent's stdout, split at arbitrary points: the
//! framer and the classifier must never panic, every frame must respect
//! the cap, and the chunking must not change what comes out.
#![no_main]

use acp_core::rpc::{classify, Inbound};
use acp_core::transport::{Frame, LineFramer};
use libfuzzer_sys::fuzz_target;

const MAX_LINE: usize = 256;

fn run(data: &[u8], cut_every: usize) -> Vec<Result<Vec<u8>, usize>> {
    let mut framer = LineFramer::new(MAX_LINE);
    let mut out = Vec::new();
    let mut sink = |f: Frame<'_>| match f {
        Frame::Line(line) => {
            assert!(line.len() <= MAX_LINE);
            // Classification must be total; a request/response id must be
            // valid JSON text we can echo back.
            match classify(line) {
                Inbound::Request { id, .. } | Inbound::Response { id, .. } => {
                    assert!(echoable(id.get()));
                }
                _ => {}
            }
            out.push(Ok(line.to_vec()));
        }
        Frame::Oversized { bytes } => {
            assert!(bytes > MAX_LINE);
            out.push(Err(bytes));
        }
    };
    for chunk in data.chunks(cut_every.max(1)) {
        framer.push(chunk, &mut sink);
    }
    framer.finish(&mut sink);
    out
}

/// An id we can splice back into a one-line reply.
fn echoable(text: &str) -> bool {
    !text.is_empty() && !text.contains('\n')
}

fuzz_target!(|data: &[u8]| {
    let cut = data.first().map_or(1, |b| usize::from(*b) + 1);
    assert_eq!(run(data, cut), run(data, usize::MAX));
});
