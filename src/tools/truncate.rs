//! Output truncation shared by the tools (pi's `truncate.ts`): limits, results and sizes.
//!
//! `truncate_head` keeps whole leading lines (read, grep, find, ls); `truncate_tail` keeps
//! trailing lines and may cut the last kept line (bash). Both stop at whichever of the line and
//! byte limits is hit first.

use serde::Serialize;

pub const DEFAULT_MAX_LINES: usize = 2000;
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
pub const GREP_MAX_LINE_LENGTH: usize = 500;

/// Which limit cut the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    Lines,
    Bytes,
}

/// pi's `TruncationResult`. `content` is not serialised into `details`: the text is already
/// in the tool result, and duplicating up to 50 KB per call bloats sessions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    #[serde(skip)]
    pub content: String,
    pub truncated: bool,
    pub truncated_by: Option<TruncatedBy>,
    pub total_lines: usize,
    pub total_bytes: usize,
    pub output_lines: usize,
    pub output_bytes: usize,
    pub last_line_partial: bool,
    pub first_line_exceeds_limit: bool,
    pub max_lines: usize,
    pub max_bytes: usize,
}

/// The two limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl Truncation {
    fn untouched(content: &str, total_lines: usize, limits: Limits) -> Self {
        Truncation {
            content: content.to_string(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines: limits.max_lines,
            max_bytes: limits.max_bytes,
        }
    }
}

/// The content's lines and a result marked truncated when it exceeds `limits`; else the
/// content untouched.
fn over_limits(content: &str, limits: Limits) -> Result<(Vec<&str>, Truncation), Truncation> {
    let lines: Vec<&str> = content.split('\n').collect();
    let mut result = Truncation::untouched(content, lines.len(), limits);
    if lines.len() <= limits.max_lines && content.len() <= limits.max_bytes {
        return Err(result);
    }
    result.truncated = true;
    Ok((lines, result))
}

/// Keeps whole lines from the start. If the first line alone exceeds the byte limit, the
/// result is empty with `first_line_exceeds_limit`.
pub fn truncate_head(content: &str, limits: Limits) -> Truncation {
    let (lines, mut result) = match over_limits(content, limits) {
        Ok(over) => over,
        Err(untouched) => return untouched,
    };
    if lines.first().is_some_and(|l| l.len() > limits.max_bytes) {
        result.content.clear();
        result.truncated_by = Some(TruncatedBy::Bytes);
        result.output_lines = 0;
        result.output_bytes = 0;
        result.first_line_exceeds_limit = true;
        return result;
    }
    let mut kept = 0usize;
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    for (i, line) in lines.iter().enumerate().take(limits.max_lines) {
        let cost = line.len() + usize::from(i > 0);
        if bytes + cost > limits.max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        bytes += cost;
        kept += 1;
    }
    result.content = lines[..kept].join("\n");
    result.truncated_by = Some(by);
    result.output_lines = kept;
    result.output_bytes = result.content.len();
    result
}

/// Keeps whole lines from the end; if even the last line does not fit, keeps its tail
/// (`last_line_partial`).
pub fn truncate_tail(content: &str, limits: Limits) -> Truncation {
    let (lines, mut result) = match over_limits(content, limits) {
        Ok(over) => over,
        Err(untouched) => return untouched,
    };
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    let mut partial: Option<&str> = None;
    for line in lines.iter().rev().take(limits.max_lines) {
        let cost = line.len() + usize::from(!kept.is_empty());
        if bytes + cost > limits.max_bytes {
            by = TruncatedBy::Bytes;
            if kept.is_empty() {
                partial = Some(tail_bytes(line, limits.max_bytes));
            }
            break;
        }
        bytes += cost;
        kept.push(line);
    }
    if let Some(p) = partial {
        kept.push(p);
        result.last_line_partial = true;
    }
    kept.reverse();
    result.content = kept.join("\n");
    result.truncated_by = Some(by);
    result.output_lines = kept.len();
    result.output_bytes = result.content.len();
    result
}

/// The longest suffix of `s` that fits in `max` bytes, starting on a char boundary.
pub fn tail_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// The longest prefix of `s` that fits in `max` bytes, ending on a char boundary.
pub fn head_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// pi's `formatSize`: `B`, `KB` or `MB` with one decimal.
pub fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// Cuts a line to `max_chars` characters, appending `... [truncated]`; says whether it cut.
pub fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    match line.char_indices().nth(max_chars) {
        None => (line.to_string(), false),
        Some((idx, _)) => (format!("{}... [truncated]", &line[..idx]), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_lines: usize, max_bytes: usize) -> Limits {
        Limits {
            max_lines,
            max_bytes,
        }
    }

    #[test]
    fn head_by_lines_and_bytes() {
        let t = truncate_head("a\nb\nc", limits(2, 100));
        assert_eq!(
            (t.content.as_str(), t.truncated_by),
            ("a\nb", Some(TruncatedBy::Lines))
        );
        let t = truncate_head("aaaa\nbbbb\ncccc", limits(10, 9));
        assert_eq!(
            (t.content.as_str(), t.truncated_by),
            ("aaaa\nbbbb", Some(TruncatedBy::Bytes))
        );
        let t = truncate_head("aaaaaaaaaa\nb", limits(10, 5));
        assert!(t.first_line_exceeds_limit && t.content.is_empty());
        assert!(!truncate_head("x\ny", limits(2, 3)).truncated);
    }

    #[test]
    fn tail_keeps_end_and_partial_line() {
        let t = truncate_tail("a\nb\nc", limits(2, 100));
        assert_eq!(t.content, "b\nc");
        let t = truncate_tail("short\néééééé", limits(10, 5));
        assert!(t.last_line_partial);
        assert_eq!(t.content, "éé");
    }

    #[test]
    fn sizes_and_lines() {
        assert_eq!(format_size(500), "500B");
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(3 * 1024 * 1024 / 2), "1.5MB");
        assert_eq!(
            truncate_line("abcdef", 3),
            ("abc... [truncated]".to_string(), true)
        );
        assert_eq!(truncate_line("abc", 3), ("abc".to_string(), false));
    }
}
