//! Diffs for `edit`/`write` results and approval previews: pi's numbered display diff
//! (`generateDiffString`: `+NNN`/`-NNN`/` NNN` lines, 4 lines of context, `...` gaps) and a
//! standard unified patch (4 context lines, `---`/`+++` headers only). Both are computed on
//! LF text (no BOM) so CRLF files do not show `\r` noise.

use similar::{DiffOp, TextDiff};

/// A diff in both forms plus the first changed line of the new text (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffResult {
    pub diff: String,
    pub patch: String,
    pub first_changed_line: Option<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Same,
    Removed,
    Added,
}

/// Diffs `old` against `new`; `path` names both sides of the patch.
pub fn diff(old: &str, new: &str, path: &str) -> DiffResult {
    let td = TextDiff::from_lines(old, new);
    let patch = td
        .unified_diff()
        .context_radius(4)
        .header(path, path)
        .to_string();
    let (diff, first_changed_line) = display(old, new, &parts(&td));
    DiffResult {
        diff,
        patch,
        first_changed_line,
    }
}

fn strip_nl(s: &str) -> &str {
    s.strip_suffix('\n').unwrap_or(s)
}

/// jsdiff-style parts: runs of equal, removed and added lines.
fn parts<'a>(td: &TextDiff<'a, 'a, 'a, str>) -> Vec<(Kind, Vec<&'a str>)> {
    let old: Vec<&str> = td.old_slices().iter().map(|s| strip_nl(s)).collect();
    let new: Vec<&str> = td.new_slices().iter().map(|s| strip_nl(s)).collect();
    let mut out = Vec::new();
    for op in td.ops() {
        match *op {
            DiffOp::Equal { old_index, len, .. } => {
                out.push((Kind::Same, old[old_index..old_index + len].to_vec()));
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => out.push((Kind::Removed, old[old_index..old_index + old_len].to_vec())),
            DiffOp::Insert {
                new_index, new_len, ..
            } => out.push((Kind::Added, new[new_index..new_index + new_len].to_vec())),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                out.push((Kind::Removed, old[old_index..old_index + old_len].to_vec()));
                out.push((Kind::Added, new[new_index..new_index + new_len].to_vec()));
            }
        }
    }
    out
}

fn display(old: &str, new: &str, parts: &[(Kind, Vec<&str>)]) -> (String, Option<usize>) {
    const CONTEXT: usize = 4;
    let max_line = old.split('\n').count().max(new.split('\n').count());
    let w = max_line.to_string().len();
    let gap = format!(" {} ...", " ".repeat(w));
    let (mut old_no, mut new_no) = (1usize, 1usize);
    let mut first = None;
    let mut last_was_change = false;
    let mut out: Vec<String> = Vec::new();
    for (i, (kind, lines)) in parts.iter().enumerate() {
        if *kind != Kind::Same {
            first.get_or_insert(new_no);
            for line in lines {
                if *kind == Kind::Added {
                    out.push(format!("+{new_no:>w$} {line}"));
                    new_no += 1;
                } else {
                    out.push(format!("-{old_no:>w$} {line}"));
                    old_no += 1;
                }
            }
            last_was_change = true;
            continue;
        }
        let next_is_change = parts.get(i + 1).is_some_and(|(k, _)| *k != Kind::Same);
        if !(last_was_change || next_is_change) {
            old_no += lines.len();
            new_no += lines.len();
            last_was_change = false;
            continue;
        }
        let skip_start = if last_was_change {
            0
        } else {
            lines.len().saturating_sub(CONTEXT)
        };
        let mut show = &lines[skip_start..];
        let mut skip_end = 0;
        if !next_is_change && show.len() > CONTEXT {
            skip_end = show.len() - CONTEXT;
            show = &show[..CONTEXT];
        }
        if skip_start > 0 {
            out.push(gap.clone());
            old_no += skip_start;
            new_no += skip_start;
        }
        for line in show {
            out.push(format!(" {old_no:>w$} {line}"));
            old_no += 1;
            new_no += 1;
        }
        if skip_end > 0 {
            out.push(gap.clone());
            old_no += skip_end;
            new_no += skip_end;
        }
        last_was_change = false;
    }
    (out.join("\n"), first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_diff_has_numbers_context_and_gaps() {
        let old: String = (1..=12).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l10\n", "ten\n");
        let d = diff(&old, &new, "f.txt");
        assert_eq!(d.first_changed_line, Some(10));
        let expected = [
            "    ...", "  6 l6", "  7 l7", "  8 l8", "  9 l9", "-10 l10", "+10 ten", " 11 l11",
            " 12 l12",
        ];
        assert_eq!(d.diff.lines().collect::<Vec<_>>(), expected);
        assert!(
            d.patch
                .starts_with("--- f.txt\n+++ f.txt\n@@ -6,7 +6,7 @@\n"),
            "{}",
            d.patch
        );
    }
}
