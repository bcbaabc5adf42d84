//! Loopback servers for the connection tests: a TLS front with a certificate made by the
//! `openssl` command, an HTTP proxy, and plain servers answering whatever a test needs.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;

/// Runs `serve` for every accepted connection (with its number, from 0); the address and the
/// count of connections accepted.
pub async fn server<F, Fut>(serve: F) -> (String, Arc<AtomicUsize>)
where
    F: Fn(TcpStream, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let n = count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(serve(stream, n));
        }
    });
    (addr, accepted)
}

/// Reads one request: its head (as text) and body. `None` at the connection's end.
pub async fn read_request<S: AsyncRead + Unpin>(stream: &mut S) -> Option<(String, Vec<u8>)> {
    let mut bytes = Vec::new();
    let head_end = loop {
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let mut piece = [0u8; 4096];
        let n = stream.read(&mut piece).await.ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&piece[..n]);
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_string();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = bytes[head_end..].to_vec();
    while body.len() < length {
        let mut piece = [0u8; 4096];
        let n = stream.read(&mut piece).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&piece[..n]);
    }
    Some((head, body))
}

/// A server answering every request with `content_type` and `body` (status 200), then closing.
pub async fn answering(content_type: &'static str, body: &'static str) -> String {
    let (addr, _) = server(move |mut stream, _| async move {
        read_request(&mut stream).await;
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(answer.as_bytes()).await;
    })
    .await;
    addr
}

/// A captive portal's page.
pub const PORTAL: &str = "<html><head><title>Sign in to the hotel Wi-Fi</title></head></html>";

/// A port nobody listens on.
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A host name no resolver can resolve and glibc refuses without sending a query: a label longer
/// than DNS allows (RFC 1035: 63 octets), under `.invalid` (RFC 6761) for good measure.
pub fn unresolvable_host() -> String {
    format!("{}.invalid", "x".repeat(64))
}

/// A CA and a certificate it signed for `localhost`, 127.0.0.1 and [`PROXIED_HOST`], made with
/// the `openssl` command.
pub struct TestPki {
    dir: tempfile::TempDir,
    server: Arc<rustls::ServerConfig>,
}

/// The name the proxy tests send to the proxy: only the proxy ever resolves it.
pub const PROXIED_HOST: &str = "api.proxied.invalid";

impl TestPki {
    pub fn new() -> TestPki {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let dir = tempfile::tempdir().unwrap();
        // Each command's words are separated by single spaces.
        let run = |command: &str| {
            let status = std::process::Command::new("openssl")
                .args(command.split(' '))
                .current_dir(dir.path())
                .stderr(std::process::Stdio::null())
                .status()
                .expect("the TLS tests need the `openssl` command (Debian package openssl)");
            assert!(status.success(), "openssl {command}");
        };
        let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
        run(&format!(
            "req -x509 {ec} -keyout ca.key -out ca.pem -days 2 -subj /CN=agent-lsp-test-CA"
        ));
        run(&format!(
            "req {ec} -keyout leaf.key -out leaf.csr -subj /CN=localhost"
        ));
        std::fs::write(
            dir.path().join("ext.cnf"),
            format!(
                "subjectAltName=DNS:localhost,IP:127.0.0.1,DNS:{PROXIED_HOST}\n\
                 basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            ),
        )
        .unwrap();
        run(
            "x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem \
             -days 2 -extfile ext.cnf",
        );
        let leaf = CertificateDer::from_pem_file(dir.path().join("leaf.pem")).unwrap();
        let key = PrivateKeyDer::from_pem_file(dir.path().join("leaf.key")).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![leaf], key)
            .unwrap();
        TestPki {
            dir,
            server: Arc::new(server),
        }
    }

    /// The CA certificate (PEM), for `SSL_CERT_FILE`.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }
}

/// A TLS server on loopback in front of `upstream` (plain TCP), piping every connection's bytes
/// through; its port, and the ALPN protocols each client offered.
pub async fn tls_front(pki: &TestPki, upstream: String) -> (u16, Arc<Mutex<Vec<Vec<String>>>>) {
    let config = pki.server.clone();
    let offered = Arc::new(Mutex::new(Vec::new()));
    let log = offered.clone();
    let (addr, _) = server(move |stream, _| {
        let (config, log, upstream) = (config.clone(), log.clone(), upstream.clone());
        async move {
            let acceptor = rustls::server::Acceptor::default();
            let Ok(start) = tokio_rustls::LazyConfigAcceptor::new(acceptor, stream).await else {
                return;
            };
            let alpn = start.client_hello().alpn().map(|protocols| {
                protocols
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect()
            });
            log.lock().unwrap().push(alpn.unwrap_or_default());
            let Ok(mut tls) = start.into_stream(config).await else {
                return;
            };
            let mut plain = TcpStream::connect(&upstream).await.unwrap();
            let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
        }
    })
    .await;
    (port_of(&addr), offered)
}

pub fn port_of(addr: &str) -> u16 {
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

/// An HTTP proxy on loopback that takes every connection to `upstream` whatever it asks for:
/// a `CONNECT` is accepted and tunnelled, a forwarded request's absolute URL is cut to its path.
/// Its address, and the first request head of each connection.
pub async fn proxy(upstream: String) -> (String, Arc<Mutex<Vec<String>>>) {
    let heads = Arc::new(Mutex::new(Vec::new()));
    let log = heads.clone();
    let (addr, _) = server(move |mut stream, _| {
        let (upstream, log) = (upstream.clone(), log.clone());
        async move {
            let Some((head, body)) = read_request(&mut stream).await else {
                return;
            };
            log.lock().unwrap().push(head.clone());
            let mut origin = TcpStream::connect(&upstream).await.unwrap();
            if head.starts_with("CONNECT ") {
                let established = b"HTTP/1.1 200 Connection established\r\n\r\n";
                stream.write_all(established).await.unwrap();
            } else {
                // `POST http://host/path HTTP/1.1` → `POST /path HTTP/1.1`.
                let (line, rest) = head.split_once("\r\n").unwrap();
                let mut parts = line.split(' ');
                let (method, target) = (parts.next().unwrap(), parts.next().unwrap());
                let path = target.splitn(4, '/').nth(3).unwrap_or("");
                let request = format!("{method} /{path} HTTP/1.1\r\n{rest}");
                origin.write_all(request.as_bytes()).await.unwrap();
                origin.write_all(&body).await.unwrap();
            }
            let _ = tokio::io::copy_bidirectional(&mut stream, &mut origin).await;
        }
    })
    .await;
    (addr, heads)
}
