//! A byte-level Server-Sent Events decoder (the WHATWG `text/event-stream` format) over the
//! chunks of an HTTP body.
//!
//! Why our own: a model streams one event per token, so this is the hot path. Events are read
//! in place from the buffered bytes: the event name and a single `data` line are borrowed, not
//! copied into per-field strings; only an event with several `data` lines is joined (into a
//! buffer reused from event to event). Chunks may split the stream anywhere, inside a line
//! ending or a UTF-8 sequence: lines are only decoded once complete.
//!
//! Semantics (the WHATWG parsing rules, as `eventsource-stream` and the OpenAI/Anthropic SDKs
//! that pi uses apply them):
//! - lines end in `\n`, `\r\n` or `\r`; a blank line dispatches the event;
//! - a line starting with `:` is a comment; `field: value` loses one space after the colon; a
//!   line without a colon is a field with an empty value;
//! - `event` sets the name (default `message`), `data` lines are joined with `\n`, `id`,
//!   `retry` and unknown fields are ignored;
//! - an event without any `data` line is not dispatched;
//! - an event not followed by a blank line when the body ends is discarded (the SDKs' and the
//!   spec's behaviour: a cut stream does not produce a half-received event);
//! - a leading UTF-8 byte order mark is skipped; invalid UTF-8 becomes U+FFFD.

use std::borrow::Cow;

/// One dispatched event, borrowing from the decoder until the next call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event` field, or `message`.
    pub event: Cow<'a, str>,
    /// The `data` lines joined with `\n`.
    pub data: Cow<'a, str>,
}

/// The stream broke the decoder's limits.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SseError {
    #[error("an event grew beyond {limit} bytes without ending")]
    EventTooLarge { limit: usize },
}

/// Largest event accepted (a safety limit against a server that never ends a line).
pub const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Where the `data` of the event being read is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Data {
    #[default]
    None,
    /// One line: its range, relative to the event's start.
    One(usize, usize),
    /// Several lines, joined in `joined`.
    Joined,
}

/// Incremental decoder: [`push`](SseDecoder::push) body chunks, then take every complete event
/// with [`next_event`](SseDecoder::next_event) until it returns `None`.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    /// Start of the event being read; bytes before it are consumed.
    start: usize,
    /// Start of the next line to read.
    pos: usize,
    /// Bytes before this index (from `pos`) hold no line end: a long line is scanned once.
    scanned: usize,
    /// The last line ended in `\r` at the end of the buffer: an `\n` that follows belongs to it.
    skip_lf: bool,
    /// The start of the stream was checked for a byte order mark.
    bom_checked: bool,
    /// The `event` field's value, relative to `start`.
    name: Option<(usize, usize)>,
    data: Data,
    joined: Vec<u8>,
}

impl SseDecoder {
    pub fn new() -> Self {
        SseDecoder::default()
    }

    /// Appends a body chunk. Consumed bytes are dropped first, so the buffer holds at most
    /// one incomplete event besides `chunk`.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), SseError> {
        if self.start > 0 {
            if self.start == self.buf.len() {
                self.buf.clear();
            } else {
                self.buf.drain(..self.start);
            }
            self.pos -= self.start;
            self.scanned = self.scanned.saturating_sub(self.start);
            self.start = 0;
        }
        if self.buf.len() + chunk.len() > MAX_EVENT_BYTES {
            return Err(SseError::EventTooLarge {
                limit: MAX_EVENT_BYTES,
            });
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    /// The next complete event, or `None` when more bytes are needed.
    pub fn next_event(&mut self) -> Option<SseEvent<'_>> {
        if !self.bom_checked && !self.skip_bom() {
            return None;
        }
        loop {
            let (end, next) = self.next_line()?;
            let line = self.pos..end;
            self.pos = next;
            if line.is_empty() {
                if let Some(event) = self.dispatch() {
                    return Some(self.event(event));
                }
                continue;
            }
            self.field(line.start, line.end);
        }
    }

    /// Drops a leading byte order mark; `false` while too few bytes arrived to tell.
    fn skip_bom(&mut self) -> bool {
        let head = &self.buf[self.pos..];
        if head.len() < BOM.len() && BOM.starts_with(head) {
            return false;
        }
        if head.starts_with(BOM) {
            self.pos += BOM.len();
            self.start = self.pos;
        }
        self.bom_checked = true;
        true
    }

    /// The end of the line at `pos` and the start of the one after it.
    fn next_line(&mut self) -> Option<(usize, usize)> {
        if self.skip_lf && self.pos < self.buf.len() {
            self.skip_lf = false;
            if self.buf[self.pos] == b'\n' {
                self.pos += 1;
            }
        }
        let from = self.scanned.max(self.pos);
        let Some(found) = memchr::memchr2(b'\n', b'\r', &self.buf[from..]) else {
            self.scanned = self.buf.len();
            return None;
        };
        let end = from + found;
        let next = if self.buf[end] == b'\n' {
            end + 1
        } else if end + 1 == self.buf.len() {
            // A CR at the end of what arrived: an LF in the next chunk ends the same line.
            self.skip_lf = true;
            end + 1
        } else if self.buf[end + 1] == b'\n' {
            end + 2
        } else {
            end + 1
        };
        Some((end, next))
    }

    /// Applies one non-empty line.
    fn field(&mut self, start: usize, end: usize) {
        let line = &self.buf[start..end];
        let (name, value) = match memchr::memchr(b':', line) {
            Some(0) => return, // a comment
            Some(colon) => {
                let value = start + colon + 1;
                let value = if self.buf.get(value) == Some(&b' ') && value < end {
                    value + 1
                } else {
                    value
                };
                (&line[..colon], (value, end))
            }
            None => (line, (end, end)),
        };
        let (from, to) = (value.0 - self.start, value.1 - self.start);
        match name {
            b"data" => self.add_data(from, to),
            b"event" => self.name = Some((from, to)),
            _ => {}
        }
    }

    fn add_data(&mut self, from: usize, to: usize) {
        let base = self.start;
        match self.data {
            Data::None => self.data = Data::One(from, to),
            Data::One(a, b) => {
                self.joined.clear();
                self.joined.extend_from_slice(&self.buf[base + a..base + b]);
                self.joined.push(b'\n');
                self.joined
                    .extend_from_slice(&self.buf[base + from..base + to]);
                self.data = Data::Joined;
            }
            Data::Joined => {
                self.joined.push(b'\n');
                self.joined
                    .extend_from_slice(&self.buf[base + from..base + to]);
            }
        }
    }

    /// Ends the event at a blank line: its name and data ranges (absolute), if it has data.
    fn dispatch(&mut self) -> Option<Dispatched> {
        let base = self.start;
        self.start = self.pos;
        let name = self.name.take().map(|(a, b)| (base + a, base + b));
        let data = match std::mem::take(&mut self.data) {
            Data::None => return None,
            Data::One(a, b) => Some((base + a, base + b)),
            Data::Joined => None,
        };
        Some(Dispatched { name, data })
    }

    fn event(&self, dispatched: Dispatched) -> SseEvent<'_> {
        let event = match dispatched.name {
            Some((a, b)) if a < b => text(&self.buf[a..b]),
            _ => Cow::Borrowed("message"),
        };
        let data = match dispatched.data {
            Some((a, b)) => text(&self.buf[a..b]),
            None => text(&self.joined),
        };
        SseEvent { event, data }
    }
}

/// The bytes as text: borrowed when valid UTF-8 (checked with the fast validator; the lossy
/// decoder is several times slower), with U+FFFD for invalid sequences otherwise.
fn text(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// A dispatched event's ranges in the buffer (`data: None` means the joined lines).
struct Dispatched {
    name: Option<(usize, usize)>,
    data: Option<(usize, usize)>,
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
