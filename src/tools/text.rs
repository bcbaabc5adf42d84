//! Line endings and the byte-order mark, as `edit` and `write` keep them.

/// Splits a leading UTF-8 byte-order mark from `text`.
pub fn strip_bom(text: &str) -> (&str, &str) {
    match text.strip_prefix('\u{FEFF}') {
        Some(rest) => ("\u{FEFF}", rest),
        None => ("", text),
    }
}

/// pi's `detectLineEnding`: CRLF if the first `\n` is preceded by `\r`.
pub fn detect_crlf(text: &str) -> bool {
    match text.find('\n') {
        Some(i) => i > 0 && text.as_bytes()[i - 1] == b'\r',
        None => false,
    }
}

/// `\r\n` and lone `\r` → `\n`.
pub fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// `\n` → `\r\n` when `crlf`.
pub fn restore_line_endings(text: &str, crlf: bool) -> String {
    if crlf {
        text.replace('\n', "\r\n")
    } else {
        text.to_string()
    }
}
