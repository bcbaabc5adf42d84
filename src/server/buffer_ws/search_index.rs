//! A per-document occurrence index: blocks of the text, each with a bit filter of the 4-byte
//! grams that start in it, so an exact search scans only the blocks that can hold a match.
//!
//! pi's `edit` needs every `oldText` to occur exactly once, so a plain search reads the whole
//! document (about a millisecond for 10 MB). The index keeps, per block of 4–16 KiB, an
//! 8192-bit filter of the grams starting in the block (the last three reading into the next
//! one). A match starting in block `i` has all its grams at offsets below the minimum block
//! length starting in block `i` or `i + 1`, so block `i` is a candidate only if each such
//! pattern gram is in `filter(i) | filter(i + 1)`. Only candidate regions are searched, in
//! order, which reproduces the full scan exactly: the same first match and the same
//! non-overlapping count (property-tested against the plain scan).
//!
//! The filters are stored transposed ([`Columns`]: per filter bit, the blocks holding it), so
//! a search reads only the needle's columns instead of every block's filter. A small change
//! inside one block only adds its new grams to the filter, in O(change) (a filter may hold a
//! few stale bits, which can only make a block a candidate in vain, never miss a match); the
//! block is rebuilt once its changes add up to a quarter of its length, and a change that
//! splits or merges blocks moves the later blocks' bits, in O(number of blocks).

use memchr::memmem;
use ropey::Rope;

use super::search_columns::{Columns, FILTER_BITS, FILTER_WORDS, Filter};

/// How often a needle occurs (non-overlapping, leftmost first, as `str::matches` counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Occurrences {
    None,
    One(usize),
    Many,
}

/// Length of the grams the filters hold.
pub const GRAM: usize = 4;
/// Documents at least this long get an index; shorter ones are scanned (a few microseconds).
pub const INDEX_THRESHOLD: usize = 256 * 1024;
/// `FILTER_BITS` is 2 to this.
const FILTER_BITS_LOG2: u32 = 13;
const _: () = assert!(FILTER_BITS == 1 << FILTER_BITS_LOG2);

/// Block size bounds. Every block's length is within `min..=max`, except a document's only
/// block, which may be shorter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    pub min: usize,
    pub target: usize,
    pub max: usize,
}

impl Params {
    /// 4–16 KiB blocks (8 KiB on average after a rebuild): the 1 KiB filters take about
    /// 12.5 % of the text, and a change rebuilds one or two blocks.
    pub const DEFAULT: Params = Params {
        min: 4096,
        target: 8192,
        max: 16384,
    };

    /// Small blocks, so that short test texts have many and matches straddle their bounds.
    #[cfg(test)]
    pub const SMALL: Params = Params {
        min: 8,
        target: 16,
        max: 32,
    };
}

/// The index of one text (the rope it was built or last updated with).
#[derive(Clone)]
pub struct SearchIndex {
    params: Params,
    total: usize,
    lens: Vec<usize>,
    /// The blocks' filters (8192 bits, one hash per gram), transposed.
    columns: Columns,
    /// Grams added to each block's filter in place since the filter was last built from the
    /// text (see [`SearchIndex::replaced`]); the block is rebuilt once they reach a quarter of
    /// its length, so stale bits stay few.
    added: Vec<usize>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("bytes", &self.total)
            .field("blocks", &self.lens.len())
            .field("memory", &self.memory_bytes())
            .finish()
    }
}

/// The filter bit of the gram starting at `g[0]` (multiplicative hashing, top bits).
fn gram_bit(g: &[u8]) -> usize {
    let v = u32::from_le_bytes([g[0], g[1], g[2], g[3]]);
    (v.wrapping_mul(0x9E37_79B1) >> (32 - FILTER_BITS_LOG2)) as usize
}

/// Copies the text's bytes `from..to` (any byte offsets, clamped) into `buf`, chunk by chunk
/// (a byte iterator costs ~40 instructions per byte).
pub(crate) fn read_bytes(rope: &Rope, from: usize, to: usize, buf: &mut Vec<u8>) {
    buf.clear();
    let to = to.min(rope.len_bytes());
    if from >= to {
        return;
    }
    let (chunks, mut at, _, _) = rope.chunks_at_byte(from);
    for chunk in chunks {
        let c = chunk.as_bytes();
        let lo = from.saturating_sub(at);
        let hi = (to - at).min(c.len());
        buf.extend_from_slice(&c[lo..hi]);
        at += c.len();
        if at >= to {
            break;
        }
    }
}

/// The filter of the block `start..start + len`: grams starting in it that end in the text.
fn filter_of(rope: &Rope, start: usize, len: usize, buf: &mut Vec<u8>) -> Filter {
    read_bytes(rope, start, start + len + GRAM - 1, buf);
    let mut f: Filter = [0; FILTER_WORDS];
    for g in buf.windows(GRAM).take(len) {
        let bit = gram_bit(g);
        f[bit / 64] |= 1 << (bit % 64);
    }
    f
}

/// Lengths of the blocks `total` bytes are split into: near-equal, within the bounds.
fn split(total: usize, p: Params) -> impl Iterator<Item = usize> {
    let k = ((total + p.target / 2) / p.target).max(1);
    let (q, r) = (total / k, total % k);
    (0..k).map(move |i| q + usize::from(i < r))
}

impl SearchIndex {
    /// The index of `rope`'s text, one pass over it.
    pub fn build(rope: &Rope, params: Params) -> SearchIndex {
        let total = rope.len_bytes();
        let lens: Vec<usize> = split(total, params).collect();
        let mut buf = Vec::with_capacity(params.max + GRAM);
        let mut start = 0;
        // Each block's filter goes into the columns as it is built (no list of all filters).
        let mut columns = Columns::empty(lens.len());
        for (i, &len) in lens.iter().enumerate() {
            columns.add_filter(i, &filter_of(rope, start, len, &mut buf));
            start += len;
        }
        SearchIndex {
            params,
            total,
            added: vec![0; lens.len()],
            lens,
            columns,
        }
    }

    /// Bytes of text the index covers.
    pub fn len(&self) -> usize {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Heap bytes the index holds (the filters and the block lists).
    pub fn memory_bytes(&self) -> usize {
        self.columns.memory_bytes()
            + (self.lens.capacity() + self.added.capacity()) * std::mem::size_of::<usize>()
    }

    /// Updates the index after the bytes `start..old_end` of its text were replaced by
    /// `new_len` bytes; `rope` is the text after the change. A change inside one block that
    /// keeps it within the bounds adds the grams that changed to the filters in place
    /// ([`SearchIndex::replaced_in_place`], O(change)); otherwise the blocks holding them (from
    /// `start - 3`) are rebuilt, merged or split to keep the bounds.
    pub fn replaced(&mut self, rope: &Rope, start: usize, old_end: usize, new_len: usize) {
        // Clamped to the indexed text (a range past it would be a caller's bug, never a panic).
        let start = start.min(self.total);
        let old_end = old_end.clamp(start, self.total);
        if self.replaced_in_place(rope, start, old_end, new_len) {
            return;
        }
        let from = start.saturating_sub(GRAM - 1);
        let (mut first, mut last) = (self.block_at(from), self.block_ending_at(old_end));
        last = last.max(first);
        let mut region_start: usize = self.lens[..first].iter().sum();
        let region_len: usize = self.lens[first..=last].iter().sum();
        let new_total = self.total - (old_end - start) + new_len;
        let mut new_len_region = region_len - (old_end - start) + new_len;
        // Too short a region is merged with a neighbour (the next one first).
        while new_len_region < self.params.min && (first > 0 || last + 1 < self.lens.len()) {
            let extra = if last + 1 < self.lens.len() {
                last += 1;
                self.lens[last]
            } else {
                first -= 1;
                region_start -= self.lens[first];
                self.lens[first]
            };
            new_len_region += extra;
        }
        let mut buf = Vec::with_capacity(self.params.max + GRAM);
        let mut at = region_start;
        let (mut lens, mut filters) = (Vec::new(), Vec::new());
        for len in split(new_len_region, self.params) {
            filters.push(filter_of(rope, at, len, &mut buf));
            lens.push(len);
            at += len;
        }
        self.added.splice(first..=last, vec![0; lens.len()]);
        self.lens.splice(first..=last, lens);
        self.columns.splice(first..last + 1, &filters);
        self.total = new_total;
    }

    /// The update of a change inside one block (`start..old_end` within it) that leaves the
    /// block within the bounds: the grams starting from `start - 3` up to the end of the new
    /// text are added to the filters of the blocks they start in; nothing else moves (later
    /// grams keep their bytes and their block). A filter then holds every gram of its block
    /// and maybe a few that are gone: a stale bit can only make a block a candidate for
    /// nothing, so searches stay exact. `false` (nothing done) when this does not apply.
    fn replaced_in_place(
        &mut self,
        rope: &Rope,
        start: usize,
        old_end: usize,
        new_len: usize,
    ) -> bool {
        if self.lens.len() < 2 {
            return false;
        }
        let b = self.block_at(start);
        let block_start: usize = self.lens[..b].iter().sum();
        let from = start.saturating_sub(GRAM - 1);
        if old_end > block_start + self.lens[b] {
            return false;
        }
        // Within the block, so at most its length is removed.
        let len = self.lens[b] - (old_end - start) + new_len;
        // The grams before `start` may start in the previous block, never further back.
        let reaches_back = from < block_start && (b == 0 || self.lens[b - 1] < GRAM);
        // Gram starts whose gram changed (or, at the text's end, is gone), and removed ones:
        // each may leave a stale bit, so each counts towards the block's rebuild.
        let (grams, removed) = (start + new_len - from, old_end - start);
        if reaches_back
            || !(self.params.min..=self.params.max).contains(&len)
            || (self.added[b] + grams + removed) * 4 > len
        {
            return false;
        }
        let mut buf = Vec::with_capacity(grams + GRAM - 1);
        read_bytes(rope, from, start + new_len + GRAM - 1, &mut buf);
        self.added[b] += removed;
        for i in 0..grams {
            let at = if from + i < block_start { b - 1 } else { b };
            self.added[at] += 1;
            // Near the text's end a gram start may have no whole gram any more.
            let Some(g) = buf.get(i..i + GRAM) else {
                continue;
            };
            self.columns.set(at, gram_bit(g));
        }
        self.total = self.total - removed + new_len;
        self.lens[b] = len;
        true
    }

    /// The block holding byte `at` (the last block when `at` is the end of the text).
    fn block_at(&self, at: usize) -> usize {
        let mut end = 0;
        for (i, len) in self.lens.iter().enumerate() {
            end += len;
            if at < end {
                return i;
            }
        }
        self.lens.len() - 1
    }

    /// The first block ending at or after `at`.
    fn block_ending_at(&self, at: usize) -> usize {
        let mut end = 0;
        for (i, len) in self.lens.iter().enumerate() {
            end += len;
            if at <= end {
                return i;
            }
        }
        self.lens.len() - 1
    }

    /// Finds `needle` in `rope` (the text this index describes), stopping at the second
    /// occurrence, exactly as the plain scan does. `None` when the needle is shorter than a
    /// gram (the filters cannot help) or the index does not match the text's length.
    pub fn find_unique(&self, rope: &Rope, needle: &[u8]) -> Option<Occurrences> {
        let m = needle.len();
        if m < GRAM || rope.len_bytes() != self.total {
            return None;
        }
        if m > self.total {
            return Some(Occurrences::None);
        }
        let mut search = RegionSearch::new(rope, needle);
        let candidates = self
            .columns
            .candidates(&needle_grams(needle, self.params.min));
        let mut pending: Option<(usize, usize)> = None;
        let mut start = 0;
        // 64 blocks per candidate word; a word without candidates only moves `start` on.
        for (&word, lens) in candidates.iter().zip(self.lens.chunks(64)) {
            if word == 0 {
                start += lens.iter().sum::<usize>();
                continue;
            }
            for (j, &len) in lens.iter().enumerate() {
                if word & (1 << j) != 0 {
                    let region = (start, (start + len + m - 1).min(self.total));
                    pending = match pending {
                        Some((s, e)) if region.0 <= e => Some((s, e.max(region.1))),
                        Some(done) => {
                            if search.scan(done) {
                                return Some(Occurrences::Many);
                            }
                            Some(region)
                        }
                        None => Some(region),
                    };
                }
                start += len;
            }
        }
        if let Some(done) = pending
            && search.scan(done)
        {
            return Some(Occurrences::Many);
        }
        Some(search.found.map_or(Occurrences::None, Occurrences::One))
    }

    /// Checks the index against a fresh build of `rope` (tests and debugging): the same
    /// blocks, each filter holding at least the fresh one's bits, and exactly them when
    /// nothing was added in place.
    #[cfg(test)]
    pub fn check(&self, rope: &Rope) -> Result<(), String> {
        let p = self.params;
        if self.total != rope.len_bytes() || self.lens.iter().sum::<usize>() != self.total {
            return Err(format!("lengths {:?} vs {}", self.lens, rope.len_bytes()));
        }
        if self.added.len() != self.lens.len() || self.columns.blocks() != self.lens.len() {
            return Err("block lists of different lengths".into());
        }
        if self.lens.len() > 1 && self.lens.iter().any(|&l| l < p.min || l > p.max) {
            return Err(format!("block bounds {:?}", self.lens));
        }
        let mut buf = Vec::new();
        let mut start = 0;
        let mut fresh = Vec::with_capacity(self.lens.len());
        for &len in &self.lens {
            fresh.push(filter_of(rope, start, len, &mut buf));
            start += len;
        }
        let exact: Vec<bool> = self.added.iter().map(|&a| a == 0).collect();
        self.columns.check_against(&Columns::of(&fresh), &exact)
    }
}

/// The filter bits of the needle's grams that must start in a match's block or the next one
/// (offsets below the minimum block length), without repeats.
fn needle_grams(needle: &[u8], min_block: usize) -> Vec<usize> {
    let mut bits: Vec<usize> = needle
        .windows(GRAM)
        .take(min_block.max(1))
        .map(gram_bit)
        .collect();
    bits.sort_unstable();
    bits.dedup();
    bits
}

/// Searches candidate regions in order, keeping pi's non-overlapping leftmost count.
struct RegionSearch<'a> {
    rope: &'a Rope,
    finder: memmem::Finder<'a>,
    m: usize,
    /// No match may start before this (the previous one ends there).
    next_allowed: usize,
    found: Option<usize>,
    buf: Vec<u8>,
}

impl<'a> RegionSearch<'a> {
    fn new(rope: &'a Rope, needle: &'a [u8]) -> Self {
        RegionSearch {
            rope,
            finder: memmem::Finder::new(needle),
            m: needle.len(),
            next_allowed: 0,
            found: None,
            buf: Vec::new(),
        }
    }

    /// Searches the bytes `start..end`; true at the second occurrence.
    fn scan(&mut self, (start, end): (usize, usize)) -> bool {
        let from = start.max(self.next_allowed);
        if from + self.m > end {
            return false;
        }
        read_bytes(self.rope, from, end, &mut self.buf);
        let mut at = 0;
        while let Some(j) = self.finder.find(&self.buf[at..]) {
            if self.found.is_some() {
                return true;
            }
            self.found = Some(from + at + j);
            at += j + self.m;
            self.next_allowed = from + at;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::buffer_ws::rope_edit::find_unique;
    use proptest::prelude::*;

    const SMALL: Params = Params::SMALL;

    fn reference(text: &[u8], needle: &[u8]) -> Occurrences {
        find_unique(&Rope::from_str(std::str::from_utf8(text).unwrap()), needle)
    }

    fn indexed(index: &SearchIndex, rope: &Rope, needle: &[u8]) -> Occurrences {
        index.find_unique(rope, needle).unwrap()
    }

    /// A needle: a slice of the text (so it occurs) or free text.
    fn needle_of(text: &str, at: usize, len: usize, free: &str, pick: bool) -> String {
        if pick && len <= text.len() {
            let at = at % (text.len() - len + 1);
            text[at..at + len].to_owned()
        } else {
            free.to_owned()
        }
    }

    /// Applies each `(at, len, new)` (clamped to the text) to the rope and the index, checking
    /// the index after each.
    fn apply_edits(
        rope: &mut Rope,
        index: &mut SearchIndex,
        edits: Vec<(usize, usize, String)>,
    ) -> Result<(), TestCaseError> {
        for (at, len, new) in edits {
            let n = rope.len_chars();
            let (s, e) = (at.min(n), (at + len).min(n));
            rope.remove(s..e);
            rope.insert(s, &new);
            index.replaced(rope, s, e, new.len());
            prop_assert_eq!(index.check(rope), Ok(()));
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn indexed_search_equals_the_scan(
            text in "[ab\n]{0,300}",
            at in 0usize..300,
            len in 4usize..40,
            free in "[ab\n]{4,12}",
            pick in any::<bool>(),
            params in prop_oneof![Just(SMALL), Just(Params { min: 4, target: 8, max: 13 })],
        ) {
            let needle = needle_of(&text, at, len, &free, pick);
            let rope = Rope::from_str(&text);
            let index = SearchIndex::build(&rope, params);
            prop_assert_eq!(index.check(&rope), Ok(()));
            prop_assert_eq!(
                indexed(&index, &rope, needle.as_bytes()),
                reference(text.as_bytes(), needle.as_bytes())
            );
        }

        /// Edits applied through the update path leave the index with a fresh build's blocks
        /// and (at least) its filters, and searches equal to the scan, over texts spanning
        /// several rope chunks.
        #[test]
        fn updated_index_equals_a_fresh_one(
            text in "[abc\n]{0,3000}",
            edits in proptest::collection::vec(
                (0usize..3100, 0usize..200, "[abc\n]{0,300}"), 1..12),
            needles in proptest::collection::vec((0usize..3000, 4usize..24), 1..4),
        ) {
            let mut rope = Rope::from_str(&text);
            let mut index = SearchIndex::build(&rope, SMALL);
            apply_edits(&mut rope, &mut index, edits)?;
            let text = rope.to_string();
            for (at, len) in needles {
                let needle = needle_of(&text, at, len, "abca", true);
                prop_assert_eq!(
                    indexed(&index, &rope, needle.as_bytes()),
                    reference(text.as_bytes(), needle.as_bytes())
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(600))]
        /// Small changes, most of them updated in place (added grams, stale bits kept): the
        /// index stays a superset of a fresh one with the same blocks, and every search equals
        /// the scan, including needles that were removed or created by the changes.
        #[test]
        fn in_place_updates_keep_searches_exact(
            text in "[abc\n]{200,3000}",
            edits in proptest::collection::vec(
                (0usize..3100, 0usize..4, "[abc\n]{0,4}"), 1..40),
            params in prop_oneof![
                Just(Params { min: 16, target: 32, max: 64 }),
                Just(Params { min: 4, target: 8, max: 13 }),
            ],
            needles in proptest::collection::vec((0usize..3000, 4usize..16, any::<bool>()), 1..6),
        ) {
            let original = text.clone();
            let mut rope = Rope::from_str(&text);
            let mut index = SearchIndex::build(&rope, params);
            apply_edits(&mut rope, &mut index, edits)?;
            let text = rope.to_string();
            for (at, len, from_original) in needles {
                let source = if from_original { &original } else { &text };
                let needle = needle_of(source, at, len, "abca", true);
                prop_assert_eq!(
                    indexed(&index, &rope, needle.as_bytes()),
                    reference(text.as_bytes(), needle.as_bytes())
                );
            }
        }
    }

    #[test]
    fn a_small_change_inside_a_block_is_added_in_place() {
        let text: String = (0..400).map(|i| format!("{i:04}-")).collect();
        let mut rope = Rope::from_str(&text);
        let params = Params {
            min: 16,
            target: 32,
            max: 64,
        };
        let mut index = SearchIndex::build(&rope, params);
        let lens = index.lens.clone();
        // "0100-" at 500 becomes "01zz-": block 15 (480..512) grows by one byte.
        rope.remove(502..504);
        rope.insert(502, "zzz");
        index.replaced(&rope, 502, 504, 3);
        index.check(&rope).unwrap();
        assert_eq!(index.lens.len(), lens.len());
        assert_eq!(index.lens[15], lens[15] + 1);
        assert_eq!(index.added[15], 2 + 6);
        assert_eq!(indexed(&index, &rope, b"01zzz-"), Occurrences::One(500));
        assert_eq!(indexed(&index, &rope, b"0100-"), Occurrences::None);
        // Grams past a quarter of the block rebuild it: exact again, then added to again.
        rope.insert(505, "q");
        index.replaced(&rope, 505, 505, 1);
        index.check(&rope).unwrap();
        assert_eq!((index.lens[15], index.added[15]), (lens[15] + 2, 0));
        rope.insert(505, "q");
        index.replaced(&rope, 505, 505, 1);
        index.check(&rope).unwrap();
        assert_eq!((index.lens[15], index.added[15]), (lens[15] + 3, 4));
        assert_eq!(indexed(&index, &rope, b"01zzzqq-"), Occurrences::One(500));
    }

    #[test]
    fn overlapping_repeats_count_like_the_scan() {
        for n in 0..200 {
            let text = "a".repeat(n);
            let rope = Rope::from_str(&text);
            let index = SearchIndex::build(&rope, SMALL);
            for m in 4..12 {
                let needle = "a".repeat(m);
                assert_eq!(
                    indexed(&index, &rope, needle.as_bytes()),
                    reference(text.as_bytes(), needle.as_bytes()),
                    "{n} {m}"
                );
            }
        }
    }

    #[test]
    fn matches_at_the_ends_and_across_every_block_bound() {
        let text: String = (0..400).map(|i| format!("{i:x}-")).collect();
        let rope = Rope::from_str(&text);
        let index = SearchIndex::build(&rope, SMALL);
        assert!(index.lens.len() > 50);
        for len in [4, 5, 9, 17, 33] {
            for at in 0..=text.len() - len {
                let needle = &text.as_bytes()[at..at + len];
                assert_eq!(
                    indexed(&index, &rope, needle),
                    reference(text.as_bytes(), needle),
                    "{at} {len}"
                );
            }
        }
        // Short needles and another text's index: the caller scans.
        assert_eq!(index.find_unique(&rope, b"1-2"), None);
        assert_eq!(index.find_unique(&Rope::from_str("x"), b"1-2-"), None);
    }

    #[test]
    fn blocks_split_and_merge_within_bounds() {
        let mut rope = Rope::from_str(&"abcdefgh".repeat(40));
        let mut index = SearchIndex::build(&rope, SMALL);
        assert_eq!(index.lens, vec![16; 20]);
        // One large insertion splits its block into many.
        let big = "xy".repeat(100);
        rope.insert(50, &big);
        index.replaced(&rope, 50, 50, big.len());
        index.check(&rope).unwrap();
        assert_eq!(index.lens.len(), 20 - 2 + 15);
        // Deleting almost everything merges down to one block, then to an empty text.
        let n = rope.len_chars();
        rope.remove(3..n - 2);
        index.replaced(&rope, 3, n - 2, 0);
        index.check(&rope).unwrap();
        assert_eq!(index.lens, vec![5]);
        rope.remove(0..5);
        index.replaced(&rope, 0, 5, 0);
        index.check(&rope).unwrap();
        assert_eq!(index.lens, vec![0]);
        // And it grows again from nothing.
        rope.insert(0, "hello world, hello again");
        index.replaced(&rope, 0, 0, 24);
        index.check(&rope).unwrap();
        assert_eq!(indexed(&index, &rope, b"hello"), Occurrences::Many);
        assert_eq!(indexed(&index, &rope, b"o again"), Occurrences::One(17));
        // Shrinking a block below the minimum merges it with its neighbour.
        let mut rope = Rope::from_str(&"0123456789abcdef".repeat(4));
        let mut index = SearchIndex::build(&rope, SMALL);
        rope.remove(20..30);
        index.replaced(&rope, 20, 30, 0);
        index.check(&rope).unwrap();
        assert!(
            index
                .lens
                .iter()
                .all(|&l| (SMALL.min..=SMALL.max).contains(&l))
        );
        // A range past the text (a caller's bug) is clamped, not a panic.
        index.replaced(&rope, 500, 900, 0);
        index.check(&rope).unwrap();
    }

    #[test]
    fn default_index_is_small_next_to_the_text() {
        // 4 MB, ~480 blocks: large enough that rounding the columns up to whole words (up to
        // 63 blocks' worth) is a small part, as it is for the large texts the index is for.
        let text: String = (0..180_000)
            .map(|i| format!("fn line_{i:08}() {{}}\n"))
            .collect();
        let rope = Rope::from_str(&text);
        let index = SearchIndex::build(&rope, Params::DEFAULT);
        index.check(&rope).unwrap();
        let share = index.memory_bytes() as f64 / text.len() as f64;
        assert!(share < 0.15, "{share}");
        assert_eq!(
            indexed(&index, &rope, b"line_00031337"),
            Occurrences::One(31337 * 22 + 3)
        );
    }
}
