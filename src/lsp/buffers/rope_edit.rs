//! `edit` on an open document: matched in the buffer's text, applied to the rope.
//!
//! [`plan`] finds every `oldText` in the rope's chunks (one pass each) under pi's rules. It
//! takes this path only where it provably equals the whole-text path of `tools::edit`: the text
//! is all-LF or all-CRLF, pi's fuzzy normalisation would not change it nor the `oldText`s (so
//! exact matches and their count are what the fuzzy rules would find), and every `oldText`
//! occurs exactly once. Everything else (fuzzy matches, errors and their hints, mixed line
//! endings) returns `None` and goes through the whole-text path, which stays the reference.
//!
//! The result is sent as one `TextEdit` per replacement (trimmed to the differing middle), and
//! the diff is computed on an excerpt of whole lines around the changes.

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

use ls_types::TextEdit;
use memchr::memmem;
use ropey::Rope;

use crate::lsp::documents::{Document, LineEndings};
use crate::lsp::position::{self, Encoding};
use crate::tools::diff::{EXCERPT_MARGIN, Excerpt, diff, diff_excerpt};
use crate::tools::workspace::{
    DiffResult, Edit, is_fuzzy_invariant, normalize_to_lf, restore_line_endings, strip_bom,
};

/// One replacement in the document's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replacement {
    pub start: usize,
    pub end: usize,
    /// The new text, with the document's line endings.
    pub text: String,
}

/// The replacements of one `edit` call: sorted, disjoint, and changing the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub reps: Vec<Replacement>,
    /// The document uses CRLF (diffs are computed on LF text).
    pub crlf: bool,
}

/// The replacements for `edits` on `doc`, or `None` when the whole-text path must decide
/// (see the module docs).
pub fn plan(doc: &Document, edits: &[Edit]) -> Option<Plan> {
    let crlf = match doc.facts.line_endings() {
        LineEndings::Lf => false,
        LineEndings::Crlf => true,
        LineEndings::Mixed => return None,
    };
    // A BOM inside a needle could match the document's own BOM, which the whole-text path
    // strips before matching.
    let plain = |e: &Edit| {
        !e.old_text.is_empty()
            && !e.old_text.contains('\u{FEFF}')
            && is_fuzzy_invariant(&e.old_text)
    };
    if !doc.facts.fuzzy_invariant(&doc.rope) || !edits.iter().all(plain) {
        return None;
    }
    let mut reps = Vec::with_capacity(edits.len());
    for e in edits {
        let needle = restore_line_endings(&e.old_text, crlf);
        let start = unique_match(&doc.rope, needle.as_bytes())?;
        reps.push(Replacement {
            start,
            end: start + needle.len(),
            text: restore_line_endings(&e.new_text, crlf),
        });
    }
    reps.sort_by_key(|r| r.start);
    if reps.windows(2).any(|w| w[0].end > w[1].start) {
        return None;
    }
    changes_anything(doc, &reps).then_some(Plan { reps, crlf })
}

/// Whether the replacements change the text. Replacements that touch (one ends where the next
/// starts) are judged together: `"b"→"b\n"` beside `"\n"→""` changes nothing, which the
/// whole-text path reports as "No changes made", so this path must decline it too.
fn changes_anything(doc: &Document, reps: &[Replacement]) -> bool {
    let mut group_start = 0;
    for i in 0..reps.len() {
        let touches_next = reps
            .get(i + 1)
            .is_some_and(|next| next.start == reps[i].end);
        if touches_next {
            continue;
        }
        let group = &reps[group_start..=i];
        let new_text: Vec<u8> = group.iter().flat_map(|r| r.text.bytes()).collect();
        if doc.bytes(group[0].start..reps[i].end) != new_text {
            return true;
        }
        group_start = i + 1;
    }
    false
}

/// A document at least this large is searched by this thread and a helper, in [`PIECES`]
/// pieces: the scan of a 10 MB buffer is most of an `edit`'s time (BENCH.md, scenario 5).
const SPLIT_FROM: usize = 1 << 20;
const PIECES: usize = 16;

/// Where the (non-empty) `needle` starts in the rope if it starts at exactly one place. Two
/// overlapping occurrences count as two, so this is `None` (and the whole-text path, which
/// counts them as one, decides) wherever it could differ from `str::matches`.
fn unique_match(rope: &Rope, needle: &[u8]) -> Option<usize> {
    static CORES: OnceLock<usize> = OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from));
    let pieces = if rope.len_bytes() >= SPLIT_FROM && cores > 1 {
        PIECES
    } else {
        1
    };
    match shared_scan(rope, needle, pieces) {
        Found::One(at) => Some(at),
        Found::None | Found::Many => None,
    }
}

/// The needle's starts in the rope cut in `pieces`, which this thread and a helper take from a
/// counter. This thread waits only for pieces the helper took, never for it to start: on a
/// busy machine it does them all. Hand-made rather than rayon because rayon's pool leaves the
/// calling thread idle while its workers wake: p99 per edit 15.0 ms against 10.8 (BENCH.md).
fn shared_scan(rope: &Rope, needle: &[u8], pieces: usize) -> Found {
    if pieces <= 1 {
        return matches_in(rope, needle, 0..rope.len_bytes());
    }
    let work = Arc::new(Pieces {
        rope: rope.clone(),
        needle: needle.to_vec(),
        pieces,
        next: AtomicUsize::new(0),
        state: Mutex::new((Found::None, 0)),
        done: Condvar::new(),
    });
    let helper = work.clone();
    let spawned = std::thread::Builder::new()
        .name("agent-lsp-scan".into())
        .spawn(move || helper.take());
    if let Err(e) = spawned {
        tracing::debug!(%e, "no helper thread for the scan");
    }
    work.take();
    work.wait()
}

/// A scan shared by piece (see [`shared_scan`]).
struct Pieces {
    rope: Rope,
    needle: Vec<u8>,
    pieces: usize,
    next: AtomicUsize,
    /// What the finished pieces found, and how many finished.
    state: Mutex<(Found, usize)>,
    done: Condvar,
}

impl Pieces {
    fn state(&self) -> MutexGuard<'_, (Found, usize)> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.pieces || self.state().0 == Found::Many {
                return;
            }
            let len = self.rope.len_bytes();
            let range = len * i / self.pieces..len * (i + 1) / self.pieces;
            // A piece that panics counts as many (the whole-text path decides), and still
            // finishes: nobody waits for it forever.
            let found = catch_unwind(AssertUnwindSafe(|| {
                matches_in(&self.rope, &self.needle, range)
            }))
            .unwrap_or(Found::Many);
            let mut state = self.state();
            state.0 = state.0.and(found);
            state.1 += 1;
            self.done.notify_all();
        }
    }

    /// Once every piece is done, or one settled it (more than one match).
    fn wait(&self) -> Found {
        let mut state = self.state();
        while state.1 < self.pieces && state.0 != Found::Many {
            state = self
                .done
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    None,
    One(usize),
    Many,
}

impl Found {
    fn and(self, other: Found) -> Found {
        match (self, other) {
            (Found::None, x) | (x, Found::None) => x,
            _ => Found::Many,
        }
    }
}

/// The needle's starts in the byte range `range` of the rope (a match may end past it).
fn matches_in(rope: &Rope, needle: &[u8], range: Range<usize>) -> Found {
    if range.is_empty() {
        return Found::None;
    }
    let finder = memmem::Finder::new(needle);
    let keep = needle.len().saturating_sub(1);
    // Each chunk is searched in place; a match that crosses into a chunk from before starts in
    // the last `keep` bytes before it (`tail`), so only `tail` + the chunk's first `keep` bytes
    // are copied and searched for those.
    let mut tail: Vec<u8> = Vec::with_capacity(2 * keep);
    let mut boundary: Vec<u8> = Vec::with_capacity(2 * keep);
    let mut found = Found::None;
    let (chunks, mut chunk_start, _, _) = rope.chunks_at_byte(range.start);
    for chunk in chunks.map(str::as_bytes) {
        // A match starting before `range.end` is found by the time its last byte is seen.
        if chunk_start >= range.end + keep || found == Found::Many {
            break;
        }
        if !tail.is_empty() {
            boundary.clear();
            boundary.extend_from_slice(&tail);
            boundary.extend_from_slice(&chunk[..chunk.len().min(keep)]);
            let tail_start = chunk_start - tail.len();
            // Only matches starting in `tail`: later ones lie inside the chunk.
            for at in starts(&finder, &boundary).take_while(|&at| at < tail.len()) {
                if range.contains(&(tail_start + at)) {
                    found = found.and(Found::One(tail_start + at));
                }
            }
        }
        for at in starts(&finder, chunk).map(|at| chunk_start + at) {
            if at >= range.end || found == Found::Many {
                break;
            }
            if at >= range.start {
                found = found.and(Found::One(at));
            }
        }
        if chunk.len() >= keep {
            tail.clear();
        } else {
            tail.drain(..(tail.len() + chunk.len()).saturating_sub(keep));
        }
        tail.extend_from_slice(&chunk[chunk.len().saturating_sub(keep)..]);
        chunk_start += chunk.len();
    }
    found
}

/// Every place `finder`'s needle starts in `hay`, overlapping ones included (memchr's
/// `find_iter` skips those).
fn starts<'h>(finder: &'h memmem::Finder<'_>, hay: &'h [u8]) -> impl Iterator<Item = usize> + 'h {
    let mut from = 0;
    std::iter::from_fn(move || {
        let at = from + finder.find(hay.get(from..)?)?;
        from = at + 1;
        Some(at)
    })
}

/// `doc` with the plan applied (an O(1) clone of the rope, then the replacements; the facts
/// follow, so the new fingerprint costs nothing extra).
pub fn applied(doc: &Document, plan: &Plan) -> Document {
    let mut after = doc.clone();
    // Last first: earlier offsets stay valid.
    for r in plan.reps.iter().rev() {
        let chars = after.rope.byte_to_char(r.start)..after.rope.byte_to_char(r.end);
        after.replace(chars, &r.text);
    }
    after
}

/// The `TextEdit`s of the plan, each trimmed to the differing middle of its replacement, in
/// positions of `doc` (all relative to it, as LSP requires of one edit's `TextEdit`s).
pub fn text_edits(doc: &Document, plan: &Plan, enc: Encoding) -> Vec<TextEdit> {
    let mut out = Vec::with_capacity(plan.reps.len());
    for r in &plan.reps {
        let old = String::from_utf8_lossy(&doc.bytes(r.start..r.end)).into_owned();
        if old == r.text {
            continue;
        }
        let region = super::region(&old, &r.text);
        let at = |byte: usize| position::to_position(&doc.rope, doc.rope.byte_to_char(byte), enc);
        let range = ls_types::Range::new(at(r.start + region.start), at(r.start + region.old_end));
        out.push(TextEdit::new(
            range,
            r.text[region.start..region.new_end].to_owned(),
        ));
    }
    out
}

/// The diff of `before` → `after` (LF text without BOM, as `edit` reports it), computed on
/// whole lines around the replacements only.
pub fn diff_of(before: &Document, after: &Document, plan: &Plan, path: &str) -> DiffResult {
    excerpt_diff(before, after, plan, path).unwrap_or_else(|| {
        let text = |d: &Document| normalize_to_lf(strip_bom(&String::from(&d.rope)).1);
        diff(&text(before), &text(after), path)
    })
}

fn excerpt_diff(
    before: &Document,
    after: &Document,
    plan: &Plan,
    path: &str,
) -> Option<DiffResult> {
    let (first, last) = (plan.reps.first()?, plan.reps.last()?);
    let growth: i64 = plan
        .reps
        .iter()
        .map(|r| r.text.len() as i64 - (r.end - r.start) as i64)
        .sum();
    let new_last_end = usize::try_from(last.end as i64 + growth).ok()?;
    let (old, new) = (&before.rope, &after.rope);
    let l0 = old.byte_to_line(first.start).saturating_sub(EXCERPT_MARGIN);
    let old_l1 = (old.byte_to_line(last.end) + EXCERPT_MARGIN + 1).min(old.len_lines());
    let new_l1 = (new.byte_to_line(new_last_end) + EXCERPT_MARGIN + 1).min(new.len_lines());
    let text = |d: &Document, from: usize, to: usize| -> Option<String> {
        let range = d.rope.line_to_byte(from)..d.rope.line_to_byte(to);
        let s = String::from_utf8(d.bytes(range)).ok()?;
        let s = if from == 0 {
            strip_bom(&s).1.to_owned()
        } else {
            s
        };
        Some(if plan.crlf { normalize_to_lf(&s) } else { s })
    };
    let old_text = text(before, l0, old_l1)?;
    let new_text = text(after, l0, new_l1)?;
    let excerpt = Excerpt {
        before: l0,
        after: lines_from(old, old_l1),
        max_line: Some(before.facts.line_feeds().max(after.facts.line_feeds()) + 1),
    };
    diff_excerpt(&old_text, &new_text, path, excerpt)
}

/// Lines from line `from` to the end, a last line without a line break included (ropey counts
/// an empty last line after a final break; `split('\n')`-style counting does not).
fn lines_from(rope: &Rope, from: usize) -> usize {
    let n = rope.len_lines().saturating_sub(from);
    let ends_with_break = rope.len_bytes() > 0 && rope.byte(rope.len_bytes() - 1) == b'\n';
    if ends_with_break {
        n.saturating_sub(1)
    } else {
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A rope made of 3-char chunks, so matches and excerpts cross chunk boundaries (ropey's
    /// own test builder; the tree is not rebalanced, which edits do not need).
    fn chunky(text: &str) -> Rope {
        let chars: Vec<char> = text.chars().collect();
        let mut builder = ropey::RopeBuilder::new();
        for piece in chars.chunks(3) {
            builder._append_chunk(&piece.iter().collect::<String>());
        }
        builder._finish_no_fix()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// The chunk search finds the one place a needle starts, across chunk boundaries, and
        /// nothing when it starts at none or several (overlapping ones included).
        #[test]
        fn unique_match_equals_a_scan_of_the_text(
            text in "[ab\n]{0,200}",
            needle in "[ab\n]{1,12}",
        ) {
            let starts: Vec<usize> = (0..text.len())
                .filter(|&i| text.as_bytes()[i..].starts_with(needle.as_bytes()))
                .collect();
            let want = (starts.len() == 1).then(|| starts[0]);
            for pieces in [1, 2, 3, 7] {
                let found = |rope: &Rope| match shared_scan(rope, needle.as_bytes(), pieces) {
                    Found::One(at) => Some(at),
                    Found::None | Found::Many => None,
                };
                prop_assert_eq!(found(&chunky(&text)), want);
                prop_assert_eq!(found(&Rope::from_str(&text)), want);
            }
        }
    }

    #[test]
    fn unique_match_finds_long_needles_across_many_chunks() {
        let text: String = (0..3000).map(|i| format!("line {i}\n")).collect();
        let rope = chunky(&text);
        assert!(rope.chunks().count() > 100);
        let needle = "line 1499\nline 1500\nline 1501\n";
        for pieces in [1, PIECES] {
            let found =
                |rope: &Rope, needle: &str| match shared_scan(rope, needle.as_bytes(), pieces) {
                    Found::One(at) => Some(at),
                    Found::None | Found::Many => None,
                };
            assert_eq!(found(&rope, needle), text.find(needle));
            assert_eq!(found(&rope, "line 1"), None, "several");
            assert_eq!(found(&rope, "line 3000"), None, "none");
            // Overlapping starts count as two, also across the parts: the whole-text path decides.
            assert_eq!(found(&chunky("aaa"), "aa"), None);
        }
    }

    fn doc_of(text: &str) -> Document {
        let mut doc = Document::new("file:///p".into(), 1, Rope::new());
        // Built from pieces so that the rope has many chunks.
        doc.rope = chunky(text);
        doc.facts = crate::lsp::documents::DocFacts::of(&doc.rope);
        doc
    }

    fn text_of(doc: &Document) -> String {
        doc.rope.to_string()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// Where the rope path applies, it gives exactly the whole-text path's content and
        /// diff; where it does not, it says so.
        #[test]
        fn plan_equals_the_whole_text_edit(
            bom in any::<bool>(),
            lines in proptest::collection::vec("[ab]{0,3}( )?", 0..30),
            crlf in any::<bool>(),
            edits in proptest::collection::vec(("[ab\n]{1,5}", "[abx\n]{0,4}"), 1..3),
        ) {
            let eol = if crlf { "\r\n" } else { "\n" };
            let body = lines.join(eol);
            let text = if bom { format!("\u{FEFF}{body}") } else { body };
            let edits: Vec<Edit> = edits
                .into_iter()
                .map(|(old_text, new_text)| Edit { old_text, new_text })
                .collect();
            let doc = doc_of(&text);
            let reference = crate::tools::workspace::compute_edit(text.as_bytes(), &edits, "p");
            match plan(&doc, &edits) {
                Some(p) => {
                    let (bytes, d) = reference.map_err(|e| TestCaseError::fail(e.to_string()))?;
                    let after = applied(&doc, &p);
                    let got = text_of(&after);
                    prop_assert_eq!(got.as_bytes(), &bytes[..]);
                    prop_assert_eq!(after.facts, crate::lsp::documents::DocFacts::of(&after.rope));
                    prop_assert_eq!(diff_of(&doc, &after, &p, "p"), d);
                }
                None => {
                    // Declined: fine whenever the reference fails or the rules above exclude it;
                    // it must never decline a plain unique exact edit on a clean LF text. Unique
                    // counting overlapping starts too ("bb" in "bbb" is two: the rope path leaves
                    // those to the whole-text path).
                    let old = edits[0].old_text.as_bytes();
                    let starts = text.as_bytes().windows(old.len()).filter(|w| *w == old).count();
                    let plain = !text.contains('\r') && !text.contains(' ') && !bom
                        && edits.len() == 1 && reference.is_ok()
                        && starts == 1
                        && !text.ends_with(' ');
                    prop_assert!(!plain, "declined a plain edit");
                }
            }
        }
    }

    /// Found by the property test above: two edits that touch and undo each other.
    #[test]
    fn touching_edits_that_cancel_out_are_left_to_the_whole_text_path() {
        let doc = doc_of("b\n");
        let edit = |old: &str, new: &str| Edit {
            old_text: old.into(),
            new_text: new.into(),
        };
        let edits = [edit("\n", ""), edit("b", "b\n")];
        assert!(plan(&doc, &edits).is_none());
        let reference = crate::tools::workspace::compute_edit(b"b\n", &edits, "p");
        assert!(reference.is_err());
        assert!(plan(&doc, &[edit("\n", ""), edit("b", "a\n")]).is_some());
    }

    #[test]
    fn excerpt_diff_of_a_large_text_equals_the_whole_diff() {
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let doc = doc_of(&text);
        let edits = [
            Edit {
                old_text: "line 7\n".into(),
                new_text: "seven\n".into(),
            },
            Edit {
                old_text: "line 1500\nline 1501\n".into(),
                new_text: "x\n".into(),
            },
        ];
        let p = plan(&doc, &edits).unwrap();
        let after = applied(&doc, &p);
        let (bytes, d) =
            crate::tools::workspace::compute_edit(text.as_bytes(), &edits, "p").unwrap();
        assert_eq!(text_of(&after).as_bytes(), &bytes[..]);
        assert_eq!(excerpt_diff(&doc, &after, &p, "p").unwrap(), d);
    }
}
