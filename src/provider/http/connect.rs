//! Opening connections: TCP, through a proxy (forwarding or a `CONNECT` tunnel), TLS.

use std::collections::VecDeque;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::head::{self, ReadError, Target};
use super::proxy::ProxyUrl;
use super::{CONNECT_TIMEOUT, Error};

/// Any byte stream a request can go over (TCP, TLS over TCP, TLS inside a tunnel).
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// Bytes read and not yet consumed. Fixed size: a response head, a chunk-size line or a
/// trailer must fit (they are tiny); body data is handed out in pieces and never needs to.
pub const READ_BUFFER: usize = 64 * 1024;

pub struct ReadBuffer {
    data: Box<[u8]>,
    start: usize,
    end: usize,
}

impl ReadBuffer {
    fn new() -> Self {
        ReadBuffer {
            data: vec![0; READ_BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    pub fn available(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    pub fn consume(&mut self, len: usize) {
        self.start = (self.start + len).min(self.end);
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        }
    }

    /// Consumes `len` bytes and returns them (the slice is valid until the next read).
    pub fn take(&mut self, len: usize) -> &[u8] {
        let start = self.start;
        self.consume(len);
        &self.data[start..start + len]
    }

    /// The consumed bytes dropped; `false` when the buffer is full of unconsumed ones.
    fn make_room(&mut self) -> bool {
        if self.end < self.data.len() {
            return true;
        }
        if self.start == 0 {
            return false;
        }
        self.data.copy_within(self.start..self.end, 0);
        (self.start, self.end) = (0, self.end - self.start);
        true
    }
}

/// One connection and what was read from it.
pub struct Connection {
    pub io: Box<dyn Io>,
    pub buf: ReadBuffer,
}

impl Connection {
    fn new(io: Box<dyn Io>) -> Self {
        Connection {
            io,
            buf: ReadBuffer::new(),
        }
    }

    /// Whether an idle connection can carry a request: nothing arrived on it meanwhile,
    /// neither its end (the server closed it) nor bytes nobody asked for (a server's
    /// "408 Request Timeout" before it closes). Checks without waiting.
    pub fn is_idle(&mut self) -> bool {
        if !self.buf.available().is_empty() || !self.buf.make_room() {
            return false;
        }
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut read = tokio::io::ReadBuf::new(&mut self.buf.data[self.buf.end..]);
        matches!(
            std::pin::Pin::new(&mut self.io).poll_read(&mut cx, &mut read),
            std::task::Poll::Pending
        )
    }

    /// Reads once from the connection; `Ok(0)` at its end.
    pub async fn read_more(&mut self) -> std::io::Result<usize> {
        if !self.buf.make_room() {
            return Err(std::io::Error::new(
                ErrorKind::InvalidData,
                format!(
                    "a response head, chunk header or trailer is longer than {} KiB",
                    READ_BUFFER / 1024
                ),
            ));
        }
        let read = self.io.read(&mut self.buf.data[self.buf.end..]).await?;
        self.buf.end += read;
        Ok(read)
    }
}

/// rustls for HTTP/1.1 with the Mozilla roots (as reqwest's `rustls-tls` had) and `extra`.
pub fn tls_config(extra: Vec<CertificateDer<'static>>) -> Result<Arc<rustls::ClientConfig>, Error> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for cert in extra {
        roots
            .add(cert)
            .map_err(|e| Error::TlsConfig(format!("a root certificate was refused: {e}")))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::TlsConfig(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A connection ready for `target`'s request, within [`CONNECT_TIMEOUT`].
pub async fn open(
    tls: &Arc<rustls::ClientConfig>,
    target: &Target,
    proxy: Option<&ProxyUrl>,
) -> Result<Connection, Error> {
    let addr = match proxy {
        Some(proxy) => format!("{}:{} (proxy)", proxy.host, proxy.port),
        None => format!("{}:{}", target.host, target.port),
    };
    let opening = async {
        let io = match proxy {
            None => tcp(&target.host, target.port).await?,
            Some(proxy) => {
                let mut io = tcp(&proxy.host, proxy.port).await?;
                if proxy.https {
                    io = handshake(tls, io, &proxy.host).await?;
                }
                if !target.https {
                    // A plain request is forwarded by the proxy as it is (absolute form).
                    return Ok(Connection::new(io));
                }
                tunnel(io, target, proxy).await?
            }
        };
        if !target.https {
            return Ok(Connection::new(io));
        }
        handshake(tls, io, &target.host).await.map(Connection::new)
    };
    tokio::time::timeout(CONNECT_TIMEOUT, opening)
        .await
        .map_err(|_| Error::ConnectTimeout { addr })?
}

async fn tcp(host: &str, port: u16) -> Result<Box<dyn Io>, Error> {
    let failed = |source| Error::Connect {
        addr: format!("{host}:{port}"),
        source,
    };
    let addrs = tokio::net::lookup_host((host, port))
        .await
        .map_err(failed)?;
    let stream = race(interleaved(addrs.collect()), NEXT_ATTEMPT_AFTER)
        .await
        .map_err(failed)?;
    // Requests are written whole; a token's chunk should not wait for an ACK.
    stream.set_nodelay(true)?;
    Ok(Box::new(stream))
}

/// How long an address may take before the next one is tried alongside it (RFC 8305's
/// "connection attempt delay"): a host whose IPv6 route is broken still connects over IPv4
/// in a quarter second, not after the connect timeout.
const NEXT_ATTEMPT_AFTER: std::time::Duration = std::time::Duration::from_millis(250);

/// The resolver's order, alternating address families from the first one (RFC 8305 §4).
fn interleaved(addrs: Vec<SocketAddr>) -> Vec<SocketAddr> {
    let Some(first) = addrs.first() else {
        return addrs;
    };
    let first_v6 = first.is_ipv6();
    let (mut same, mut other): (VecDeque<_>, VecDeque<_>) =
        addrs.into_iter().partition(|a| a.is_ipv6() == first_v6);
    let mut out = Vec::with_capacity(same.len() + other.len());
    while let Some(addr) = same.pop_front() {
        out.push(addr);
        out.extend(other.pop_front());
    }
    out.extend(other);
    out
}

/// Connects to the first address that answers: each attempt gets `delay` alone before the next
/// starts beside it, and a failed attempt starts the next at once.
async fn race(addrs: Vec<SocketAddr>, delay: std::time::Duration) -> std::io::Result<TcpStream> {
    let mut waiting = addrs.into_iter();
    let mut attempts = FuturesUnordered::new();
    let mut last_error = None;
    loop {
        if attempts.is_empty() {
            match waiting.next() {
                Some(addr) => attempts.push(TcpStream::connect(addr)),
                None => {
                    return Err(last_error.unwrap_or_else(|| {
                        std::io::Error::new(ErrorKind::NotFound, "the name has no address")
                    }));
                }
            }
        }
        tokio::select! {
            Some(result) = attempts.next() => match result {
                Ok(stream) => return Ok(stream),
                Err(e) => {
                    last_error = Some(e);
                    attempts.extend(waiting.next().map(TcpStream::connect));
                }
            },
            () = tokio::time::sleep(delay), if waiting.len() > 0 => {
                attempts.extend(waiting.next().map(TcpStream::connect));
            }
        }
    }
}

async fn handshake(
    tls: &Arc<rustls::ClientConfig>,
    io: Box<dyn Io>,
    host: &str,
) -> Result<Box<dyn Io>, Error> {
    let name = ServerName::try_from(host.to_string()).map_err(|e| Error::Tls {
        host: host.to_string(),
        source: std::io::Error::new(ErrorKind::InvalidInput, e),
    })?;
    let connector = tokio_rustls::TlsConnector::from(tls.clone());
    let stream = connector
        .connect(name, io)
        .await
        .map_err(|source| Error::Tls {
            host: host.to_string(),
            source,
        })?;
    Ok(Box::new(stream))
}

/// Asks `proxy` for a tunnel to `target`; the proxy's answer must be `2xx`.
async fn tunnel(io: Box<dyn Io>, target: &Target, proxy: &ProxyUrl) -> Result<Box<dyn Io>, Error> {
    let failed = |why: String| Error::Proxy {
        proxy: proxy.shown(),
        why,
    };
    let mut conn = Connection::new(io);
    conn.io
        .write_all(&head::connect_request(target, proxy))
        .await
        .map_err(|e| failed(format!("cannot ask for a tunnel: {e}")))?;
    conn.io.flush().await?;
    let head = match head::read_response(&mut conn).await {
        Ok(head) => head,
        Err(ReadError::ClosedEarly) => return Err(failed("closed the connection".into())),
        Err(ReadError::Failed(e)) => return Err(failed(e.to_string())),
    };
    if !(200..300).contains(&head.status) {
        return Err(failed(format!(
            "refused the tunnel to {}:{}: {} {}",
            target.host, target.port, head.status, head.reason
        )));
    }
    if !conn.buf.available().is_empty() {
        return Err(failed("sent bytes after accepting the tunnel".into()));
    }
    Ok(conn.io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_families_alternate_from_the_first() {
        let addr = |text: &str| text.parse::<SocketAddr>().unwrap();
        let (a6, b6, c6) = (addr("[::1]:1"), addr("[::2]:1"), addr("[::3]:1"));
        let (a4, b4) = (addr("127.0.0.1:1"), addr("127.0.0.2:1"));
        assert_eq!(interleaved(vec![a6, b6, c6, a4, b4]), [a6, a4, b6, b4, c6]);
        assert_eq!(interleaved(vec![a4, a6, b4, b6]), [a4, a6, b4, b6]);
        assert_eq!(interleaved(vec![a4, b4]), [a4, b4]);
        assert_eq!(interleaved(Vec::new()), Vec::<SocketAddr>::new());
    }

    /// A refused address gives way to the next at once; the one that answers wins.
    #[tokio::test]
    async fn the_first_address_that_answers_wins() {
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let refused = closed.local_addr().unwrap();
        drop(closed);
        let open = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let answering = open.local_addr().unwrap();
        // With an hour between attempts, only the refusal can start the second one.
        let hour = std::time::Duration::from_secs(3600);
        let racing = race(vec![refused, answering], hour);
        let stream = tokio::time::timeout(std::time::Duration::from_secs(60), racing)
            .await
            .expect("the refusal started the next attempt")
            .unwrap();
        assert_eq!(stream.peer_addr().unwrap(), answering);
        let error = race(vec![refused], hour).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::ConnectionRefused);
    }
}
