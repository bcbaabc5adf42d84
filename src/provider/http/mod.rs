//! The streaming HTTP/1.1 client the providers send their requests with.
//!
//! Why our own: a model's answer arrives as one small HTTP chunk per token, and through hyper
//! (under reqwest) every chunk is handed from the connection task to the body's reader through
//! a one-slot channel, a task switch and a waker registration per token (a third of
//! agent-lsp's CPU for a fast stream; BENCH.md, scenario 2). Here the reader decodes the body
//! straight out of the connection's read buffer ([`Body::buffered`]), and only touches the
//! socket when the buffer is empty ([`Body::fill`]): one read serves hundreds of tokens.
//!
//! What it does: `POST` with a complete body (the only request a provider makes), `http` and
//! `https` (rustls with the Mozilla roots, HTTP/1.1 by ALPN), a host's addresses tried as
//! RFC 8305 says (families alternating, the next one 250 ms after the last: a broken IPv6
//! route costs a quarter second, not the connect timeout), the system proxy settings
//! (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`, as curl and reqwest read them; an
//! `https` target is tunnelled with `CONNECT`), keep-alive connections reused across requests
//! (a turn's next request skips the TCP and TLS handshakes), and every body framing of
//! RFC 9112 §6 (length, chunked, until close). Malformed responses are errors, never panics.

mod body;
mod connect;
mod head;
mod pool;
mod proxy;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

pub use body::{Body, Buffered};
pub use proxy::Proxies;

use connect::Connection;
use head::Target;
use pool::Pool;

/// How long connecting may take (TCP, the proxy's tunnel and TLS together).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a request failed. The texts name what went wrong and where, for the user.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid URL {url:?}: {why}")]
    Url { url: String, why: String },
    #[error("invalid request header {name:?}: {why}")]
    Header { name: String, why: &'static str },
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: String,
        source: std::io::Error,
    },
    #[error("connecting to {addr} timed out after {} s", CONNECT_TIMEOUT.as_secs())]
    ConnectTimeout { addr: String },
    #[error("TLS handshake with {host} failed: {source}")]
    Tls {
        host: String,
        source: std::io::Error,
    },
    #[error("proxy {proxy}: {why}")]
    Proxy { proxy: String, why: String },
    #[error("cannot set up TLS: {0}")]
    TlsConfig(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("malformed response: {0}")]
    Protocol(String),
    #[error("the server closed the connection before responding")]
    ClosedBeforeResponse,
}

/// Cheap to clone: clones share the connection pool.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    tls: Arc<rustls::ClientConfig>,
    proxies: Proxies,
    pool: Pool,
}

impl Client {
    /// A client with the Mozilla root certificates and the proxies of the environment.
    pub fn new() -> Result<Client, Error> {
        Client::with(Proxies::from_env(), Vec::new())
    }

    /// A client with the given proxies, trusting `extra_roots` (DER) besides the Mozilla roots.
    pub fn with(
        proxies: Proxies,
        extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    ) -> Result<Client, Error> {
        Ok(Client {
            inner: Arc::new(Inner {
                tls: connect::tls_config(extra_roots)?,
                proxies,
                pool: Pool::default(),
            }),
        })
    }

    /// Sends `POST url` with `headers` and `body`; resolves once the response head arrived.
    /// A kept-alive connection the server has meanwhile closed is replaced transparently (the
    /// request never reached the server).
    pub async fn post(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Response, Error> {
        let target = Target::parse(url)?;
        let proxy = self.inner.proxies.for_target(&target)?;
        let key = pool::key(&target, proxy);
        let request = head::request(&target, proxy, headers, body.len())?;
        if let Some(conn) = self.inner.pool.take(&key) {
            match self.exchange(conn, &key, &request, body).await {
                Ok(response) => return Ok(response),
                // Closed while idle: the server never saw this request; use a new connection.
                Err(Exchange::Stale) => {}
                Err(Exchange::Failed(error)) => return Err(error),
            }
        }
        let conn = connect::open(&self.inner.tls, &target, proxy).await?;
        match self.exchange(conn, &key, &request, body).await {
            Ok(response) => Ok(response),
            Err(Exchange::Stale) => Err(Error::ClosedBeforeResponse),
            Err(Exchange::Failed(error)) => Err(error),
        }
    }

    async fn exchange(
        &self,
        mut conn: Connection,
        key: &str,
        request: &[u8],
        body: &[u8],
    ) -> Result<Response, Exchange> {
        let written = async {
            conn.io.write_all(request).await?;
            conn.io.write_all(body).await?;
            conn.io.flush().await
        };
        if written.await.is_err() {
            // A write fails only on a connection the server closed (or reset) before reading.
            return Err(Exchange::Stale);
        }
        let head = match head::read_response(&mut conn).await {
            Ok(head) => head,
            Err(head::ReadError::ClosedEarly) => return Err(Exchange::Stale),
            Err(head::ReadError::Failed(error)) => return Err(Exchange::Failed(error)),
        };
        let framing = body::Framing::of(&head).map_err(Exchange::Failed)?;
        let reuse = head.keep_alive.then(|| pool::Return {
            pool: self.inner.pool.clone(),
            key: key.to_string(),
        });
        Ok(Response {
            status: head.status,
            reason: head.reason,
            headers: head.headers,
            body: Body::new(conn, framing, reuse),
        })
    }
}

/// How one attempt on a connection ended without a response.
enum Exchange {
    /// The connection was closed before the server read the request.
    Stale,
    Failed(Error),
}

/// A response whose head has arrived; the body streams from [`Response::body`].
pub struct Response {
    status: u16,
    reason: String,
    headers: Vec<(String, String)>,
    body: Body,
}

impl Response {
    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The reason phrase the server sent (may be empty).
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn body(&mut self) -> &mut Body {
        &mut self.body
    }

    /// The whole body as text (invalid UTF-8 replaced), at most `limit` bytes of it.
    pub async fn text(mut self, limit: usize) -> Result<String, Error> {
        let mut bytes = Vec::new();
        loop {
            match self.body.buffered()? {
                Buffered::Data(data) => {
                    let room = limit.saturating_sub(bytes.len());
                    bytes.extend_from_slice(&data[..data.len().min(room)]);
                    if bytes.len() >= limit {
                        break;
                    }
                }
                Buffered::NeedRead => self.body.fill().await?,
                Buffered::End => break,
            }
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// The standard reason phrase of a status code, for messages (servers may send none).
pub fn canonical_reason(status: u16) -> Option<&'static str> {
    Some(match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => return None,
    })
}
