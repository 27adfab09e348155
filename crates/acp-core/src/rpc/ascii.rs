//! "Is this line pure ASCII?", asked of every line and every item: ASCII
//! text is valid UTF-8 as it is and goes to JS as Latin-1, a plain copy.

/// Whether `bytes` are all ASCII. Eight bytes at a time, with no early
/// exit: lines are nearly always ASCII, so all of one is read anyway, and
/// a short line is not left to a byte-by-byte check.
pub fn all_ascii(bytes: &[u8]) -> bool {
    let mut words = bytes.chunks_exact(8);
    let mut high = 0u64;
    for word in &mut words {
        high |= u64::from_le_bytes(word.try_into().expect("8 bytes"));
    }
    for &b in words.remainder() {
        high |= u64::from(b);
    }
    high & 0x8080_8080_8080_8080 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_standard_check_at_every_length_and_place() {
        for len in 0..40 {
            let ascii = vec![b'x'; len];
            assert!(all_ascii(&ascii));
            for at in 0..len {
                for high in [0x80u8, 0xc3, 0xff] {
                    let mut b = ascii.clone();
                    b[at] = high;
                    assert_eq!(all_ascii(&b), b.is_ascii(), "len {len} at {at}");
                    assert!(!all_ascii(&b));
                }
            }
        }
    }
}
