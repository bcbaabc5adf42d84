//! A hand-written reader for the usual OpenAI chunk, falling back to serde for anything else.
//!
//! Why: a model streams one chunk per token, and serde's generic parse of it (key matching
//! through visitors, per-string escape scans) was the largest single cost per delta. This
//! reader walks the bytes once and builds the same [`Chunk`] directly.
//!
//! It is a strict subset of the serde parse: it answers `None` ("not handled") whenever
//! anything is unusual, and the caller then runs serde, which decides (value or error). So an
//! answer from here always equals serde's (proptested in `openai_chunk_tests.rs`). Handled:
//! objects with the known fields as strings or `null`; `usage`, `error` and
//! `reasoning_details` only as `null`; a tool call's `index` as a plain non-negative integer;
//! any other field skipped after checking it is well-formed JSON (strings without control
//! characters or lone surrogates, numbers by the JSON grammar, nesting up to [`MAX_DEPTH`]);
//! no duplicate known field (serde rejects those).

use std::borrow::Cow;

use super::{Choice, Chunk, Delta, FirstChoice, FunctionDelta, Str, ToolCallDelta};

/// Deepest nesting skipped here (serde's own limit is 128; deeper input goes to serde).
const MAX_DEPTH: usize = 64;

/// The chunk, or `None` when serde has to decide.
pub fn parse(data: &str) -> Option<Chunk<'_>> {
    parse_spanned(data).map(|(chunk, _)| chunk)
}

/// Where string tokens of the first choice are in a chunk's text: from the opening quote to
/// past the closing one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spans {
    /// `delta.content`, if it is a string.
    pub content: Option<(usize, usize)>,
    /// `function.arguments` of the last tool call read in `delta.tool_calls`, if a string.
    pub arguments: Option<(usize, usize)>,
}

/// The chunk and where its text-carrying string tokens are (see [`Spans`]).
pub fn parse_spanned(data: &str) -> Option<(Chunk<'_>, Spans)> {
    let mut r = Reader {
        data,
        pos: 0,
        spans: Spans::default(),
    };
    let chunk = r.chunk()?;
    r.ws();
    (r.pos == data.len()).then_some((chunk, r.spans))
}

/// The string token that makes up all of `token`, or `None`.
pub fn string_token(token: &str) -> Option<Cow<'_, str>> {
    let mut r = Reader {
        data: token,
        pos: 0,
        spans: Spans::default(),
    };
    let text = r.string()?;
    (r.pos == token.len()).then_some(text)
}

struct Reader<'a> {
    data: &'a str,
    pos: usize,
    /// The spans of the first choice's text tokens, once read.
    spans: Spans,
}

/// Known fields seen so far in one object (a second occurrence goes to serde).
#[derive(Default)]
struct Seen(u32);

impl Seen {
    fn first(&mut self, bit: u32) -> Option<()> {
        let mask = 1 << bit;
        if self.0 & mask != 0 {
            return None;
        }
        self.0 |= mask;
        Some(())
    }
}

impl<'a> Reader<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.data.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// Skips whitespace, then consumes `byte` if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        self.ws();
        let hit = self.peek() == Some(byte);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn literal(&mut self, word: &str) -> bool {
        let hit = self.bytes()[self.pos..].starts_with(word.as_bytes());
        if hit {
            self.pos += word.len();
        }
        hit
    }

    /// `null` (after whitespace).
    fn null(&mut self) -> bool {
        self.ws();
        self.literal("null")
    }

    /// `null`, the only value handled here for the rarely sent `Value` fields.
    fn only_null(&mut self) -> Option<()> {
        self.null().then_some(())
    }

    /// Walks the members of an object whose `{` was consumed, calling `member` with each key
    /// (unescaped keys only) and the reader positioned before the value.
    fn members(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            self.ws();
            let key = match self.string()? {
                Cow::Borrowed(key) => key,
                Cow::Owned(_) => return None,
            };
            if !self.eat(b':') {
                return None;
            }
            member(self, key)?;
            if self.eat(b'}') {
                return Some(());
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    fn chunk(&mut self) -> Option<Chunk<'a>> {
        let mut chunk = Chunk::default();
        let mut seen = Seen::default();
        if !self.eat(b'{') {
            return None;
        }
        self.members(|r, key| {
            match key {
                "id" => {
                    seen.first(0)?;
                    chunk.id = r.lenient_str()?;
                }
                "model" => {
                    seen.first(1)?;
                    chunk.model = r.lenient_str()?;
                }
                "choices" => {
                    seen.first(2)?;
                    chunk.choices = r.choices()?;
                }
                "usage" => {
                    seen.first(3)?;
                    r.only_null()?;
                }
                "error" => {
                    seen.first(4)?;
                    r.only_null()?;
                }
                _ => r.skip(0)?,
            }
            Some(())
        })?;
        Some(chunk)
    }

    fn choices(&mut self) -> Option<Option<FirstChoice<'a>>> {
        if self.null() {
            return Some(None);
        }
        if !self.eat(b'[') {
            return None;
        }
        if self.eat(b']') {
            return Some(Some(FirstChoice(None)));
        }
        let first = self.choice()?;
        while self.eat(b',') {
            self.skip(1)?;
        }
        self.eat(b']').then_some(Some(FirstChoice(Some(first))))
    }

    fn choice(&mut self) -> Option<Choice<'a>> {
        let mut choice = Choice::default();
        let mut seen = Seen::default();
        if !self.eat(b'{') {
            return None;
        }
        self.members(|r, key| {
            match key {
                "finish_reason" => {
                    seen.first(0)?;
                    choice.finish_reason = r.lenient_str()?;
                }
                "delta" => {
                    seen.first(1)?;
                    choice.delta = r.delta()?;
                }
                "usage" => {
                    seen.first(2)?;
                    r.only_null()?;
                }
                _ => r.skip(1)?,
            }
            Some(())
        })?;
        Some(choice)
    }

    fn delta(&mut self) -> Option<Option<Delta<'a>>> {
        if self.null() {
            return Some(None);
        }
        let mut delta = Delta::default();
        let mut seen = Seen::default();
        if !self.eat(b'{') {
            return None;
        }
        self.members(|r, key| {
            match key {
                "content" => {
                    seen.first(0)?;
                    let (text, span) = r.spanned_str()?;
                    delta.content = text;
                    r.spans.content = span;
                }
                "reasoning_content" => {
                    seen.first(1)?;
                    delta.reasoning_content = r.lenient_str()?;
                }
                "reasoning" => {
                    seen.first(2)?;
                    delta.reasoning = r.lenient_str()?;
                }
                "reasoning_text" => {
                    seen.first(3)?;
                    delta.reasoning_text = r.lenient_str()?;
                }
                "tool_calls" => {
                    seen.first(4)?;
                    delta.tool_calls = r.tool_calls()?;
                }
                "reasoning_details" => {
                    seen.first(5)?;
                    r.only_null()?;
                }
                _ => r.skip(2)?,
            }
            Some(())
        })?;
        Some(Some(delta))
    }

    fn tool_calls(&mut self) -> Option<Option<Vec<ToolCallDelta<'a>>>> {
        if self.null() {
            return Some(None);
        }
        if !self.eat(b'[') {
            return None;
        }
        let mut calls = Vec::new();
        if self.eat(b']') {
            return Some(Some(calls));
        }
        loop {
            calls.push(self.tool_call()?);
            if self.eat(b']') {
                return Some(Some(calls));
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    fn tool_call(&mut self) -> Option<ToolCallDelta<'a>> {
        let mut call = ToolCallDelta::default();
        let mut seen = Seen::default();
        if !self.eat(b'{') {
            return None;
        }
        self.members(|r, key| {
            match key {
                "index" => {
                    seen.first(0)?;
                    call.index = r.index()?;
                }
                "id" => {
                    seen.first(1)?;
                    call.id = r.lenient_str()?;
                }
                "function" => {
                    seen.first(2)?;
                    call.function = r.function()?;
                }
                _ => r.skip(4)?,
            }
            Some(())
        })?;
        Some(call)
    }

    fn function(&mut self) -> Option<Option<FunctionDelta<'a>>> {
        if self.null() {
            return Some(None);
        }
        let mut function = FunctionDelta::default();
        let mut seen = Seen::default();
        if !self.eat(b'{') {
            return None;
        }
        self.members(|r, key| {
            match key {
                "name" => {
                    seen.first(0)?;
                    function.name = r.lenient_str()?;
                }
                "arguments" => {
                    seen.first(1)?;
                    let (text, span) = r.spanned_str()?;
                    function.arguments = text;
                    r.spans.arguments = span;
                }
                _ => r.skip(5)?,
            }
            Some(())
        })?;
        Some(Some(function))
    }

    /// A string or `null` (other types go to serde, which ignores them or fails on them).
    fn lenient_str(&mut self) -> Option<Str<'a>> {
        if self.null() {
            return Some(None);
        }
        self.ws();
        self.string().map(Some)
    }

    /// [`Reader::lenient_str`] and, for a string, where its token is.
    fn spanned_str(&mut self) -> Option<(Str<'a>, Option<(usize, usize)>)> {
        self.ws();
        let start = self.pos;
        let text = self.lenient_str()?;
        let span = text.is_some().then_some((start, self.pos));
        Some((text, span))
    }

    /// `null` or a plain non-negative integer that fits in a `u64`.
    fn index(&mut self) -> Option<Option<u64>> {
        if self.null() {
            return Some(None);
        }
        let start = self.pos;
        self.integer()?;
        let digits = &self.data[start..self.pos];
        if self.peek().is_some_and(|b| matches!(b, b'.' | b'e' | b'E')) {
            return None;
        }
        digits.parse().ok().map(Some)
    }

    /// `0` or a digit run not starting with `0`.
    fn integer(&mut self) -> Option<()> {
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                    self.pos += 1;
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// A string at `pos` (its `"` is next): borrowed when it has no escapes.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let bytes = self.bytes();
        if bytes.get(self.pos) != Some(&b'"') {
            return None;
        }
        let start = self.pos + 1;
        let end = start + special(&bytes[start..])?;
        if bytes[end] == b'"' {
            self.pos = end + 1;
            return Some(Cow::Borrowed(&self.data[start..end]));
        }
        let mut text = String::with_capacity(end - start + 8);
        text.push_str(&self.data[start..end]);
        self.pos = end;
        self.escaped(&mut text)?;
        Some(Cow::Owned(text))
    }

    /// The rest of a string from an escape or its end, unescaped into `text`.
    fn escaped(&mut self, text: &mut String) -> Option<()> {
        let bytes = self.bytes();
        loop {
            match *bytes.get(self.pos)? {
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                b'\\' => {
                    self.pos += 1;
                    text.push(self.escape()?);
                }
                _ => return None,
            }
            let run = self.pos;
            self.pos += special(&bytes[run..])?;
            text.push_str(&self.data[run..self.pos]);
        }
    }

    /// One escape after its backslash.
    fn escape(&mut self) -> Option<char> {
        let byte = *self.bytes().get(self.pos)?;
        self.pos += 1;
        Some(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode_escape(),
            _ => return None,
        })
    }

    /// `\uXXXX` after its `u`; a surrogate only as a complete pair.
    fn unicode_escape(&mut self) -> Option<char> {
        let first = self.hex4()?;
        match first {
            0xD800..=0xDBFF => {
                if !self.literal("\\u") {
                    return None;
                }
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return None;
                }
                char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
            }
            0xDC00..=0xDFFF => None,
            code => char::from_u32(code),
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.data.get(self.pos..self.pos + 4)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.pos += 4;
        u32::from_str_radix(digits, 16).ok()
    }

    /// Skips one well-formed value nested `depth` levels deep.
    fn skip(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => {
                self.pos += 1;
                self.members(|r, _| r.skip(depth + 1))
            }
            b'[' => {
                self.pos += 1;
                if self.eat(b']') {
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    if self.eat(b']') {
                        return Some(());
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b't' => self.literal("true").then_some(()),
            b'f' => self.literal("false").then_some(()),
            b'n' => self.literal("null").then_some(()),
            _ => self.number(),
        }
    }

    /// A number by the JSON grammar (its value is not needed).
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        self.integer()?;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            self.digits()?;
        }
        Some(())
    }

    /// One or more digits.
    fn digits(&mut self) -> Option<()> {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        (self.pos > start).then_some(())
    }
}

/// The index of the first `"`, `\\` or control byte (below 0x20), eight bytes at a time.
///
/// Per 64-bit word, `(x - 0x01…) & !x & 0x80…` flags the bytes of `x` that are zero, and
/// `(v - 0x20…) & !v & 0x80…` the bytes of `v` below 0x20. A flag can be wrong only above a
/// byte that is rightly flagged (the borrow of the subtraction), so the lowest flag is exact.
pub fn special(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x;
    let mut at = 0;
    while let Some(word) = bytes.get(at..at + 8) {
        let mut le = [0; 8];
        le.copy_from_slice(word);
        let v = u64::from_le_bytes(le);
        let found = (zero(v ^ (ONES * u64::from(b'"')))
            | zero(v ^ (ONES * u64::from(b'\\')))
            | (v.wrapping_sub(ONES * 0x20) & !v))
            & HIGH;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = bytes[at..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20);
    tail.map(|i| at + i)
}
