//! Response bodies, decoded out of the connection's read buffer: a length, chunked transfer
//! coding, or everything until the connection closes (RFC 9112 §6.3, §7.1).

use super::Error;
use super::connect::Connection;
use super::head::ResponseHead;
use super::pool::Return;

/// Longest chunk-size line accepted (a size in hex and extensions nobody sends).
const MAX_CHUNK_LINE: usize = 4096;

/// How the body's end is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    Length(u64),
    Chunked(Chunk),
    UntilClose,
    Done,
}

/// Where a chunked body's decoder stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunk {
    Size,
    Data(u64),
    DataEnd,
    Trailers,
}

impl Framing {
    pub fn of(head: &ResponseHead) -> Result<Framing, Error> {
        if matches!(head.status, 100..=199 | 204 | 304) {
            return Ok(Framing::Length(0));
        }
        let codings: Vec<&str> = head
            .values("transfer-encoding")
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        if let Some(last) = codings.last() {
            // Only chunked ends in-band; any other final coding runs until the close.
            return Ok(if last.eq_ignore_ascii_case("chunked") {
                Framing::Chunked(Chunk::Size)
            } else {
                Framing::UntilClose
            });
        }
        let mut length = None;
        for value in head.values("content-length").flat_map(|v| v.split(',')) {
            let parsed: u64 = value
                .trim()
                .parse()
                .map_err(|_| Error::Protocol(format!("bad Content-Length {:?}", value.trim())))?;
            if length.is_some_and(|l| l != parsed) {
                return Err(Error::Protocol("conflicting Content-Length values".into()));
            }
            length = Some(parsed);
        }
        Ok(length.map_or(Framing::UntilClose, Framing::Length))
    }
}

/// What [`Body::advance`] found.
enum Next {
    Data(usize),
    NeedRead,
    End,
}

/// What [`Body::buffered`] has without reading.
#[derive(Debug)]
pub enum Buffered<'a> {
    /// The next piece of the body.
    Data(&'a [u8]),
    /// Nothing buffered: [`Body::fill`] reads more.
    NeedRead,
    /// The body is complete.
    End,
}

/// A response body. Complete, its kept-alive connection goes back to the pool; dropped early,
/// the connection closes (what is left of the body would be in the way).
pub struct Body {
    conn: Option<Connection>,
    framing: Framing,
    reuse: Option<Return>,
    closed: bool,
}

impl Body {
    pub(super) fn new(conn: Connection, framing: Framing, reuse: Option<Return>) -> Body {
        let reuse = reuse.filter(|_| framing != Framing::UntilClose);
        Body {
            conn: Some(conn),
            framing,
            reuse,
            closed: false,
        }
    }

    /// The next piece of decoded body among the bytes already read, without any I/O.
    pub fn buffered(&mut self) -> Result<Buffered<'_>, Error> {
        let len = match self.advance()? {
            Next::Data(len) => len,
            Next::NeedRead => return Ok(Buffered::NeedRead),
            Next::End => return Ok(Buffered::End),
        };
        match self.conn.as_mut() {
            Some(conn) => Ok(Buffered::Data(conn.buf.take(len))),
            None => Ok(Buffered::End),
        }
    }

    /// Steps over framing until body data (its length), the end, or an empty buffer.
    fn advance(&mut self) -> Result<Next, Error> {
        loop {
            match self.framing {
                Framing::Done | Framing::Length(0) => {
                    self.finish();
                    return Ok(Next::End);
                }
                Framing::UntilClose if self.closed => {
                    self.conn = None;
                    return Ok(Next::End);
                }
                _ => {}
            }
            let Some(conn) = self.conn.as_mut() else {
                return Ok(Next::End);
            };
            let available = conn.buf.available().len();
            if available == 0 {
                return Ok(Next::NeedRead);
            }
            let (next, len) = match self.framing {
                Framing::Length(left) => {
                    let len = piece(left, available);
                    (Framing::Length(left - len as u64), len)
                }
                Framing::Chunked(Chunk::Data(left)) => {
                    let len = piece(left, available);
                    let next = match left - len as u64 {
                        0 => Chunk::DataEnd,
                        rest => Chunk::Data(rest),
                    };
                    (Framing::Chunked(next), len)
                }
                Framing::Chunked(chunk) => match chunk_line(chunk, conn.buf.available())? {
                    Some((next, line)) => {
                        conn.buf.consume(line);
                        self.framing = next;
                        continue;
                    }
                    None => return Ok(Next::NeedRead),
                },
                _ => (Framing::UntilClose, available),
            };
            self.framing = next;
            return Ok(Next::Data(len));
        }
    }

    /// Skips the rest of the body if it was already read (a stream's last event usually
    /// arrives together with the body's end), so the connection can serve another request;
    /// otherwise the connection is closed when the body is dropped. Never waits.
    pub fn skip_buffered(&mut self) {
        while let Ok(Buffered::Data(_)) = self.buffered() {}
    }

    /// Reads more of the body from the connection (call after [`Buffered::NeedRead`]).
    pub async fn fill(&mut self) -> Result<(), Error> {
        let Some(conn) = self.conn.as_mut() else {
            return Ok(());
        };
        match conn.read_more().await? {
            0 if self.framing == Framing::UntilClose => {
                self.closed = true;
                Ok(())
            }
            0 => {
                self.conn = None;
                Err(Error::Protocol(
                    "the connection closed before the body ended".into(),
                ))
            }
            _ => Ok(()),
        }
    }

    /// The body is complete: its connection may serve the next request.
    fn finish(&mut self) {
        self.framing = Framing::Done;
        let Some(conn) = self.conn.take() else { return };
        // Bytes beyond the response are a server bug: such a connection is not reused.
        if let Some(reuse) = self.reuse.take()
            && conn.buf.available().is_empty()
        {
            reuse.give_back(conn);
        }
    }
}

fn piece(left: u64, available: usize) -> usize {
    usize::try_from(left).map_or(available, |left| left.min(available))
}

/// Decodes one line of chunk framing at the start of `bytes`: the state after it and the
/// line's length, or `None` while the line is incomplete.
fn chunk_line(chunk: Chunk, bytes: &[u8]) -> Result<Option<(Framing, usize)>, Error> {
    // The usual lines, decoded without a search: a token's chunk is framed by both.
    match chunk {
        Chunk::DataEnd if bytes.starts_with(b"\r\n") => {
            return Ok(Some((Framing::Chunked(Chunk::Size), 2)));
        }
        Chunk::Size => {
            if let Some((size, len)) = plain_size_line(bytes) {
                return Ok(Some((sized(size), len)));
            }
        }
        _ => {}
    }
    let Some(end) = memchr::memchr(b'\n', bytes) else {
        return if bytes.len() > MAX_CHUNK_LINE {
            Err(Error::Protocol("chunk header too long".into()))
        } else {
            Ok(None)
        };
    };
    let line = bytes[..end].strip_suffix(b"\r").unwrap_or(&bytes[..end]);
    let next = match chunk {
        Chunk::DataEnd if line.is_empty() => Framing::Chunked(Chunk::Size),
        Chunk::DataEnd => return Err(Error::Protocol("chunk data longer than its size".into())),
        Chunk::Size => sized(chunk_size(line)?),
        // The empty line ends the trailer section; trailer fields are not used.
        Chunk::Trailers if line.is_empty() => Framing::Done,
        Chunk::Trailers => Framing::Chunked(Chunk::Trailers),
        // Data is not a line: the caller hands it out instead.
        Chunk::Data(_) => return Ok(None),
    };
    Ok(Some((next, end + 1)))
}

fn sized(size: u64) -> Framing {
    match size {
        0 => Framing::Chunked(Chunk::Trailers),
        size => Framing::Chunked(Chunk::Data(size)),
    }
}

/// `HEX\r\n` with at most 15 digits: the size and the line's length. Anything else (an
/// extension, a bare `\n`, an incomplete line) is left to the general path.
fn plain_size_line(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut size = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(17) {
        let digit = match byte {
            b'0'..=b'9' => byte - b'0',
            b'a'..=b'f' => byte - b'a' + 10,
            b'A'..=b'F' => byte - b'A' + 10,
            b'\r' if i > 0 => {
                return (bytes.get(i + 1) == Some(&b'\n')).then_some((size, i + 2));
            }
            _ => return None,
        };
        if i == 15 {
            return None;
        }
        size = size << 4 | u64::from(digit);
    }
    None
}

/// The hex size before any `;extension`.
fn chunk_size(line: &[u8]) -> Result<u64, Error> {
    let digits = line
        .split(|b| *b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    let bad = || {
        Error::Protocol(format!(
            "bad chunk size {:?}",
            String::from_utf8_lossy(line)
        ))
    };
    if digits.is_empty() || digits.len() > 15 {
        return Err(bad());
    }
    let text = std::str::from_utf8(digits).map_err(|_| bad())?;
    u64::from_str_radix(text, 16).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast size lines decode as the general path does, and leave it everything else.
    #[test]
    fn plain_size_lines_agree_with_the_general_parser() {
        let cases: [&[u8]; 12] = [
            b"0\r\n",
            b"a0\r\n",
            b"FfFf\r\n",
            b"123456789abcdef\r\n",
            b"1234567890abcdef\r\n",
            b"5;x=1\r\n",
            b"5 \r\n",
            b"5\n",
            b"\r\n",
            b"5\r",
            b"5",
            b"g\r\n",
        ];
        for case in cases {
            let general = chunk_line(Chunk::Size, case);
            let plain = plain_size_line(case);
            if let Some((size, len)) = plain {
                let Ok(Some((framing, general_len))) = general else {
                    panic!("{case:?}: the general path disagrees")
                };
                assert_eq!((framing, general_len), (sized(size), len), "{case:?}");
            }
        }
        assert_eq!(plain_size_line(b"a0\r\nrest"), Some((160, 4)));
        assert_eq!(plain_size_line(b"1234567890abcdef\r\n"), None);
        assert_eq!(plain_size_line(b"5;x\r\n"), None);
        assert!(chunk_line(Chunk::Size, b"1234567890abcdef\r\n").is_err());
    }
}
