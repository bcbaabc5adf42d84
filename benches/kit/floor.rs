//! The floor: a plain HTTP client that asks the mock for its stream and reads it to the end,
//! doing nothing with the bytes. Whatever agent-lsp costs above this is agent-lsp's own cost.
//!
//! Blocking std sockets, no runtime, no TLS, no parsing: the least a client can do.

use std::io::{Read, Write};
use std::net::TcpStream;

use anyhow::{Context, bail};

/// The request body the floor sends: a minimal OpenAI streaming request (no tool history, so
/// the mock's history check is trivial).
pub const FLOOR_BODY: &str =
    r#"{"model":"gpt-4.1","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

/// Makes `requests` sequential requests to `http://<addr>/v1/chat/completions`, each read to
/// the end of the connection. Returns the bytes received. Any non-200 answer is an error.
pub fn fetch(addr: &str, requests: usize) -> anyhow::Result<u64> {
    fetch_bodies(addr, std::iter::repeat_n(FLOOR_BODY, requests))
}

/// One request per body, in order, each read to the end of the connection. Replaying the
/// bodies a client sent makes the mock do the same work for the floor as for that client
/// (reading and checking a history that grows every turn), so only the client side differs.
pub fn fetch_bodies<'a>(
    addr: &str,
    bodies: impl IntoIterator<Item = &'a str>,
) -> anyhow::Result<u64> {
    let mut total = 0u64;
    let mut buf = vec![0u8; 256 * 1024];
    for body in bodies {
        let mut socket =
            TcpStream::connect(addr).with_context(|| format!("cannot connect to {addr}"))?;
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        socket.write_all(head.as_bytes())?;
        socket.write_all(body.as_bytes())?;
        let mut first = true;
        loop {
            let n = socket.read(&mut buf)?;
            if n == 0 {
                break;
            }
            if first {
                first = false;
                if !buf[..n].starts_with(b"HTTP/1.1 200") {
                    let line = String::from_utf8_lossy(&buf[..n.min(200)]).into_owned();
                    bail!("the mock answered the floor with {line:?}");
                }
            }
            total += n as u64;
        }
    }
    Ok(total)
}

/// The floor process's entry point: `__floor ADDR REQUESTS`, or `__floor ADDR --bodies FILE`
/// to replay the request bodies in FILE (one JSON body per line). Prints the bytes received.
pub fn floor_main(args: &[String]) -> anyhow::Result<()> {
    let bytes = match args {
        [addr, flag, file] if flag == "--bodies" => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read the request bodies in {file}"))?;
            fetch_bodies(addr, text.lines())?
        }
        [addr, requests] => fetch(addr, requests.parse().context("REQUESTS must be a number")?)?,
        _ => bail!("usage: __floor HOST:PORT REQUESTS | __floor HOST:PORT --bodies FILE"),
    };
    println!("{bytes}");
    Ok(())
}
