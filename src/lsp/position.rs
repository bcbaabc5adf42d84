//! The one place where LSP positions meet rope indices.
//!
//! Positions use the encoding negotiated in `initialize` (UTF-8 when the client offers it, else
//! UTF-16). Out-of-range positions clamp as LSP 3.17 prescribes instead of failing: a column past
//! the end of its line means the line end (before the terminator, never between `\r` and `\n`), a
//! line past the end means the end of the document. Line breaks are exactly `\n`, `\r\n` and `\r`
//! (ropey built with `cr_lines`, without `unicode_lines`).

use ls_types::{Position, PositionEncodingKind, Range};
use ropey::Rope;

/// A conversion between char indices and an encoding's unit indices in a rope.
type UnitConversion = fn(&Rope, usize) -> usize;

/// The unit of `Position::character` on this connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    /// LSP's default when the client states nothing.
    #[default]
    Utf16,
}

impl Encoding {
    /// Picks UTF-8 when the client lists it, UTF-16 otherwise (every server must support it).
    pub fn negotiate(offered: Option<&[PositionEncodingKind]>) -> Self {
        let offers_utf8 = offered
            .unwrap_or_default()
            .contains(&PositionEncodingKind::UTF8);
        if offers_utf8 {
            Encoding::Utf8
        } else {
            Encoding::Utf16
        }
    }

    /// Char index → this encoding's unit index in the whole rope, and back (a unit inside a
    /// char rounds down to that char).
    fn unit_conversions(self) -> (UnitConversion, UnitConversion) {
        match self {
            Encoding::Utf8 => (Rope::char_to_byte, Rope::byte_to_char),
            Encoding::Utf16 => (Rope::char_to_utf16_cu, Rope::utf16_cu_to_char),
        }
    }

    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
        }
    }
}

/// The char index where `line`'s content ends, before its terminator.
fn line_content_end(rope: &Rope, line: usize) -> usize {
    let start = rope.line_to_char(line);
    let slice = rope.line(line);
    let len = slice.len_chars();
    let terminator = match (
        len.checked_sub(2).map(|i| slice.char(i)),
        len.checked_sub(1).map(|i| slice.char(i)),
    ) {
        (Some('\r'), Some('\n')) => 2,
        (_, Some('\n' | '\r')) => 1,
        _ => 0,
    };
    start + len - terminator
}

/// Converts a position to a char index, clamping as described in the module docs.
pub fn to_char_idx(rope: &Rope, pos: Position, enc: Encoding) -> usize {
    let line = pos.line as usize;
    if line >= rope.len_lines() {
        return rope.len_chars();
    }
    let start = rope.line_to_char(line);
    let end = line_content_end(rope, line);
    let character = pos.character as usize;
    let (to_unit, from_unit) = enc.unit_conversions();
    let unit = to_unit(rope, start)
        .saturating_add(character)
        .min(to_unit(rope, end));
    // A unit inside a multi-byte char or a surrogate pair rounds down to that char.
    from_unit(rope, unit)
}

/// Converts a char index (clamped to the document) to a position.
pub fn to_position(rope: &Rope, char_idx: usize, enc: Encoding) -> Position {
    let idx = char_idx.min(rope.len_chars());
    let line = rope.char_to_line(idx);
    let start = rope.line_to_char(line);
    let (to_unit, _) = enc.unit_conversions();
    let character = to_unit(rope, idx) - to_unit(rope, start);
    Position::new(saturate(line), saturate(character))
}

/// Converts a range to char indices; a reversed range is repaired by swapping its ends.
pub fn to_char_range(rope: &Rope, range: Range, enc: Encoding) -> std::ops::Range<usize> {
    let a = to_char_idx(rope, range.start, enc);
    let b = to_char_idx(rope, range.end, enc);
    a.min(b)..a.max(b)
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx(doc: &str, line: u32, character: u32, enc: Encoding) -> usize {
        to_char_idx(&Rope::from_str(doc), Position::new(line, character), enc)
    }

    #[test]
    fn position_to_index_table() {
        use Encoding::{Utf8, Utf16};
        // (doc, line, character, encoding, expected char index)
        let rows: &[(&str, u32, u32, Encoding, usize)] = &[
            ("", 0, 0, Utf16, 0),
            ("", 0, 5, Utf8, 0),
            ("", 3, 0, Utf16, 0),
            ("abc", 0, 2, Utf16, 2),
            ("abc", 0, 99, Utf16, 3),
            ("abc", 0, u32::MAX, Utf8, 3),
            ("abc", u32::MAX, u32::MAX, Utf16, 3),
            ("abc\n", 1, 0, Utf16, 4),
            ("abc\n", 2, 0, Utf16, 4),
            // CRLF: a column past the end stops before "\r\n", never between them.
            ("ab\r\ncd", 0, 3, Utf16, 2),
            ("ab\r\ncd", 0, 2, Utf8, 2),
            ("ab\r\ncd", 1, 1, Utf16, 5),
            // CR-only files are lines too (cr_lines).
            ("ab\rcd\ref", 2, 1, Utf16, 7),
            ("ab\rcd", 0, 9, Utf8, 2),
            // Unicode line separators are NOT line breaks in LSP.
            ("a\u{2028}b\nc", 1, 0, Utf16, 4),
            // Astral chars: 2 UTF-16 units, 4 UTF-8 bytes.
            ("😀x", 0, 2, Utf16, 1),
            ("😀x", 0, 1, Utf16, 0),
            ("😀x", 0, 4, Utf8, 1),
            ("😀x", 0, 2, Utf8, 0),
            ("é😀x\ny", 0, 3, Utf16, 2),
            ("é😀x\ny", 0, 6, Utf8, 2),
            ("é😀x\ny", 1, 1, Utf16, 5),
        ];
        for &(doc, line, character, enc, want) in rows {
            assert_eq!(
                idx(doc, line, character, enc),
                want,
                "{doc:?} {line}:{character} {enc:?}"
            );
        }
    }

    #[test]
    fn index_to_position_table() {
        use Encoding::{Utf8, Utf16};
        let rows: &[(&str, usize, Encoding, (u32, u32))] = &[
            ("", 0, Utf16, (0, 0)),
            ("", 10, Utf8, (0, 0)),
            ("abc\n", 4, Utf16, (1, 0)),
            ("ab\r\ncd", 5, Utf16, (1, 1)),
            ("ab\rcd", 3, Utf8, (1, 0)),
            ("😀x", 1, Utf16, (0, 2)),
            ("😀x", 2, Utf8, (0, 5)),
        ];
        for &(doc, char_idx, enc, (line, character)) in rows {
            let got = to_position(&Rope::from_str(doc), char_idx, enc);
            assert_eq!(
                got,
                Position::new(line, character),
                "{doc:?} {char_idx} {enc:?}"
            );
        }
    }

    #[test]
    fn reversed_range_is_swapped() {
        let rope = Rope::from_str("hello\nworld");
        let range = Range::new(Position::new(1, 2), Position::new(0, 1));
        assert_eq!(to_char_range(&rope, range, Encoding::Utf16), 1..8);
    }

    #[test]
    fn negotiation_prefers_utf8() {
        let both = [PositionEncodingKind::UTF16, PositionEncodingKind::UTF8];
        assert_eq!(Encoding::negotiate(Some(&both)), Encoding::Utf8);
        assert_eq!(
            Encoding::negotiate(Some(&[PositionEncodingKind::UTF32])),
            Encoding::Utf16
        );
        assert_eq!(Encoding::negotiate(None), Encoding::Utf16);
    }

    proptest::proptest! {
        #[test]
        fn roundtrip_never_panics(doc in "[a\r\n😀é]{0,12}", line in 0u32..6, character in 0u32..12) {
            for enc in [Encoding::Utf8, Encoding::Utf16] {
                let rope = Rope::from_str(&doc);
                let i = to_char_idx(&rope, Position::new(line, character), enc);
                proptest::prop_assert!(i <= rope.len_chars());
                let pos = to_position(&rope, i, enc);
                proptest::prop_assert_eq!(to_char_idx(&rope, pos, enc), i);
            }
        }
    }
}
