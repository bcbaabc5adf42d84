//! Detecting a local Ollama, so the "no model" error can offer it.
//!
//! A plain HTTP/1.0 `GET /api/tags` over a short-timeout TCP connection: this runs once, before
//! any runtime work, and must never hang the command when nothing listens.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::EnvSource;

const TIMEOUT: Duration = Duration::from_millis(300);

/// `http://host:port` of Ollama: `OLLAMA_BASE_URL`, else `OLLAMA_HOST`, else `127.0.0.1:11434`.
pub fn host(env: &EnvSource) -> String {
    let raw = env
        .get_nonempty("OLLAMA_BASE_URL")
        .or_else(|| env.get_nonempty("OLLAMA_HOST"))
        .unwrap_or("127.0.0.1:11434")
        .trim()
        .trim_end_matches('/');
    let raw = raw.strip_suffix("/v1").unwrap_or(raw);
    if raw.contains("://") {
        raw.to_string()
    } else {
        format!("http://{raw}")
    }
}

/// The installed model names if Ollama answers at `host` (`Some(vec![])` when it answers but
/// the list cannot be read), `None` when nothing answers in time.
pub fn probe(host: &str) -> Option<Vec<String>> {
    let authority = host.strip_prefix("http://")?;
    let addr: SocketAddr = authority.to_socket_addrs().ok()?.next()?;
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT).ok()?;
    let _ = stream.set_read_timeout(Some(TIMEOUT));
    let _ = stream.set_write_timeout(Some(TIMEOUT));
    let request =
        format!("GET /api/tags HTTP/1.0\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return Some(Vec::new());
    }
    let mut response = Vec::new();
    let _ = stream.take(1 << 20).read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let names = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.get("models")?.as_array().map(|models| {
                models
                    .iter()
                    .filter_map(|m| m.get("name")?.as_str().map(str::to_string))
                    .collect()
            })
        })
        .unwrap_or_default();
    Some(names)
}
