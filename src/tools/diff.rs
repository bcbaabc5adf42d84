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
///
/// Myers (as `similar` runs it) first takes off the common leading and trailing lines, so the
/// diff of the whole texts is the diff of the differing middle plus those. The middle is found
/// by byte comparison and only it, with [`MARGIN`] lines on each side, goes through `similar`;
/// line numbers are shifted back. The cost is one compare pass plus the size of the change,
/// instead of tokenising and hashing every line of a large file.
pub fn diff(old: &str, new: &str, path: &str) -> DiffResult {
    let whole = Excerpt {
        before: 0,
        after: 0,
        max_line: None,
    };
    match diff_in(old, new, path, whole) {
        Some(d) => d,
        None => render(
            &TextDiff::from_lines(old, new),
            path,
            window_whole(old, new),
        ),
    }
}

/// Where an excerpt lies in its whole texts, which are equal outside it.
#[derive(Clone, Copy, Debug)]
pub struct Excerpt {
    /// Lines before the excerpt (equal in both texts).
    pub before: usize,
    /// Lines after it (equal in both texts), a last line without `\n` included.
    pub after: usize,
    /// `split('\n').count()` of the whole text with more lines (`None`: the excerpt is whole).
    pub max_line: Option<usize>,
}

/// Lines of equal text an excerpt needs on each side of the change for [`diff_excerpt`] to
/// equal the diff of the whole texts.
pub const EXCERPT_MARGIN: usize = MARGIN + CONTEXT + 1;

/// The diff of two whole texts given only by an excerpt of each: whole lines that contain
/// every difference, with at least [`EXCERPT_MARGIN`] equal lines on each side unless at a
/// text's start or end. Equals [`diff`] of the whole texts; `None` in the rare case where the
/// diff needs the text beyond the excerpt (a change that slides far over equal lines).
pub fn diff_excerpt(old: &str, new: &str, path: &str, at: Excerpt) -> Option<DiffResult> {
    diff_in(old, new, path, at)
}

fn diff_in(old: &str, new: &str, path: &str, at: Excerpt) -> Option<DiffResult> {
    let mut w = window(old, new);
    let td = TextDiff::from_lines(&old[w.old.clone()], &new[w.new.clone()]);
    // `similar` slides changes over equal lines to compact them; if one slid to the window's
    // edge, it might have slid further in the whole text.
    let ops = td.ops();
    let room =
        |op: Option<&DiffOp>| matches!(op, Some(DiffOp::Equal { len, .. }) if *len >= CONTEXT);
    let lead_ok = (w.lead == 0 && at.before == 0) || room(ops.first());
    let trail_ok = (w.trail == 0 && at.after == 0) || room(ops.last());
    if !(lead_ok && trail_ok) {
        return None;
    }
    w.lead += at.before;
    w.trail += at.after;
    if let Some(max_line) = at.max_line {
        w.max_line = max_line;
    }
    Some(render(&td, path, w))
}

fn window_whole(old: &str, new: &str) -> Window {
    Window {
        old: 0..old.len(),
        new: 0..new.len(),
        lead: 0,
        trail: 0,
        max_line: window(old, new).max_line,
    }
}

fn render<'a>(td: &'a TextDiff<'a, 'a, 'a, str>, path: &str, w: Window) -> DiffResult {
    let patch = td
        .unified_diff()
        .context_radius(CONTEXT)
        .header(path, path)
        .to_string();
    let patch = shift_hunks(patch, w.lead);
    let (diff, first_changed_line) = display(&parts(td), w.max_line, w.lead, w.trail);
    DiffResult {
        diff,
        patch,
        first_changed_line,
    }
}

/// Context lines around each change, in both forms.
const CONTEXT: usize = 4;

/// Equal lines kept on each side of the differing middle, so `similar` has room to slide
/// changes as it would in the whole text.
const MARGIN: usize = 16;

/// Where the diff is computed: byte ranges of whole lines of both texts, and how many equal
/// lines lie before (`lead`) and after (`trail`) them.
struct Window {
    old: std::ops::Range<usize>,
    new: std::ops::Range<usize>,
    lead: usize,
    trail: usize,
    /// `split('\n').count()` of the text with more lines (sets the number width).
    max_line: usize,
}

/// `split('\n').count()` without the split.
fn line_count(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count() + 1
}

/// Length of the common prefix of `a` and `b`: whole blocks through `memcmp`, then bytes.
/// Shared with the daemon's minimal-edit computation (`lsp::buffers`).
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let max = a.len().min(b.len());
    let mut i = 0;
    while i + BLOCK <= max && a[i..i + BLOCK] == b[i..i + BLOCK] {
        i += BLOCK;
    }
    i + a[i..max]
        .iter()
        .zip(&b[i..max])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Length of the common suffix of `a` and `b`, at most `max`.
pub(crate) fn common_suffix(a: &[u8], b: &[u8], max: usize) -> usize {
    const BLOCK: usize = 4096;
    let (mut i, la, lb) = (0, a.len(), b.len());
    while i + BLOCK <= max && a[la - i - BLOCK..la - i] == b[lb - i - BLOCK..lb - i] {
        i += BLOCK;
    }
    i + a[..la - i]
        .iter()
        .rev()
        .zip(b[..lb - i].iter().rev())
        .take(max - i)
        .take_while(|(x, y)| x == y)
        .count()
}

fn window(old: &str, new: &str) -> Window {
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    // Whole equal leading lines: up to the last `\n` inside the common prefix.
    let prefix = common_prefix(ob, nb);
    let head = ob[..prefix]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    // Whole equal trailing lines, not overlapping those: the suffix starts after a `\n` that
    // lies inside it (then it is in both texts), or at the start of the rest of both texts.
    let max = ob.len().min(nb.len()) - head;
    let suffix = common_suffix(ob, nb, max);
    let at_line_start = |b: &[u8], at: usize| at == head || b[at - 1] == b'\n';
    let tail = if at_line_start(ob, ob.len() - suffix) && at_line_start(nb, nb.len() - suffix) {
        suffix
    } else {
        ob[ob.len() - suffix..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(0, |i| suffix - i - 1)
    };
    // Widen by MARGIN lines on each side.
    let head_lines = line_count(&old[..head]) - 1;
    let mut start = head;
    for _ in 0..MARGIN.min(head_lines) {
        start = ob[..start - 1]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
    }
    let tail_text = &ob[ob.len() - tail..];
    let newlines = |b: &[u8]| b.iter().filter(|&&c| c == b'\n').count();
    let tail_nl = newlines(tail_text);
    // A last line without `\n` counts too.
    let tail_lines = tail_nl + usize::from(tail_text.last().is_some_and(|&b| b != b'\n'));
    let mut grow = 0;
    for _ in 0..MARGIN.min(tail_lines) {
        grow = tail_text[grow..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(tail, |i| grow + i + 1);
    }
    // `split('\n').count()` of the longer text, from its parts (the middle is small).
    let middle = newlines(&ob[head..ob.len() - tail]).max(newlines(&nb[head..nb.len() - tail]));
    Window {
        old: start..ob.len() - tail + grow,
        new: start..nb.len() - tail + grow,
        lead: head_lines.saturating_sub(MARGIN),
        trail: tail_lines.saturating_sub(MARGIN),
        max_line: head_lines + middle + tail_nl + 1,
    }
}

/// Adds `by` to the line numbers of every hunk header (`@@ -a,b +c,d @@`) of a patch.
fn shift_hunks(patch: String, by: usize) -> String {
    if by == 0 {
        return patch;
    }
    let shift = |range: &str| match range.split_once(',') {
        Some((start, len)) => format!("{},{len}", start.parse::<usize>().unwrap_or(0) + by),
        None => (range.parse::<usize>().unwrap_or(0) + by).to_string(),
    };
    let mut out = String::with_capacity(patch.len() + 16);
    for line in patch.split_inclusive('\n') {
        let header = line
            .strip_prefix("@@ -")
            .and_then(|rest| rest.split_once(" +"))
            .and_then(|(old, rest)| Some((old, rest.split_once(" @@")?)));
        match header {
            Some((old, (new, rest))) => {
                out.push_str(&format!("@@ -{} +{} @@{rest}", shift(old), shift(new)));
            }
            None => out.push_str(line),
        }
    }
    out
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

/// pi's numbered diff of `parts`, which are preceded by `lead` and followed by `trail` equal
/// lines left out of them; `max_line` sets the number width.
fn display(
    parts: &[(Kind, Vec<&str>)],
    max_line: usize,
    lead: usize,
    trail: usize,
) -> (String, Option<usize>) {
    let w = max_line.to_string().len();
    let gap = format!(" {} ...", " ".repeat(w));
    let (mut old_no, mut new_no) = (1usize, 1usize);
    let mut first = None;
    let mut last_was_change = false;
    let mut out: Vec<String> = Vec::new();
    let last = parts.len().saturating_sub(1);
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
        // The equal run with the lines left out of it: `before` of them precede `lines`.
        let before = if i == 0 { lead } else { 0 };
        let n = before + lines.len() + if i == last { trail } else { 0 };
        let next_is_change = parts.get(i + 1).is_some_and(|(k, _)| *k != Kind::Same);
        if !(last_was_change || next_is_change) {
            old_no += n;
            new_no += n;
            last_was_change = false;
            continue;
        }
        let skip_start = if last_was_change {
            0
        } else {
            n.saturating_sub(CONTEXT)
        };
        let mut show_end = n;
        if !next_is_change && n - skip_start > CONTEXT {
            show_end = skip_start + CONTEXT;
        }
        if skip_start > 0 {
            out.push(gap.clone());
            old_no += skip_start;
            new_no += skip_start;
        }
        // The window keeps CONTEXT real lines next to each change, so shown lines are real.
        let real = |k: usize| k.saturating_sub(before).min(lines.len());
        for line in &lines[real(skip_start)..real(show_end)] {
            out.push(format!(" {old_no:>w$} {line}"));
            old_no += 1;
            new_no += 1;
        }
        if n > show_end {
            out.push(gap.clone());
            old_no += n - show_end;
            new_no += n - show_end;
        }
        last_was_change = false;
    }
    (out.join("\n"), first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The diff of the whole texts through `similar`, as before windowing.
    fn reference(old: &str, new: &str, path: &str) -> DiffResult {
        let td = TextDiff::from_lines(old, new);
        let patch = td
            .unified_diff()
            .context_radius(CONTEXT)
            .header(path, path)
            .to_string();
        let max_line = old.split('\n').count().max(new.split('\n').count());
        let (diff, first_changed_line) = display(&parts(&td), max_line, 0, 0);
        DiffResult {
            diff,
            patch,
            first_changed_line,
        }
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(prop_oneof!["a", "b", "c\n", "\n", "é", "\r"], 0..80)
            .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn windowed_diff_equals_whole_text_diff(old in text(), new in text()) {
            prop_assert_eq!(diff(&old, &new, "p"), reference(&old, &new, "p"));
        }

        #[test]
        fn windowed_diff_of_a_local_change_equals_whole_text_diff(
            lines in proptest::collection::vec("[ab]{0,3}", 0..40),
            at in 0usize..40,
            cut in 0usize..4,
            insert in "[abx\n]{0,8}",
            newline_at_end in any::<bool>(),
        ) {
            let mut old = lines.join("\n");
            if newline_at_end {
                old.push('\n');
            }
            let at = at.min(old.len());
            let mut new = old.clone();
            new.replace_range(at..(at + cut).min(old.len()), &insert);
            prop_assert_eq!(diff(&old, &new, "p"), reference(&old, &new, "p"));
        }
    }

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
