//! A minimal hand-written HTTP/1.1 layer for the mock provider: read one request, write one
//! response (plain, or an SSE stream in chunked encoding so a cut connection is detectable).

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};

const MAX_HEADER_BYTES: usize = 64 * 1024;
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// A parsed request.
#[derive(Clone, Debug)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    /// Header names lowercased; repeated headers joined with `, `.
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

fn invalid(message: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message.into())
}

/// Reads one request from `stream`.
pub async fn read_request<S>(stream: &mut S) -> std::io::Result<HttpRequest>
where
    S: AsyncReadExt + AsyncWrite + Unpin,
{
    let mut buf = Vec::with_capacity(8192);
    let header_end = loop {
        if let Some(pos) = find(&buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEADER_BYTES {
            return Err(invalid("request headers too large"));
        }
        let mut tmp = [0u8; 8192];
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Err(invalid(
                "connection closed before the request headers ended",
            ));
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    if method.is_empty() || path.is_empty() {
        return Err(invalid(format!("bad request line {request_line:?}")));
    }
    let mut headers = BTreeMap::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            let value = value.trim().to_string();
            headers
                .entry(name)
                .and_modify(|v: &mut String| {
                    v.push_str(", ");
                    v.push_str(&value);
                })
                .or_insert(value);
        }
    }
    if headers
        .get("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }
    let rest = buf.split_off(header_end + 4);
    let chunked = headers
        .get("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        read_chunked(stream, rest).await?
    } else {
        let length = match headers.get("content-length") {
            Some(v) => v
                .parse::<usize>()
                .map_err(|_| invalid("bad content-length"))?,
            None => 0,
        };
        read_exact_body(stream, rest, length).await?
    };
    Ok(HttpRequest {
        method,
        path,
        headers,
        body,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

async fn read_exact_body<S: AsyncReadExt + Unpin>(
    stream: &mut S,
    mut body: Vec<u8>,
    length: usize,
) -> std::io::Result<Vec<u8>> {
    if length > MAX_BODY_BYTES {
        return Err(invalid("request body too large"));
    }
    while body.len() < length {
        let mut tmp = vec![0u8; (length - body.len()).min(64 * 1024)];
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Err(invalid("connection closed inside the request body"));
        }
        body.extend_from_slice(&tmp[..n]);
    }
    body.truncate(length);
    Ok(body)
}

async fn read_chunked<S: AsyncReadExt + Unpin>(
    stream: &mut S,
    mut raw: Vec<u8>,
) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(pos) = find(&raw, b"\r\n") {
                break pos;
            }
            fill(stream, &mut raw).await?;
        };
        let size_text = String::from_utf8_lossy(&raw[..line_end]).into_owned();
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| invalid("bad chunk size"))?;
        raw.drain(..line_end + 2);
        if size == 0 {
            return Ok(body);
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(invalid("request body too large"));
        }
        while raw.len() < size + 2 {
            fill(stream, &mut raw).await?;
        }
        body.extend_from_slice(&raw[..size]);
        raw.drain(..size + 2);
    }
}

async fn fill<S: AsyncReadExt + Unpin>(stream: &mut S, raw: &mut Vec<u8>) -> std::io::Result<()> {
    let mut tmp = [0u8; 8192];
    let n = stream.read(&mut tmp).await?;
    if n == 0 {
        return Err(invalid("connection closed inside a chunked body"));
    }
    raw.extend_from_slice(&tmp[..n]);
    Ok(())
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// Writes a complete non-streaming response and flushes it.
pub async fn write_plain<S: AsyncWrite + Unpin>(
    stream: &mut S,
    status: u16,
    extra_headers: &[(&str, String)],
    body: &str,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        reason_phrase(status),
        body.len()
    );
    for (name, value) in extra_headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await
}

/// How an SSE body is delivered.
#[derive(Clone, Debug, Default)]
pub struct StreamPlan {
    pub delay: Option<Duration>,
    pub write_bytes: Option<usize>,
    pub disconnect_after_chunks: Option<usize>,
    pub malformed_after_chunks: Option<usize>,
    pub malformed_chunk: Vec<u8>,
}

/// Writes an SSE response in chunked encoding, applying the plan's faults.
pub async fn write_sse<S: AsyncWrite + Unpin>(
    stream: S,
    chunks: impl Iterator<Item = Vec<u8>>,
    plan: &StreamPlan,
) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(64 * 1024, stream);
    out.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    )
    .await?;
    // Flush per chunk only when pacing matters; otherwise let the buffer batch for throughput.
    let paced = plan.delay.is_some() || plan.write_bytes.is_some();
    if paced {
        // Like a real server: the status line and headers go out before the first (slow) event.
        out.flush().await?;
    }
    let mut count = 0;
    for (index, chunk) in chunks.enumerate() {
        if plan.disconnect_after_chunks == Some(index) {
            return cut(out).await;
        }
        if plan.malformed_after_chunks == Some(index) {
            write_chunk(&mut out, &plan.malformed_chunk, plan, paced).await?;
        }
        write_chunk(&mut out, &chunk, plan, paced).await?;
        count = index + 1;
    }
    if plan.malformed_after_chunks == Some(count) {
        write_chunk(&mut out, &plan.malformed_chunk, plan, paced).await?;
    }
    if plan.disconnect_after_chunks.is_some_and(|n| n >= count) {
        return cut(out).await;
    }
    out.write_all(b"0\r\n\r\n").await?;
    out.flush().await?;
    out.shutdown().await
}

/// Ends the connection without the final zero-length chunk: the client sees a truncated body.
async fn cut<S: AsyncWrite + Unpin>(mut out: BufWriter<S>) -> std::io::Result<()> {
    out.flush().await?;
    out.shutdown().await
}

async fn write_chunk<S: AsyncWrite + Unpin>(
    out: &mut BufWriter<S>,
    chunk: &[u8],
    plan: &StreamPlan,
    paced: bool,
) -> std::io::Result<()> {
    let piece_size = plan
        .write_bytes
        .filter(|n| *n > 0)
        .unwrap_or(chunk.len().max(1));
    for piece in chunk.chunks(piece_size) {
        if let Some(delay) = plan.delay {
            tokio::time::sleep(delay).await;
        }
        out.write_all(format!("{:x}\r\n", piece.len()).as_bytes())
            .await?;
        out.write_all(piece).await?;
        out.write_all(b"\r\n").await?;
        if paced {
            out.flush().await?;
        }
    }
    Ok(())
}
