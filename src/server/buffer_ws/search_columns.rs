//! The search index's block filters stored transposed: for each filter bit, the set of blocks
//! whose filter holds it.
//!
//! A search asks, for the ten or so bits of a needle, which blocks hold each of them (or whose
//! next block does). Stored per block, that reads two cache lines of every block's filter (on a
//! 10 MB text, ~2,400 lines scattered over 1.2 MB, most of them missing the cache); stored per
//! bit, it reads one column of `blocks / 64` words per needle bit and combines them a word (64
//! blocks) at a time. The memory is the same: one bit per block and filter bit.

use std::ops::Range;

/// Bits of one block's filter.
pub const FILTER_BITS: usize = 8192;
/// Words of one block's filter when built on its own.
pub const FILTER_WORDS: usize = FILTER_BITS / 64;

/// One block's filter, as it is built from the block's text.
pub type Filter = [u64; FILTER_WORDS];

/// `FILTER_BITS` columns of `words` words each; bit `b` of column `g` says whether block `b`'s
/// filter holds bit `g`. Bits past the last block are always zero.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Columns {
    blocks: usize,
    words: usize,
    bits: Vec<u64>,
}

impl Columns {
    /// The columns of these block filters, in block order.
    #[cfg(test)]
    pub fn of(filters: &[Filter]) -> Columns {
        let mut columns = Columns::default();
        columns.splice(0..0, filters);
        columns
    }

    /// `blocks` blocks with empty filters (to be filled with [`Columns::add_filter`]).
    pub fn empty(blocks: usize) -> Columns {
        let words = blocks.div_ceil(64);
        Columns {
            blocks,
            words,
            bits: vec![0; FILTER_BITS * words],
        }
    }

    #[cfg(test)]
    pub fn blocks(&self) -> usize {
        self.blocks
    }

    /// Heap bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.bits.capacity() * std::mem::size_of::<u64>()
    }

    /// Adds filter bit `bit` to block `block`'s filter.
    pub fn set(&mut self, block: usize, bit: usize) {
        self.bits[bit * self.words + block / 64] |= 1 << (block % 64);
    }

    /// Whether block `block`'s filter holds `bit`.
    #[cfg(test)]
    pub fn has(&self, block: usize, bit: usize) -> bool {
        self.bits[bit * self.words + block / 64] & (1 << (block % 64)) != 0
    }

    /// Block `block`'s filter (tests and checks).
    #[cfg(test)]
    pub fn filter(&self, block: usize) -> Filter {
        let mut f: Filter = [0; FILTER_WORDS];
        for bit in 0..FILTER_BITS {
            if self.has(block, bit) {
                f[bit / 64] |= 1 << (bit % 64);
            }
        }
        f
    }

    /// Checks these columns against `fresh` (the columns of freshly built filters of the same
    /// blocks): every fresh bit is here, and blocks marked `exact` have no other bits.
    #[cfg(test)]
    pub fn check_against(&self, fresh: &Columns, exact: &[bool]) -> Result<(), String> {
        if (self.blocks, self.words) != (fresh.blocks, fresh.words) || exact.len() != self.blocks {
            return Err(format!("{} blocks against {}", self.blocks, fresh.blocks));
        }
        let mut mask = vec![0u64; self.words];
        for (i, _) in exact.iter().enumerate().filter(|(_, e)| **e) {
            mask[i / 64] |= 1 << (i % 64);
        }
        for (k, (&ours, &new)) in self.bits.iter().zip(&fresh.bits).enumerate() {
            let (bit, word) = (k / self.words, k % self.words);
            if new & !ours != 0 {
                return Err(format!(
                    "filter bit {bit} missing in blocks {word}:{:x}",
                    new & !ours
                ));
            }
            if (new ^ ours) & mask[word] != 0 {
                return Err(format!(
                    "stale filter bit {bit} in blocks {word}:{:x}",
                    new ^ ours
                ));
            }
        }
        Ok(())
    }

    /// Replaces the blocks `range` with blocks of these filters (the later blocks move).
    pub fn splice(&mut self, range: Range<usize>, filters: &[Filter]) {
        let (removed, added) = (range.len(), filters.len());
        if removed == added {
            // The usual rebuild of one changed block: clear its bits in place.
            for column in self.bits.chunks_exact_mut(self.words.max(1)) {
                for block in range.clone() {
                    column[block / 64] &= !(1 << (block % 64));
                }
            }
        } else {
            let blocks = self.blocks - removed + added;
            let words = blocks.div_ceil(64);
            let mut bits = vec![0u64; FILTER_BITS * words];
            let tail = self.blocks - range.end;
            if self.words > 0 && words > 0 {
                let old = self.bits.chunks_exact(self.words);
                for (src, dst) in old.zip(bits.chunks_exact_mut(words)) {
                    copy_bits(src, 0, dst, 0, range.start);
                    copy_bits(src, range.end, dst, range.start + added, tail);
                }
            }
            (self.blocks, self.words, self.bits) = (blocks, words, bits);
        }
        for (i, filter) in filters.iter().enumerate() {
            self.add_filter(range.start + i, filter);
        }
    }

    /// Adds the bits of `filter` to block `block`'s filter.
    pub fn add_filter(&mut self, block: usize, filter: &Filter) {
        for (w, &word) in filter.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                self.set(block, w * 64 + word.trailing_zeros() as usize);
                word &= word - 1;
            }
        }
    }

    /// The blocks `i` whose filter or the next block's holds every bit of `grams`, as a bit
    /// set over blocks (a block past the last one holds nothing).
    pub fn candidates(&self, grams: &[usize]) -> Vec<u64> {
        let mut acc = vec![u64::MAX; self.words];
        if let Some(last) = acc.last_mut()
            && !self.blocks.is_multiple_of(64)
        {
            *last = (1 << (self.blocks % 64)) - 1;
        }
        for &g in grams {
            let column = &self.bits[g * self.words..(g + 1) * self.words];
            for (w, acc) in acc.iter_mut().enumerate() {
                let next = (column[w] >> 1) | column.get(w + 1).map_or(0, |n| n << 63);
                *acc &= column[w] | next;
            }
        }
        acc
    }
}

/// ORs the bits `from..from + len` of `src` into `dst` from bit `to` on, a word at a time.
fn copy_bits(src: &[u64], from: usize, dst: &mut [u64], to: usize, len: usize) {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(64);
        let v = read_bits(src, from + done, n);
        let (w, o) = ((to + done) / 64, (to + done) % 64);
        dst[w] |= v << o;
        if o != 0 && o + n > 64 {
            dst[w + 1] |= v >> (64 - o);
        }
        done += n;
    }
}

/// `n` (1..=64) bits of `src` from bit `at` on, in the low bits.
fn read_bits(src: &[u64], at: usize, n: usize) -> u64 {
    let (w, o) = (at / 64, at % 64);
    let mut v = src[w] >> o;
    if o != 0
        && let Some(next) = src.get(w + 1)
    {
        v |= next << (64 - o);
    }
    if n < 64 { v & ((1 << n) - 1) } else { v }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn filter(bits: &[usize]) -> Filter {
        let mut f: Filter = [0; FILTER_WORDS];
        for &b in bits {
            f[b / 64] |= 1 << (b % 64);
        }
        f
    }

    /// The plain per-block predicate the columns answer.
    fn candidate(filters: &[Filter], i: usize, grams: &[usize]) -> bool {
        let has = |f: &Filter, b: usize| f[b / 64] & (1 << (b % 64)) != 0;
        grams
            .iter()
            .all(|&g| has(&filters[i], g) || filters.get(i + 1).is_some_and(|n| has(n, g)))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Splices of any shape keep the columns equal to the transposed block filters, and
        /// the candidates equal the per-block predicate.
        #[test]
        fn columns_follow_splices_and_answer_like_the_filters(
            blocks in proptest::collection::vec(
                proptest::collection::vec(0usize..40, 0..6), 0..150),
            splices in proptest::collection::vec(
                (0usize..160, 0usize..70, proptest::collection::vec(
                    proptest::collection::vec(0usize..40, 0..6), 0..70)), 0..5),
            grams in proptest::collection::vec(0usize..40, 0..4),
        ) {
            // Few distinct bits (and one far one) so that candidates are common.
            let spread = |bits: &Vec<usize>| -> Filter {
                filter(&bits.iter().map(|&b| if b == 39 { FILTER_BITS - 1 } else { b }).collect::<Vec<_>>())
            };
            let mut filters: Vec<Filter> = blocks.iter().map(spread).collect();
            let mut columns = Columns::of(&filters);
            let mut filled = Columns::empty(filters.len());
            for (i, f) in filters.iter().enumerate() {
                filled.add_filter(i, f);
            }
            prop_assert!(filled == columns);
            for (at, len, new) in splices {
                let start = at.min(filters.len());
                let end = (start + len).min(filters.len());
                let new: Vec<Filter> = new.iter().map(spread).collect();
                filters.splice(start..end, new.iter().copied());
                columns.splice(start..end, &new);
                prop_assert_eq!(columns.blocks(), filters.len());
                prop_assert!(columns == Columns::of(&filters));
                for i in [start, end.saturating_sub(1), filters.len().saturating_sub(1)] {
                    if let Some(f) = filters.get(i) {
                        prop_assert_eq!(&columns.filter(i), f);
                    }
                }
            }
            let grams: Vec<usize> =
                grams.iter().map(|&b| if b == 39 { FILTER_BITS - 1 } else { b }).collect();
            let cand = columns.candidates(&grams);
            for i in 0..filters.len() {
                let got = cand[i / 64] & (1 << (i % 64)) != 0;
                prop_assert_eq!(got, candidate(&filters, i, &grams), "block {}", i);
            }
            // Nothing past the last block.
            for i in filters.len()..cand.len() * 64 {
                prop_assert_eq!(cand[i / 64] & (1 << (i % 64)), 0);
            }
        }
    }
}
