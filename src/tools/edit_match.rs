//! Matching `edit`'s replacements against a file (pi's `edit-diff.ts`, newer multi-edit form).
//!
//! Every `oldText` is matched against the original content, exactly first. If any edit only
//! matches after fuzzy normalisation, all edits are matched in the normalised space and the
//! spans are mapped back to the original bytes, so text outside the replaced spans keeps its
//! exact bytes (trailing spaces, smart quotes…). Uniqueness is counted in the normalised space.
//!
//! Fuzzy normalisation: a subset of NFKC (fullwidth ASCII, the Latin ligatures U+FB00–FB06,
//! `…` and the one/two-dot leaders, superscript/subscript digits, compatibility spaces; no
//! canonical composition, which would need Unicode tables), trailing whitespace stripped per
//! line, smart quotes → ASCII, U+2010–2015 and U+2212 → `-`, special spaces → space.

use serde::Deserialize;

/// One replacement (texts already converted to LF), read as the `edit` tool's
/// `{oldText, newText}`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Edit {
    pub old_text: String,
    pub new_text: String,
}

/// Text in fuzzy-normalised form, with each output byte's source char span in the original.
struct Normalized {
    text: String,
    src: Vec<(usize, usize)>,
}

/// The compatibility mapping of `c` (our NFKC subset plus pi's quote/dash/space folding).
fn fold_char(c: char, out: &mut String) {
    let mapped = match c {
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0),
        '\u{2018}'..='\u{201B}' => Some('\''),
        '\u{201C}'..='\u{201F}' => Some('"'),
        '\u{2010}'..='\u{2015}' | '\u{2212}' => Some('-'),
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => Some(' '),
        '\u{00B9}' => Some('1'),
        '\u{00B2}' => Some('2'),
        '\u{00B3}' => Some('3'),
        '\u{2070}' => Some('0'),
        '\u{2074}'..='\u{2079}' => char::from_u32(c as u32 - 0x2074 + '4' as u32),
        '\u{2080}'..='\u{2089}' => char::from_u32(c as u32 - 0x2080 + '0' as u32),
        '\u{2024}' => Some('.'),
        _ => None,
    };
    if let Some(m) = mapped {
        out.push(m);
        return;
    }
    let expansion = match c {
        '\u{2025}' => "..",
        '\u{2026}' => "...",
        '\u{FB00}' => "ff",
        '\u{FB01}' => "fi",
        '\u{FB02}' => "fl",
        '\u{FB03}' => "ffi",
        '\u{FB04}' => "ffl",
        '\u{FB05}' | '\u{FB06}' => "st",
        _ => {
            out.push(c);
            return;
        }
    };
    out.push_str(expansion);
}

fn normalize(text: &str) -> Normalized {
    let mut out = Normalized {
        text: String::with_capacity(text.len()),
        src: Vec::with_capacity(text.len()),
    };
    let mut line_start = 0;
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.text.push('\n');
            out.src.push((line_start - 1, line_start));
        }
        normalize_line(line, line_start, &mut out);
        line_start += line.len() + 1;
    }
    out
}

fn normalize_line(line: &str, base: usize, out: &mut Normalized) {
    let line_out_start = out.text.len();
    let mut buf = String::new();
    for (off, c) in line.char_indices() {
        buf.clear();
        fold_char(c, &mut buf);
        let span = (base + off, base + off + c.len_utf8());
        out.text.push_str(&buf);
        out.src.extend(std::iter::repeat_n(span, buf.len()));
    }
    // Trailing whitespace (after folding) is dropped, as pi's per-line `trimEnd`.
    let kept = out.text[line_out_start..].trim_end().len() + line_out_start;
    out.text.truncate(kept);
    out.src.truncate(kept);
}

/// The fuzzy-normalised form of a text, not built when it would equal the text itself.
enum Norm<'a> {
    Same(&'a str),
    Built(Normalized),
}

impl Norm<'_> {
    fn of(text: &str) -> Norm<'_> {
        if is_fuzzy_invariant(text) {
            Norm::Same(text)
        } else {
            Norm::Built(normalize(text))
        }
    }

    fn text(&self) -> &str {
        match self {
            Norm::Same(t) => t,
            Norm::Built(n) => &n.text,
        }
    }

    /// The original byte span of the normalised `start..start + len` (`len > 0`).
    fn span(&self, start: usize, len: usize) -> (usize, usize) {
        match self {
            Norm::Same(_) => (start, start + len),
            Norm::Built(n) => (n.src[start].0, n.src[start + len - 1].1),
        }
    }
}

/// Whether normalising `text` would leave it unchanged: no line ends in whitespace and every
/// char folds to itself. ASCII text (the common case) is checked at memchr speed.
pub fn is_fuzzy_invariant(text: &str) -> bool {
    let ws = |b: u8| matches!(b, b' ' | b'\t' | b'\x0b' | b'\x0c' | b'\r');
    let b = text.as_bytes();
    // One branch-free pass the compiler vectorises: any non-ASCII byte, or whitespace before a
    // newline.
    let odd = b.iter().zip(b.iter().skip(1)).fold(false, |acc, (&p, &c)| {
        let ws = (p == b' ') | (p == b'\t') | (p == 0x0b) | (p == 0x0c) | (p == b'\r');
        acc | (p >= 0x80) | ((c == b'\n') & ws)
    });
    if !odd && b.last().is_none_or(|&c| c < 0x80) {
        return !b.last().is_some_and(|&c| ws(c));
    }
    let mut buf = String::new();
    text.split('\n').all(|line| {
        line.trim_end().len() == line.len()
            && line.chars().all(|c| {
                buf.clear();
                fold_char(c, &mut buf);
                buf.len() == c.len_utf8() && buf.starts_with(c)
            })
    })
}

/// Whether a non-ASCII char can make fuzzy normalisation change a text: it folds to something
/// else, or it is whitespace (trimmed at a line end).
/// `buf` is scratch space, reused across calls so that scanning a large text does not
/// allocate per char.
pub fn folds_or_trims(c: char, buf: &mut String) -> bool {
    if c.is_ascii() {
        return false;
    }
    buf.clear();
    fold_char(c, buf);
    c.is_whitespace() || buf.len() != c.len_utf8() || !buf.starts_with(c)
}

/// Fuzzy-normalises a text.
#[cfg(test)]
fn normalize_for_fuzzy_match(text: &str) -> String {
    normalize(text).text
}

fn count_occurrences(haystack: &str, needle: &str) -> usize {
    if needle.is_empty() {
        return 0;
    }
    haystack.matches(needle).count()
}

/// A matched replacement: byte span in the matched text and the edit's index.
pub type Span = (usize, usize, usize);

/// Applies `edits` to `content` (LF, no BOM), all or nothing. Errors are pi's texts.
pub fn apply_edits(content: &str, edits: &[Edit], path: &str) -> Result<String, String> {
    let spans = match_edits(content, edits, path)?;
    let out = splice(content, &spans, |i| edits[i].new_text.clone());
    if out == content {
        return Err(no_change(path, edits.len() > 1));
    }
    Ok(out)
}

/// Replaces each span (sorted, disjoint) of `text` with `replacement(edit_index)`.
pub fn splice(text: &str, spans: &[Span], replacement: impl Fn(usize) -> String) -> String {
    // Built front to back in one buffer: one copy of the text, however many spans.
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for &(s, e, i) in spans {
        out.push_str(&text[at..s]);
        out.push_str(&replacement(i));
        at = e;
    }
    out.push_str(&text[at..]);
    out
}

/// pi's "no changes" error.
pub fn no_change(path: &str, multi: bool) -> String {
    let what = if multi {
        "The replacements produced identical content."
    } else {
        "The replacement produced identical content."
    };
    format!(
        "No changes made to {path}. {what} This might indicate an issue with special characters or the text not existing as expected."
    )
}

/// Finds where each edit applies in `content` (LF, no BOM): sorted, disjoint spans, or pi's
/// error text (empty, not found, not unique, overlapping).
pub fn match_edits(content: &str, edits: &[Edit], path: &str) -> Result<Vec<Span>, String> {
    let multi = edits.len() > 1;
    let label = |i: usize| {
        if multi {
            format!("edits[{i}]")
        } else {
            "the text".to_string()
        }
    };
    let norm = Norm::of(content);
    let mut spans: Vec<Span> = Vec::with_capacity(edits.len());
    let mut exact = true;
    // The first exact match of each edit, found once.
    let mut found: Vec<Option<usize>> = Vec::with_capacity(edits.len());
    for (i, e) in edits.iter().enumerate() {
        if e.old_text.is_empty() {
            return Err(if multi {
                format!("edits[{i}].oldText must not be empty in {path}.")
            } else {
                format!("oldText must not be empty in {path}.")
            });
        }
        let fuzzy_old = normalize(&e.old_text).text;
        let exact_at = content.find(&e.old_text);
        if exact_at.is_none() && (fuzzy_old.is_empty() || !norm.text().contains(&fuzzy_old)) {
            return Err(not_found(content, &e.old_text, path, multi.then_some(i)));
        }
        let n = match (&norm, exact_at) {
            // The normalised text is the content and the needle normalises to itself: no
            // match lies before the first exact one, so count from there (one pass in all).
            (Norm::Same(_), Some(at)) if fuzzy_old == e.old_text => {
                count_occurrences(&content[at..], &fuzzy_old)
            }
            _ => count_occurrences(norm.text(), &fuzzy_old),
        };
        if n > 1 {
            return Err(if multi {
                format!(
                    "Found {n} occurrences of {} in {path}. Each oldText must be unique. Please provide more context to make it unique.",
                    label(i)
                )
            } else {
                format!(
                    "Found {n} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
                )
            });
        }
        exact &= exact_at.is_some();
        found.push(exact_at);
    }
    for (i, e) in edits.iter().enumerate() {
        let span = if exact {
            found[i].map(|s| (s, s + e.old_text.len()))
        } else {
            let fuzzy_old = normalize(&e.old_text).text;
            norm.text()
                .find(&fuzzy_old)
                .map(|s| norm.span(s, fuzzy_old.len()))
        };
        let (s, end) =
            span.ok_or_else(|| not_found(content, &e.old_text, path, multi.then_some(i)))?;
        spans.push((s, end, i));
    }
    spans.sort_unstable();
    for pair in spans.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a.1 > b.0 {
            let (x, y) = (a.2.min(b.2), a.2.max(b.2));
            return Err(format!(
                "edits[{x}] and edits[{y}] overlap in {path}. Merge them into one edit or target disjoint regions."
            ));
        }
    }
    Ok(spans)
}

/// The not-found error with a hint where the text might be.
fn not_found(content: &str, old: &str, path: &str, index: Option<usize>) -> String {
    let head = match index {
        Some(i) => format!("Could not find edits[{i}] in {path}."),
        None => format!("Could not find the exact text in {path}."),
    };
    format!(
        "{head} The old text must match exactly including all whitespace and newlines.\n\n{}",
        hint(content, old)
    )
}

fn numbered(lines: &[&str], first: usize) -> String {
    let width = (first + lines.len()).to_string().len();
    lines
        .iter()
        .enumerate()
        .map(|(k, l)| format!("{:>width$} | {l}", first + k))
        .collect::<Vec<_>>()
        .join("\n")
}

/// "Closest match is around line N:" (searching shorter and shorter prefixes of the first
/// old line), else the first lines of the file, else "File is empty.".
fn hint(content: &str, old: &str) -> String {
    if content.is_empty() {
        return "File is empty.".to_string();
    }
    let lines: Vec<&str> = content.split('\n').collect();
    let first_old = normalize(old.split('\n').next().unwrap_or("")).text;
    let first_old = first_old.trim();
    let norm_lines: Vec<String> = lines.iter().map(|l| normalize(l).text).collect();
    let old_line_count = old.split('\n').count();
    for len in [60, 50, 40, 30, 20, 10] {
        let prefix: String = first_old.chars().take(len).collect();
        if prefix.chars().count() < len.min(10) || prefix.is_empty() {
            continue;
        }
        if let Some(idx) = norm_lines.iter().position(|l| l.contains(&prefix)) {
            let end = (idx + old_line_count.clamp(3, 10)).min(lines.len());
            return format!(
                "Closest match is around line {}:\n{}",
                idx + 1,
                numbered(&lines[idx..end], idx + 1)
            );
        }
    }
    let end = lines.len().min(5);
    format!("File starts with:\n{}", numbered(&lines[..end], 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn invariance_check_agrees_with_normalisation(
            parts in proptest::collection::vec(
                proptest::prop_oneof!["a", " ", "\t", "\n", "\r", "é", "\u{2019}", "\u{00A0}", "x\n"],
                0..40,
            )
        ) {
            let text = parts.concat();
            proptest::prop_assert_eq!(is_fuzzy_invariant(&text), normalize(&text).text == text);
        }
    }

    fn edit(old: &str, new: &str) -> Edit {
        Edit {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    #[test]
    fn fuzzy_keeps_untouched_bytes() {
        let content = "say(\u{201C}hi\u{201D})   \nkeep \u{2014} this\u{00A0} \n";
        let out = apply_edits(content, &[edit("say(\"hi\")", "say(\"bye\")")], "f").unwrap();
        assert_eq!(out, "say(\"bye\")   \nkeep \u{2014} this\u{00A0} \n");
    }

    #[test]
    fn nfkc_subset_folds() {
        assert_eq!(
            normalize_for_fuzzy_match("\u{FF21}\u{FB01}\u{2026}x\u{00B2}  "),
            "Afi...x2"
        );
    }

    #[test]
    fn errors_name_the_edit() {
        let c = "a\nb\nc\n";
        let e = apply_edits(c, &[edit("a", "x"), edit("zzz", "y")], "p").unwrap_err();
        assert!(e.starts_with("Could not find edits[1] in p."), "{e}");
        let e = apply_edits(c, &[edit("a\nb", "x"), edit("b\nc", "y")], "p").unwrap_err();
        assert_eq!(
            e,
            "edits[0] and edits[1] overlap in p. Merge them into one edit or target disjoint regions."
        );
        let e = apply_edits("x x", &[edit("x", "y")], "p").unwrap_err();
        assert!(
            e.starts_with("Found 2 occurrences of the text in p."),
            "{e}"
        );
        let e = apply_edits("x", &[edit("x", "x")], "p").unwrap_err();
        assert!(e.starts_with("No changes made to p. The replacement produced identical content."));
        assert_eq!(
            apply_edits("x", &[edit("", "y")], "p").unwrap_err(),
            "oldText must not be empty in p."
        );
    }

    #[test]
    fn hint_finds_closest_line() {
        let c = "fn main() {\n    let value = compute(1);\n}\n";
        let e = apply_edits(c, &[edit("    let value = compute(2);", "")], "p").unwrap_err();
        assert!(
            e.contains("Closest match is around line 2:\n2 |     let value = compute(1);"),
            "{e}"
        );
        let e = apply_edits("", &[edit("q", "")], "p").unwrap_err();
        assert!(e.ends_with("File is empty."));
    }
}
