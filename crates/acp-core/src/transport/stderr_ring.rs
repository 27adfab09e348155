use std::collections::VecDeque;

/// The last `capacity` bytes the agent wrote to stderr. Kept so that a
/// crash can be reported with the agent's own last words.
#[derive(Debug)]
pub struct StderrRing {
    bytes: VecDeque<u8>,
    capacity: usize,
    total: u64,
}

impl StderrRing {
    pub fn new(capacity: usize) -> Self {
        Self {
            bytes: VecDeque::with_capacity(capacity.min(64 * 1024)),
            capacity,
            total: 0,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        if self.capacity == 0 {
            return;
        }
        let keep = &chunk[chunk.len().saturating_sub(self.capacity)..];
        let overflow = (self.bytes.len() + keep.len()).saturating_sub(self.capacity);
        self.bytes.drain(..overflow);
        self.bytes.extend(keep);
    }

    /// Total bytes ever written to stderr.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The tail as text; a multi-byte character cut at the front is dropped.
    pub fn tail(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        let mut all = Vec::with_capacity(a.len() + b.len());
        all.extend_from_slice(a);
        all.extend_from_slice(b);
        let start = all
            .iter()
            .position(|&byte| (byte & 0b1100_0000) != 0b1000_0000)
            .unwrap_or(all.len());
        String::from_utf8_lossy(&all[start..]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_tail_on_a_char_boundary() {
        let mut ring = StderrRing::new(4);
        ring.push(b"hello ");
        ring.push("wörld".as_bytes());
        assert_eq!(ring.total(), 12);
        // The last 4 bytes start inside "ö": the cut continuation byte is dropped.
        assert_eq!(ring.tail(), "rld");
        ring.push(b"!!");
        assert_eq!(ring.tail(), "ld!!");
    }
}
