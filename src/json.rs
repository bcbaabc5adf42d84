//! Compact JSON output, byte for byte what `serde_json::to_writer` writes, with a faster
//! string writer.
//!
//! Why not serde_json's writer: it escapes strings a byte at a time and hands every run
//! between two escapes to its writer separately. Source code has an escape (a newline, a
//! quote) every dozen bytes, so a long answer or file costs ≈13 instructions per byte, and the
//! end of a run writes the final answer four or five times (`text_end`, `message_end`,
//! `turn_end`, `agent_end`, the session entry). [`write_str`] tests eight bytes at a time and
//! copies the bytes before an escape as one word (BENCH.md, "Fixes made from the profiles").
//!
//! Everything but strings is written as serde_json writes it (integers with `itoa`, as serde_json
//! does; floats by serde_json itself). A value this writer does not handle the way serde_json would (a map key
//! that is not a string, an integer or a bool) is written by serde_json itself, so the output
//! never differs; the tests compare the two on arbitrary values and on the crate's events.

use serde::Serialize;
use serde::ser::{self, Impossible};

/// Appends `value` as compact JSON. On error `out` is left as it was.
pub fn write<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> serde_json::Result<()> {
    let mark = out.len();
    if value.serialize(Writer { out: &mut *out }).is_ok() {
        return Ok(());
    }
    // Something serde_json writes differently or refuses (an unusual map key): let it decide.
    out.truncate(mark);
    let result = serde_json::to_writer(&mut *out, value);
    if result.is_err() {
        out.truncate(mark);
    }
    result
}

/// `value` as a compact JSON byte vector.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    write(&mut out, value)?;
    Ok(out)
}

/// Appends `text` as a JSON string exactly as serde_json writes it: `"` and `\` escaped,
/// control characters as `\b \f \n \r \t` or `\u00xx` (lower-case hex), nothing else.
///
/// Eight bytes are tested at once; a word's bytes up to its first escape are copied as one
/// word into a stack buffer, which goes to `out` with one copy when nearly full. Source code
/// has an escape every dozen bytes or so, where a copy per run between escapes (serde_json's
/// way) costs more than the bytes themselves.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if bytes.len() < 16 {
        // A token's delta: not worth the buffer.
        for &byte in bytes {
            push_escaped(out, byte);
        }
        out.push(b'"');
        return;
    }
    let mut buf = [0u8; 512];
    let (mut n, mut at) = (0, 0);
    while let Some(word) = bytes.get(at..at + 8) {
        if n > buf.len() - 16 {
            out.extend_from_slice(&buf[..n]);
            n = 0;
        }
        let word: [u8; 8] = word.try_into().unwrap_or_default();
        buf[n..n + 8].copy_from_slice(&word);
        let clean = match escape_mask(u64::from_le_bytes(word)) {
            0 => 8,
            mask => (mask.trailing_zeros() / 8) as usize,
        };
        n += clean;
        at += clean;
        if clean < 8 {
            n = put_escaped(&mut buf, n, bytes[at]);
            at += 1;
        }
    }
    out.extend_from_slice(&buf[..n]);
    for &byte in &bytes[at..] {
        push_escaped(out, byte);
    }
    out.push(b'"');
}

/// A mask whose lowest set bit is the high bit of the first of the eight bytes in `word`
/// (little-endian) that is below 0x20, `"` or `\`; 0 when none is. Higher bits may be set
/// by borrows and are never used: the classic "has a byte less than n" and "has a zero byte"
/// bit tricks are exact up to the first match.
fn escape_mask(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    let quote = has_zero(word ^ (ONES * u64::from(b'"')));
    let backslash = has_zero(word ^ (ONES * u64::from(b'\\')));
    below_space | quote | backslash
}

/// Writes `byte` at `buf[n..]`, escaped if it must be; returns the new length. Always stores
/// six bytes (fixed-size stores, no `memcpy` call): `buf` has room past the end.
#[inline(always)]
fn put_escaped(buf: &mut [u8], n: usize, byte: u8) -> usize {
    let (bytes, len) = escaped(byte);
    buf[n..n + 6].copy_from_slice(&bytes);
    n + len
}

#[inline(always)]
fn push_escaped(out: &mut Vec<u8>, byte: u8) {
    match ESCAPE[usize::from(byte)] {
        0 => out.push(byte),
        b'u' => out.extend_from_slice(&escaped(byte).0),
        _ => out.extend_from_slice(&escaped(byte).0[..2]),
    }
}

/// The bytes that stand for `byte` in a JSON string (the first `.1` of them).
#[inline(always)]
fn escaped(byte: u8) -> ([u8; 6], usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match ESCAPE[usize::from(byte)] {
        0 => ([byte, 0, 0, 0, 0, 0], 1),
        b'u' => (
            [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ],
            6,
        ),
        short => ([b'\\', short, 0, 0, 0, 0], 2),
    }
}

/// For each byte: 0 when written as is, else the letter after its backslash (`u`: `\u00xx`).
const ESCAPE: [u8; 256] = {
    let mut table = [0; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x0c] = b'f';
    table[b'\n' as usize] = b'n';
    table[b'\r' as usize] = b'r';
    table[b'\t' as usize] = b't';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// Marks a value this writer leaves to serde_json; never seen by callers of [`write`].
#[derive(Debug)]
struct Unsupported;

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("left to serde_json")
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Unsupported
    }
}

type Result<T = ()> = std::result::Result<T, Unsupported>;

/// The ten integer methods of a `Serializer`, each handing its value to `self.integer`.
macro_rules! integer_methods {
    () => {
        integer_methods!(
            serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
            serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
            serialize_u64: u64, serialize_u128: u128
        );
    };
    ($($method:ident: $ty:ty),*) => {
        $(
            fn $method(self, value: $ty) -> Result {
                self.integer(value)
            }
        )*
    };
}

struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    fn reborrow(&mut self) -> Writer<'_> {
        Writer {
            out: &mut *self.out,
        }
    }

    fn integer(self, value: impl itoa::Integer) -> Result {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
        Ok(())
    }

    /// serde_json's own float text (its formatter has changed between versions; floats are
    /// rare here: costs and temperatures).
    fn float(self, value: impl Serialize) -> Result {
        serde_json::to_writer(&mut *self.out, &value).map_err(|_| Unsupported)
    }

    /// An array or object after its opening bracket.
    fn open(self, bracket: u8, in_variant: bool) -> Compound<'a> {
        self.out.push(bracket);
        Compound {
            out: self.out,
            first: true,
            in_variant,
        }
    }

    /// `{"variant":` before a variant's content; the `}` comes after it.
    fn open_variant(&mut self, variant: &str) {
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.push(b':');
    }
}

/// An array or object being written; `first` until its first element.
struct Compound<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
    /// Whether a variant's `}` follows the closing bracket.
    in_variant: bool,
}

impl Compound<'_> {
    fn separate(&mut self) {
        if self.first {
            self.first = false;
        } else {
            self.out.push(b',');
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.separate();
        value.serialize(Writer {
            out: &mut *self.out,
        })
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result {
        self.separate();
        write_str(self.out, key);
        self.out.push(b':');
        value.serialize(Writer {
            out: &mut *self.out,
        })
    }

    fn close(self, bracket: u8) -> Result {
        self.out.push(bracket);
        if self.in_variant {
            self.out.push(b'}');
        }
        Ok(())
    }
}

impl<'a> ser::Serializer for Writer<'a> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, value: bool) -> Result {
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
        Ok(())
    }

    integer_methods!();

    fn serialize_f32(self, value: f32) -> Result {
        self.float(value)
    }

    fn serialize_f64(self, value: f64) -> Result {
        self.float(value)
    }

    fn serialize_char(self, value: char) -> Result {
        write_str(self.out, value.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, value: &str) -> Result {
        write_str(self.out, value);
        Ok(())
    }

    fn serialize_bytes(self, value: &[u8]) -> Result {
        let mut array = self.open(b'[', false);
        for byte in value {
            array.element(byte)?;
        }
        array.close(b']')
    }

    fn serialize_none(self) -> Result {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result {
        self.serialize_unit()
    }

    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &str) -> Result {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        mut self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result {
        self.open_variant(variant);
        value.serialize(self.reborrow())?;
        self.out.push(b'}');
        Ok(())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>> {
        Ok(self.open(b'[', false))
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Compound<'a>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        mut self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>> {
        self.open_variant(variant);
        Ok(self.open(b'[', true))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>> {
        Ok(self.open(b'{', false))
    }

    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Compound<'a>> {
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        mut self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>> {
        self.open_variant(variant);
        Ok(self.open(b'{', true))
    }
}

/// The array-like compounds: each element written in turn, `]` at the end.
macro_rules! array_compound {
    ($($trait:ident::$method:ident),*) => {
        $(
            impl ser::$trait for Compound<'_> {
                type Ok = ();
                type Error = Unsupported;

                fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
                    self.element(value)
                }

                fn end(self) -> Result {
                    self.close(b']')
                }
            }
        )*
    };
}

array_compound!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result {
        self.separate();
        key.serialize(MapKey {
            out: &mut *self.out,
        })?;
        self.out.push(b':');
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        value.serialize(Writer {
            out: &mut *self.out,
        })
    }

    fn end(self) -> Result {
        self.close(b'}')
    }
}

/// The object-like compounds with field names known up front.
macro_rules! struct_compound {
    ($($trait:ident),*) => {
        $(
            impl ser::$trait for Compound<'_> {
                type Ok = ();
                type Error = Unsupported;

                fn serialize_field<T: Serialize + ?Sized>(
                    &mut self,
                    key: &'static str,
                    value: &T,
                ) -> Result {
                    self.field(key, value)
                }

                fn end(self) -> Result {
                    self.close(b'}')
                }
            }
        )*
    };
}

struct_compound!(SerializeStruct, SerializeStructVariant);

/// An object key: strings as they are, integers and bools quoted (as serde_json writes them);
/// anything else is left to serde_json.
struct MapKey<'a> {
    out: &'a mut Vec<u8>,
}

impl MapKey<'_> {
    fn quoted(self, text: &str) -> Result {
        self.out.push(b'"');
        self.out.extend_from_slice(text.as_bytes());
        self.out.push(b'"');
        Ok(())
    }

    fn integer(self, value: impl itoa::Integer) -> Result {
        self.quoted(itoa::Buffer::new().format(value))
    }
}

impl ser::Serializer for MapKey<'_> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Impossible<(), Unsupported>;
    type SerializeTuple = Impossible<(), Unsupported>;
    type SerializeTupleStruct = Impossible<(), Unsupported>;
    type SerializeTupleVariant = Impossible<(), Unsupported>;
    type SerializeMap = Impossible<(), Unsupported>;
    type SerializeStruct = Impossible<(), Unsupported>;
    type SerializeStructVariant = Impossible<(), Unsupported>;

    fn serialize_str(self, value: &str) -> Result {
        write_str(self.out, value);
        Ok(())
    }

    fn serialize_char(self, value: char) -> Result {
        self.serialize_str(value.encode_utf8(&mut [0; 4]))
    }

    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &str) -> Result {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result {
        value.serialize(self)
    }

    fn serialize_bool(self, value: bool) -> Result {
        self.quoted(if value { "true" } else { "false" })
    }

    integer_methods!();

    fn serialize_f32(self, _value: f32) -> Result {
        Err(Unsupported)
    }

    fn serialize_f64(self, _value: f64) -> Result {
        Err(Unsupported)
    }

    fn serialize_bytes(self, _value: &[u8]) -> Result {
        Err(Unsupported)
    }

    fn serialize_none(self) -> Result {
        Err(Unsupported)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result {
        Err(Unsupported)
    }

    fn serialize_unit(self) -> Result {
        Err(Unsupported)
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result {
        Err(Unsupported)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result {
        Err(Unsupported)
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(Unsupported)
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        Err(Unsupported)
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(Unsupported)
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(Unsupported)
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        Err(Unsupported)
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        Err(Unsupported)
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(Unsupported)
    }
}

#[cfg(test)]
mod tests;
