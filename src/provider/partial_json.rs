//! Incremental parsing of streamed tool-call arguments in O(n) total.
//!
//! pi re-parses the whole argument buffer on every delta (`parseStreamingJson`, O(n²) on long
//! arguments). [`PartialJson`] is a push parser instead: each delta advances a state machine
//! once, completed values are attached to their containers as they close, and
//! [`PartialJson::snapshot`] builds the current best-effort value from that state without
//! looking at the text again.
//!
//! Best-effort semantics (those of the `partial-json` library pi uses): open objects, arrays and
//! strings are closed; a key without a value is dropped; an incomplete escape is dropped; a
//! partial literal (`tr`) completes to its literal; a partial number is cut back to its longest
//! valid prefix (`1.` → `1`, `-` → nothing). The parser is lenient about raw control characters
//! in strings (pi repairs those too). After a syntax error it stops and keeps the last state.

use serde_json::{Map, Value};

/// Containers may nest this deep (serde_json's own recursion limit).
const MAX_DEPTH: usize = 128;

/// A string being read, with its escape state.
#[derive(Clone, Debug, Default)]
struct StrState {
    text: String,
    escape: Escape,
    /// A high surrogate waiting for its low half.
    pending_high: Option<u16>,
}

#[derive(Clone, Debug, Default, PartialEq)]
enum Escape {
    #[default]
    None,
    Backslash,
    Unicode {
        digits: u8,
        code: u16,
    },
}

/// A scalar being read.
#[derive(Clone, Debug)]
enum Scalar {
    Str(StrState),
    Num(String),
    Lit(String),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ObjState {
    /// After `{`: a key or `}`.
    KeyOrEnd,
    /// After `,`: a key.
    Key,
    /// Reading a key string (in `Parser::scalar`).
    InKey,
    Colon,
    Value,
    /// After a value: `,` or `}`.
    CommaOrEnd,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ArrState {
    ValueOrEnd,
    Value,
    CommaOrEnd,
}

#[derive(Clone, Debug)]
enum Frame {
    Object {
        map: Map<String, Value>,
        key: Option<String>,
        state: ObjState,
    },
    Array {
        items: Vec<Value>,
        state: ArrState,
    },
}

/// Where the parser is outside any container.
#[derive(Clone, Debug, PartialEq)]
enum Top {
    Start,
    Inside,
    Done,
    Failed(String),
}

/// An incremental JSON parser fed with text deltas.
#[derive(Clone, Debug)]
pub struct PartialJson {
    buffer: String,
    stack: Vec<Frame>,
    scalar: Option<Scalar>,
    root: Option<Value>,
    top: Top,
}

impl Default for PartialJson {
    fn default() -> Self {
        PartialJson::new()
    }
}

impl PartialJson {
    pub fn new() -> Self {
        PartialJson {
            buffer: String::new(),
            stack: Vec::new(),
            scalar: None,
            root: None,
            top: Top::Start,
        }
    }

    /// The raw text received so far.
    pub fn text(&self) -> &str {
        &self.buffer
    }

    /// Feeds one delta; O(delta length).
    pub fn push(&mut self, delta: &str) {
        self.buffer.push_str(delta);
        for c in delta.chars() {
            if matches!(self.top, Top::Failed(_)) {
                return;
            }
            if let Err(message) = self.step(c) {
                self.top = Top::Failed(message);
            }
        }
    }

    /// The current best-effort value (`None` before anything usable arrived). Costs
    /// O(size of the value), independent of how the text was split.
    pub fn snapshot(&self) -> Option<Value> {
        if let Some(root) = &self.root {
            return Some(root.clone());
        }
        let mut child = self.scalar.as_ref().and_then(scalar_partial);
        for frame in self.stack.iter().rev() {
            child = Some(match frame {
                Frame::Object { map, key, state } => {
                    let mut map = map.clone();
                    if let (Some(key), Some(value), false) = (key, child, *state == ObjState::InKey)
                    {
                        map.insert(key.clone(), value);
                    }
                    Value::Object(map)
                }
                Frame::Array { items, .. } => {
                    let mut items = items.clone();
                    items.extend(child);
                    Value::Array(items)
                }
            });
        }
        child
    }

    /// The snapshot as tool arguments: an object, else `{}`.
    pub fn snapshot_object(&self) -> Map<String, Value> {
        match self.snapshot() {
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    /// The final arguments: the whole text must be one JSON object. Strict JSON first (exactly
    /// serde_json's result); failing that, a complete lenient parse (raw control characters in
    /// strings, which pi repairs) is accepted.
    pub fn finish(&self) -> Result<Map<String, Value>, String> {
        if self.buffer.trim().is_empty() {
            return Ok(Map::new());
        }
        let strict = serde_json::from_str::<Value>(&self.buffer);
        let value = match (strict, &self.top, &self.root) {
            (Ok(value), _, _) => value,
            (Err(_), Top::Done, Some(root)) => root.clone(),
            (Err(e), Top::Failed(reason), _) => {
                return Err(format!("invalid tool arguments JSON ({reason}): {e}"));
            }
            (Err(e), _, _) => return Err(format!("invalid tool arguments JSON: {e}")),
        };
        match value {
            Value::Object(map) => Ok(map),
            other => Err(format!(
                "tool arguments are not a JSON object: {}",
                json_kind(&other)
            )),
        }
    }

    fn step(&mut self, c: char) -> Result<(), String> {
        if let Some(scalar) = self.scalar.as_mut() {
            match scalar {
                Scalar::Str(s) => {
                    if string_step(s, c)? {
                        let Some(Scalar::Str(s)) = self.scalar.take() else {
                            return Ok(());
                        };
                        return self.string_done(s.text);
                    }
                    return Ok(());
                }
                Scalar::Num(n) if is_number_char(c) => {
                    n.push(c);
                    return Ok(());
                }
                Scalar::Lit(l) if c.is_ascii_alphabetic() => {
                    l.push(c);
                    return Ok(());
                }
                _ => {
                    let scalar = self.scalar.take();
                    self.value_done(finish_token(scalar)?)?;
                }
            }
        }
        self.structural(c)
    }

    /// A character outside any scalar.
    fn structural(&mut self, c: char) -> Result<(), String> {
        if c.is_ascii_whitespace() {
            return Ok(());
        }
        let expecting_value = match self.stack.last() {
            None => self.top == Top::Start,
            Some(Frame::Object { state, .. }) => *state == ObjState::Value,
            Some(Frame::Array { state, .. }) => {
                matches!(state, ArrState::Value | ArrState::ValueOrEnd)
            }
        };
        if expecting_value && c != ']' {
            return self.begin_value(c);
        }
        match (self.stack.last_mut(), c) {
            (Some(Frame::Object { state, .. }), '"')
                if matches!(state, ObjState::KeyOrEnd | ObjState::Key) =>
            {
                *state = ObjState::InKey;
                self.scalar = Some(Scalar::Str(StrState::default()));
                Ok(())
            }
            (Some(Frame::Object { state, .. }), ':') if *state == ObjState::Colon => {
                *state = ObjState::Value;
                Ok(())
            }
            (Some(Frame::Object { state, .. }), ',') if *state == ObjState::CommaOrEnd => {
                *state = ObjState::Key;
                Ok(())
            }
            (Some(Frame::Array { state, .. }), ',') if *state == ArrState::CommaOrEnd => {
                *state = ArrState::Value;
                Ok(())
            }
            (
                Some(Frame::Object {
                    state: ObjState::KeyOrEnd | ObjState::CommaOrEnd,
                    ..
                }),
                '}',
            )
            | (
                Some(Frame::Array {
                    state: ArrState::ValueOrEnd | ArrState::CommaOrEnd,
                    ..
                }),
                ']',
            ) => self.close(),
            (None, _) if self.top == Top::Done => Err(format!("unexpected {c:?} after the value")),
            _ => Err(format!("unexpected {c:?}")),
        }
    }

    fn begin_value(&mut self, c: char) -> Result<(), String> {
        if self.stack.is_empty() {
            self.top = Top::Inside;
        }
        if matches!(c, '{' | '[') && self.stack.len() >= MAX_DEPTH {
            // Deeper than serde_json accepts; also keeps recursive drops of the value shallow.
            return Err(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        match c {
            '{' => self.stack.push(Frame::Object {
                map: Map::new(),
                key: None,
                state: ObjState::KeyOrEnd,
            }),
            '[' => self.stack.push(Frame::Array {
                items: Vec::new(),
                state: ArrState::ValueOrEnd,
            }),
            '"' => self.scalar = Some(Scalar::Str(StrState::default())),
            '-' | '0'..='9' => self.scalar = Some(Scalar::Num(c.to_string())),
            't' | 'f' | 'n' => self.scalar = Some(Scalar::Lit(c.to_string())),
            _ => return Err(format!("unexpected {c:?} where a value was expected")),
        }
        Ok(())
    }

    fn close(&mut self) -> Result<(), String> {
        let value = match self.stack.pop() {
            Some(Frame::Object { map, .. }) => Value::Object(map),
            Some(Frame::Array { items, .. }) => Value::Array(items),
            None => return Err("unbalanced close".into()),
        };
        self.value_done(value)
    }

    /// A completed string: a key or a value.
    fn string_done(&mut self, text: String) -> Result<(), String> {
        if let Some(Frame::Object { key, state, .. }) = self.stack.last_mut()
            && *state == ObjState::InKey
        {
            *key = Some(text);
            *state = ObjState::Colon;
            return Ok(());
        }
        self.value_done(Value::String(text))
    }

    /// Attaches a completed value to its container (or makes it the root).
    fn value_done(&mut self, value: Value) -> Result<(), String> {
        match self.stack.last_mut() {
            None => {
                self.root = Some(value);
                self.top = Top::Done;
            }
            Some(Frame::Object { map, key, state }) => {
                let k = key.take().ok_or("object value without a key")?;
                map.insert(k, value);
                *state = ObjState::CommaOrEnd;
            }
            Some(Frame::Array { items, state }) => {
                items.push(value);
                *state = ArrState::CommaOrEnd;
            }
        }
        Ok(())
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn is_number_char(c: char) -> bool {
    c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')
}

/// A number or literal token ended by a delimiter.
fn finish_token(scalar: Option<Scalar>) -> Result<Value, String> {
    match scalar {
        Some(Scalar::Num(n)) => serde_json::from_str::<Value>(&n)
            .ok()
            .filter(Value::is_number)
            .ok_or_else(|| format!("invalid number {n:?}")),
        Some(Scalar::Lit(l)) => match l.as_str() {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            "null" => Ok(Value::Null),
            _ => Err(format!("invalid literal {l:?}")),
        },
        _ => Err("internal: no token".into()),
    }
}

/// The best-effort value of an unfinished scalar.
fn scalar_partial(scalar: &Scalar) -> Option<Value> {
    match scalar {
        Scalar::Str(s) => Some(Value::String(s.text.clone())),
        Scalar::Num(n) => partial_number(n),
        Scalar::Lit(l) => partial_literal(l),
    }
}

/// The longest prefix of `text` that is a valid number.
pub(crate) fn partial_number(text: &str) -> Option<Value> {
    let mut end = text.len();
    while end > 0 {
        let candidate = &text[..end];
        if candidate.ends_with(|c: char| c.is_ascii_digit())
            && let Ok(value) = serde_json::from_str::<Value>(candidate)
            && value.is_number()
        {
            return Some(value);
        }
        end -= 1;
    }
    None
}

pub(crate) fn partial_literal(text: &str) -> Option<Value> {
    if text.is_empty() {
        None
    } else if "true".starts_with(text) {
        Some(Value::Bool(true))
    } else if "false".starts_with(text) {
        Some(Value::Bool(false))
    } else if "null".starts_with(text) {
        Some(Value::Null)
    } else {
        None
    }
}

/// Advances a string by one character; `Ok(true)` when the closing quote arrived.
fn string_step(s: &mut StrState, c: char) -> Result<bool, String> {
    match s.escape.clone() {
        Escape::None => match c {
            '"' => {
                flush_surrogate(s);
                return Ok(true);
            }
            '\\' => s.escape = Escape::Backslash,
            _ => {
                flush_surrogate(s);
                s.text.push(c);
            }
        },
        Escape::Backslash => {
            s.escape = Escape::None;
            let decoded = match c {
                '"' => '"',
                '\\' => '\\',
                '/' => '/',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'u' => {
                    s.escape = Escape::Unicode { digits: 0, code: 0 };
                    return Ok(false);
                }
                _ => return Err(format!("invalid escape \\{c}")),
            };
            flush_surrogate(s);
            s.text.push(decoded);
        }
        Escape::Unicode { digits, code } => {
            let digit = c
                .to_digit(16)
                .ok_or_else(|| format!("invalid \\u digit {c:?}"))?;
            let code = (code << 4) | digit as u16;
            if digits < 3 {
                s.escape = Escape::Unicode {
                    digits: digits + 1,
                    code,
                };
            } else {
                s.escape = Escape::None;
                code_unit(s, code);
            }
        }
    }
    Ok(false)
}

/// Combines UTF-16 code units from `\u` escapes; lone surrogates become U+FFFD.
fn code_unit(s: &mut StrState, unit: u16) {
    let is_high = (0xD800..0xDC00).contains(&unit);
    let is_low = (0xDC00..0xE000).contains(&unit);
    if let (Some(high), true) = (s.pending_high, is_low) {
        s.pending_high = None;
        let code = 0x10000 + (((high as u32) - 0xD800) << 10) + ((unit as u32) - 0xDC00);
        s.text.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
        return;
    }
    flush_surrogate(s);
    if is_high {
        s.pending_high = Some(unit);
    } else {
        s.text
            .push(char::from_u32(unit as u32).unwrap_or('\u{FFFD}'));
    }
}

fn flush_surrogate(s: &mut StrState) {
    if s.pending_high.take().is_some() {
        s.text.push('\u{FFFD}');
    }
}

#[cfg(test)]
#[path = "partial_json_tests.rs"]
mod tests;
