//! Windows: names in a requested path that do not name a plain file.
//!
//! The confinement check canonicalizes what exists, which settles drive
//! letters, case, `\\?\` and UNC prefixes, 8.3 short names, junctions and
//! symlinks. What it cannot settle is a name Windows reads as something
//! else: `file.txt:stream` (an alternate data stream, also `..:x` on a
//! directory outside), `CON`, `NUL`, `COM1`… (devices, whatever the
//! directory and extension), and a trailing dot or space, which Windows
//! drops from some paths and keeps in others (`\\?\`), so the name checked
//! and the file opened could differ. Such a name is refused outright.

use std::path::{Component, Path};

/// Why `requested` is refused, or `None` if every name in it is plain.
pub(super) fn refusal(requested: &Path) -> Option<&'static str> {
    for c in requested.components() {
        let Component::Normal(name) = c else { continue };
        let name = name.to_string_lossy();
        if name.contains(':') {
            return Some("names an alternate data stream (`name:stream`)");
        }
        if name.ends_with(['.', ' ']) {
            return Some("has a name ending with a dot or a space, which Windows drops");
        }
        if is_device(&name) {
            return Some("names a device (CON, NUL, COM1, …)");
        }
    }
    None
}

/// `CON`, `con.txt`, `Com1 .log`, `CONIN$`…: a name Win32 opens as a device.
fn is_device(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or("").trim_end_matches(' ');
    let upper = stem.to_ascii_uppercase();
    match upper.as_str() {
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$" => true,
        _ => {
            let (base, digit) = (upper.get(..3), upper.get(3..));
            matches!(base, Some("COM" | "LPT"))
                && matches!(
                    digit,
                    Some("1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9" | "¹" | "²" | "³")
                )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_devices_and_dropped_characters_are_refused() {
        for bad in [
            "ok.txt:hidden",
            "ok.txt::$DATA",
            r"sub\..:x",
            "CON",
            r"sub\nul",
            "com1.log",
            "Lpt9",
            "COM¹",
            "aux .txt",
            "CONIN$",
            "secret.txt.",
            "secret.txt ",
            r"dir.\f",
        ] {
            assert!(refusal(Path::new(bad)).is_some(), "{bad}");
        }
        for ok in [
            r"C:\work\root\ok.txt",
            r"..\sub\file",
            "console.txt",
            "COM10",
            "nul-device.md",
            ".hidden",
            r"\\?\C:\work\root\f",
        ] {
            assert_eq!(refusal(Path::new(ok)), None, "{ok}");
        }
    }
}
