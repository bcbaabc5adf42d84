//! `bash` output accounting with bounded memory: a rolling tail in memory, the whole output
//! spilled to a temp file once it no longer fits the limits, and pi's notices.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Limits, format_size, truncate_tail};

/// Keeps the last `2 × 50 KB` of output plus counters; spills everything to a file when needed.
pub struct OutputBuffer {
    tail: Vec<u8>,
    total_bytes: usize,
    newlines: usize,
    /// Bytes since the last `\n` (the current last line's size).
    last_line_bytes: usize,
    spill: Option<(PathBuf, std::fs::File)>,
    spill_dir: PathBuf,
    spill_error: Option<String>,
    /// The most the spill file takes (`None`: everything); past it, the file stops growing.
    spill_limit: Option<usize>,
}

const KEEP: usize = 2 * DEFAULT_MAX_BYTES;

impl OutputBuffer {
    pub fn new(spill_dir: PathBuf) -> Self {
        OutputBuffer {
            tail: Vec::new(),
            total_bytes: 0,
            newlines: 0,
            last_line_bytes: 0,
            spill: None,
            spill_dir,
            spill_error: None,
            spill_limit: None,
        }
    }

    /// A buffer whose spill file keeps only the first `limit` bytes (a background job's output
    /// between two reads, which may go on for hours).
    pub fn with_spill_limit(spill_dir: PathBuf, limit: usize) -> Self {
        OutputBuffer {
            spill_limit: Some(limit),
            ..OutputBuffer::new(spill_dir)
        }
    }

    /// Whether the spill file stopped short of the whole output.
    fn spill_capped(&self) -> bool {
        self.spill_limit
            .is_some_and(|limit| self.total_bytes > limit)
    }

    /// Appends a chunk as it arrived.
    pub fn push(&mut self, chunk: &[u8]) {
        let before = self.total_bytes;
        self.total_bytes += chunk.len();
        for &b in chunk {
            if b == b'\n' {
                self.newlines += 1;
                self.last_line_bytes = 0;
            } else {
                self.last_line_bytes += 1;
            }
        }
        self.tail.extend_from_slice(chunk);
        let over = self.total_bytes > DEFAULT_MAX_BYTES || self.newlines >= DEFAULT_MAX_LINES;
        if over && self.spill.is_none() && self.spill_error.is_none() {
            // The whole output so far is still in `tail` here: trimming happens below.
            self.open_spill();
        } else if let Some((_, file)) = &mut self.spill {
            let room = self
                .spill_limit
                .map_or(chunk.len(), |l| l.saturating_sub(before));
            if let Err(e) = file.write_all(&chunk[..room.min(chunk.len())]) {
                self.spill_error = Some(e.to_string());
            }
        }
        if self.tail.len() > KEEP {
            self.tail.drain(..self.tail.len() - KEEP);
        }
    }

    fn open_spill(&mut self) {
        let name = format!(
            "agent-lsp-bash-{}.log",
            &uuid::Uuid::new_v4().simple().to_string()[..16]
        );
        let path = self.spill_dir.join(name);
        let first = &self.tail[..self.tail.len().min(self.spill_limit.unwrap_or(usize::MAX))];
        let opened = std::fs::File::create(&path).and_then(|mut f| {
            f.write_all(first)?;
            Ok(f)
        });
        match opened {
            Ok(f) => self.spill = Some((path, f)),
            Err(e) => self.spill_error = Some(format!("{}: {e}", path.display())),
        }
    }

    /// Where the full output is, once spilled.
    pub fn full_output_path(&self) -> Option<&Path> {
        self.spill.as_ref().map(|(p, _)| p.as_path())
    }

    pub fn total_bytes(&self) -> usize {
        self.total_bytes
    }

    /// Calls `f` with every line of the output, ANSI stripped: read back from the spill file
    /// once the output was spilled (else from memory, which then holds all of it).
    pub fn for_each_line(&mut self, mut f: impl FnMut(&str)) {
        use std::io::BufRead;
        if let Some((path, file)) = &mut self.spill
            && file.flush().is_ok()
            && let Ok(file) = std::fs::File::open(path)
        {
            let mut reader = std::io::BufReader::new(file);
            let mut line = Vec::new();
            while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                let text = clean(&String::from_utf8_lossy(&line));
                f(text.strip_suffix('\n').unwrap_or(&text));
                line.clear();
            }
            return;
        }
        let text = clean(&String::from_utf8_lossy(&self.tail));
        let text = text.strip_suffix('\n').unwrap_or(&text);
        if !text.is_empty() {
            text.split('\n').for_each(f);
        }
    }

    /// The text for the model: the tail-truncated output (ANSI stripped) plus pi's notice.
    pub fn render(&mut self) -> (String, Value) {
        if let Some((_, f)) = &mut self.spill
            && let Err(e) = f.flush()
        {
            self.spill_error = Some(e.to_string());
        }
        let cleaned = clean(&String::from_utf8_lossy(&self.tail));
        // A final newline ends the last line rather than starting an empty one (as `wc -l`).
        let text = cleaned.strip_suffix('\n').unwrap_or(&cleaned);
        let trunc = truncate_tail(text, Limits::default());
        let ends_with_newline = self.last_line_bytes == 0 && self.newlines > 0;
        let total_lines = (self.newlines + usize::from(!ends_with_newline)).max(1);
        let mut out = if trunc.content.is_empty() {
            "(no output)".to_string()
        } else {
            trunc.content.clone()
        };
        let cut = trunc.truncated || self.total_bytes > self.tail.len();
        let mut details = json!({});
        if cut {
            let full = match (&self.spill, &self.spill_error) {
                (Some((p, _)), _) if self.spill_capped() => format!(
                    "{} (its first {} only)",
                    p.display(),
                    format_size(self.spill_limit.unwrap_or_default())
                ),
                (Some((p, _)), _) => p.display().to_string(),
                (None, Some(e)) => format!("unavailable ({e})"),
                (None, None) => "unavailable".to_string(),
            };
            let start = total_lines.saturating_sub(trunc.output_lines) + 1;
            let notice = if trunc.last_line_partial {
                format!(
                    "[Showing last {} of line {total_lines} (line is {}). Full output: {full}]",
                    format_size(trunc.output_bytes),
                    format_size(self.last_line_bytes)
                )
            } else if trunc.truncated_by == Some(super::truncate::TruncatedBy::Lines) {
                format!(
                    "[Showing lines {start}-{total_lines} of {total_lines}. Full output: {full}]"
                )
            } else {
                format!(
                    "[Showing lines {start}-{total_lines} of {total_lines} ({} limit). Full output: {full}]",
                    format_size(DEFAULT_MAX_BYTES)
                )
            };
            out.push_str("\n\n");
            out.push_str(&notice);
            let mut t = serde_json::to_value(&trunc).unwrap_or(Value::Null);
            if let Value::Object(m) = &mut t {
                m.insert("totalLines".into(), json!(total_lines));
                m.insert("totalBytes".into(), json!(self.total_bytes));
            }
            details = json!({"truncation": t});
            if let Some(p) = self.full_output_path() {
                details["fullOutputPath"] = json!(p.display().to_string());
            }
        }
        (out, details)
    }
}

/// Strips ANSI escape sequences (CSI and OSC) and control characters other than `\n`/`\t`;
/// `\r\n` becomes `\n`.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                Some('[') => {
                    chars.next();
                    // CSI: parameters until a final byte in @..~.
                    for n in chars.by_ref() {
                        if ('@'..='~').contains(&n) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    chars.next();
                    // OSC: until BEL or ESC \.
                    while let Some(n) = chars.next() {
                        if n == '\u{7}' || (n == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {
                    chars.next();
                }
            },
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_ansi() {
        assert_eq!(
            clean("\u{1b}[31mred\u{1b}[0m\r\nok\u{1b}]0;title\u{7}!"),
            "red\nok!"
        );
    }

    #[test]
    fn small_output_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = OutputBuffer::new(dir.path().to_path_buf());
        b.push(b"hello\n");
        let (text, details) = b.render();
        assert_eq!(text, "hello");
        assert_eq!(details, json!({}));
        assert!(b.full_output_path().is_none());
    }
}

#[cfg(test)]
mod bounded_tests {
    use super::*;

    /// The file `b` spilled to, which holds `bytes`, and what `b` renders.
    fn spilled(b: &mut OutputBuffer, bytes: u64) -> (PathBuf, String, Value) {
        let path = b.full_output_path().unwrap().to_path_buf();
        let (text, details) = b.render();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), bytes);
        (path, text, details)
    }

    fn assert_ends_with(text: &str, end: &str) {
        assert!(text.ends_with(end), "{}", &text[text.len() - 200..]);
    }

    #[test]
    fn a_spill_limit_keeps_the_file_to_its_first_bytes_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = OutputBuffer::with_spill_limit(dir.path().to_path_buf(), 3000);
        for i in 0..2500 {
            b.push(format!("{i:03}\n").as_bytes());
        }
        let (path, text, _) = spilled(&mut b, 3000);
        assert_ends_with(
            &text,
            &format!(
                "[Showing lines 501-2500 of 2500. Full output: {} (its first 2.9KB only)]",
                path.display()
            ),
        );
        let mut lines = 0;
        b.for_each_line(|_| lines += 1);
        assert_eq!(lines, 750);
    }

    #[test]
    fn memory_stays_bounded_and_spill_has_everything() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = OutputBuffer::new(dir.path().to_path_buf());
        let chunk = vec![b'x'; 1000];
        for _ in 0..1000 {
            b.push(&chunk);
            assert!(b.tail.len() <= KEEP);
        }
        let (path, text, details) = spilled(&mut b, 1_000_000);
        assert_ends_with(
            &text,
            &format!(
                "[Showing last 50.0KB of line 1 (line is 976.6KB). Full output: {}]",
                path.display()
            ),
        );
        assert_eq!(details["truncation"]["totalBytes"], 1_000_000);
    }
}
