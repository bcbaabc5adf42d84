//! The client against real servers on loopback: framings cut at every size, kept-alive and
//! stale connections, malformed answers, proxies (forwarding and `CONNECT`), TLS with a
//! certificate made for the test.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;

/// Runs `serve` for every accepted connection (with its number, from 0); the address and the
/// count of connections accepted.
async fn server<F, Fut>(serve: F) -> (String, Arc<AtomicUsize>)
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
async fn read_request<S: AsyncReadExt + Unpin>(stream: &mut S) -> Option<(String, Vec<u8>)> {
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

/// Writes `bytes` in pieces of `size` bytes, each its own write.
async fn write_in_pieces(stream: &mut TcpStream, bytes: &[u8], size: usize) {
    for piece in bytes.chunks(size) {
        if stream.write_all(piece).await.is_err() {
            return;
        }
        stream.flush().await.unwrap();
        tokio::task::yield_now().await;
    }
}

/// The whole body, through `buffered` and `fill`.
async fn collect(response: &mut Response) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    let body = response.body();
    loop {
        match body.buffered()? {
            Buffered::Data(data) => out.extend_from_slice(data),
            Buffered::NeedRead => body.fill().await?,
            Buffered::End => return Ok(out),
        }
    }
}

/// The first piece of body data, reading as needed.
async fn first_piece(response: &mut Response) -> Vec<u8> {
    loop {
        match response.body().buffered().unwrap() {
            Buffered::Data(data) => return data.to_vec(),
            Buffered::NeedRead => response.body().fill().await.unwrap(),
            Buffered::End => panic!("the body ended before any data"),
        }
    }
}

fn client() -> Client {
    Client::with(Proxies::none(), Vec::new()).unwrap()
}

async fn post(client: &Client, url: &str) -> Result<Response, Error> {
    client.post(url, &[], b"{}").await
}

const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
    5;ext=1\r\nhello\r\n1\r\n \r\nA \r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n";

#[tokio::test]
async fn chunked_bodies_decode_whatever_the_pieces() {
    for size in [1, 2, 3, 7, 64, 4096] {
        let (addr, _) = server(move |mut stream, _| async move {
            read_request(&mut stream).await;
            write_in_pieces(&mut stream, CHUNKED, size).await;
        })
        .await;
        let mut response = post(&client(), &format!("http://{addr}/")).await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            collect(&mut response).await.unwrap(),
            b"hello 0123456789",
            "pieces of {size}"
        );
    }
}

#[tokio::test]
async fn length_and_close_delimited_bodies() {
    let (addr, _) = server(|mut stream, n| async move {
        read_request(&mut stream).await;
        let answer: &[u8] = if n == 0 {
            b"HTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nabcde"
        } else {
            b"HTTP/1.1 200 OK\r\n\r\nuntil the end"
        };
        write_in_pieces(&mut stream, answer, 3).await;
    })
    .await;
    let client = client();
    let mut first = post(&client, &format!("http://{addr}/")).await.unwrap();
    assert_eq!((first.status(), first.reason()), (201, "Created"));
    assert_eq!(collect(&mut first).await.unwrap(), b"abcde");
    // The server closed that connection after its answer: the next request opens another.
    let mut second = post(&client, &format!("http://{addr}/")).await.unwrap();
    assert_eq!(collect(&mut second).await.unwrap(), b"until the end");
}

#[tokio::test]
async fn kept_alive_connections_are_reused_and_stale_ones_replaced() {
    // Connection 0 answers two requests and then closes without saying so; later ones answer
    // one request each, keeping the connection open.
    let (addr, accepted) = server(|mut stream, n| async move {
        let requests = if n == 0 { 2 } else { 1 };
        for i in 0..requests {
            let Some((head, body)) = read_request(&mut stream).await else {
                return;
            };
            assert!(head.starts_with("POST /v1 HTTP/1.1\r\n"), "{head}");
            let text = format!(
                "conn {n} request {i} body {}",
                String::from_utf8_lossy(&body)
            );
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{text}",
                text.len()
            );
            stream.write_all(answer.as_bytes()).await.unwrap();
        }
        if n > 0 {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        }
    })
    .await;
    let client = client();
    let url = format!("http://{addr}/v1");
    let mut texts = Vec::new();
    for _ in 0..3 {
        let mut response = post(&client, &url).await.unwrap();
        texts.push(String::from_utf8(collect(&mut response).await.unwrap()).unwrap());
        assert_eq!(
            client.inner.pool.idle_count(),
            1,
            "the connection went back to the pool"
        );
        // Let connection 0's close arrive before the third request.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        texts,
        [
            "conn 0 request 0 body {}",
            "conn 0 request 1 body {}",
            "conn 1 request 0 body {}"
        ]
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_body_dropped_early_closes_its_connection() {
    let (addr, accepted) = server(|mut stream, _| async move {
        while read_request(&mut stream).await.is_some() {
            let head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            if stream.write_all(b"56789").await.is_err() {
                return;
            }
        }
    })
    .await;
    let client = client();
    let mut response = post(&client, &format!("http://{addr}/")).await.unwrap();
    assert_eq!(first_piece(&mut response).await, b"01234");
    drop(response);
    assert_eq!(client.inner.pool.idle_count(), 0);
    let mut response = post(&client, &format!("http://{addr}/")).await.unwrap();
    assert_eq!(collect(&mut response).await.unwrap(), b"0123456789");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    assert_eq!(client.inner.pool.idle_count(), 1);
}

/// Reads a request and answers "answer from `n`" (kept alive); `false` at the connection's end.
async fn answer_numbered(stream: &mut TcpStream, n: usize) -> bool {
    if read_request(stream).await.is_none() {
        return false;
    }
    let text = format!("answer from {n}");
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{text}",
        text.len()
    );
    stream.write_all(answer.as_bytes()).await.is_ok()
}

#[tokio::test]
async fn idle_connections_that_heard_from_the_server_are_not_reused() {
    // Connection 0 answers once, then says "408" while idle (as servers do before closing an
    // idle connection) and stays open; connection 1 answers normally.
    let (addr, accepted) = server(|mut stream, n| async move {
        if !answer_numbered(&mut stream, n).await {
            return;
        }
        if n == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            let timeout = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n";
            stream.write_all(timeout).await.unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    })
    .await;
    let client = client();
    let url = format!("http://{addr}/");
    let mut first = post(&client, &url).await.unwrap();
    assert_eq!(collect(&mut first).await.unwrap(), b"answer from 0");
    tokio::time::sleep(std::time::Duration::from_millis(60)).await;
    let mut second = post(&client, &url).await.unwrap();
    assert_eq!(second.status(), 200);
    assert_eq!(collect(&mut second).await.unwrap(), b"answer from 1");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_connection_closed_as_the_request_arrives_is_replaced_once() {
    // Connection 0 answers once, then reads the next request and closes without a byte.
    let (addr, accepted) = server(|mut stream, n| async move {
        if !answer_numbered(&mut stream, n).await {
            return;
        }
        if n == 0 {
            read_request(&mut stream).await;
        } else {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        }
    })
    .await;
    let client = client();
    let url = format!("http://{addr}/");
    let mut first = post(&client, &url).await.unwrap();
    assert_eq!(collect(&mut first).await.unwrap(), b"answer from 0");
    let mut second = post(&client, &url).await.unwrap();
    assert_eq!(collect(&mut second).await.unwrap(), b"answer from 1");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_body_already_read_to_its_end_frees_its_connection_without_waiting() {
    let (addr, _) = server(|mut stream, _| async move {
        read_request(&mut stream).await;
        let answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nlast\r\n0\r\n\r\n";
        stream.write_all(answer).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    })
    .await;
    let client = client();
    let mut response = post(&client, &format!("http://{addr}/")).await.unwrap();
    // The last event is read; the chunked body's end is still unconsumed in the buffer.
    assert_eq!(first_piece(&mut response).await, b"last");
    while client.inner.pool.idle_count() == 0 {
        response.body().skip_buffered();
        if client.inner.pool.idle_count() == 0 {
            response.body().fill().await.unwrap();
        }
    }
    assert!(matches!(response.body().buffered().unwrap(), Buffered::End));
}

/// Answers every connection with `answer`, then closes it.
async fn answering(answer: &'static [u8]) -> String {
    server(move |mut stream, _| async move {
        read_request(&mut stream).await;
        let _ = stream.write_all(answer).await;
    })
    .await
    .0
}

#[tokio::test]
async fn malformed_answers_are_clear_errors() {
    let client = client();
    let head_errors: [(&[u8], &str); 3] = [
        (
            b"HTTP/1.1 2x0 OK\r\n\r\n",
            "malformed response: bad response head",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            "conflicting Content-Length",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            "bad Content-Length \"x\"",
        ),
    ];
    for (answer, expected) in head_errors {
        let addr = answering(answer).await;
        let error = post(&client, &format!("http://{addr}/"))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains(expected), "{error}");
    }
    let body_errors: [(&[u8], &str); 4] = [
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabc",
            "closed before the body ended",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc",
            "closed before the body ended",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "bad chunk size \"zz\"",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
            "chunk data longer than its size",
        ),
    ];
    for (answer, expected) in body_errors {
        let addr = answering(answer).await;
        let mut response = post(&client, &format!("http://{addr}/")).await.unwrap();
        let error = collect(&mut response).await.unwrap_err().to_string();
        assert!(error.contains(expected), "{error}");
    }
    let huge: &'static [u8] = format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\n\r\n", "a".repeat(70_000))
        .into_bytes()
        .leak();
    let addr = answering(huge).await;
    let error = post(&client, &format!("http://{addr}/"))
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("longer than 64 KiB"), "{error}");
    let addr = answering(b"").await;
    let error = post(&client, &format!("http://{addr}/"))
        .await
        .err()
        .unwrap();
    assert!(matches!(error, Error::ClosedBeforeResponse), "{error}");
    let refused = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = refused.local_addr().unwrap().port();
    drop(refused);
    let error = post(&client, &format!("http://127.0.0.1:{port}/"))
        .await
        .err()
        .unwrap();
    assert!(error.to_string().contains("onnection refused"), "{error}");
    let error = client
        .post("http://127.0.0.1:1/", &[("a\nb".into(), "c".into())], b"")
        .await;
    assert!(matches!(error, Err(Error::Header { .. })));
}

#[tokio::test]
async fn plain_requests_go_through_an_http_proxy_in_absolute_form() {
    let (proxy, _) = server(|mut stream, _| async move {
        let (head, _) = read_request(&mut stream).await.unwrap();
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{head}",
            head.len()
        );
        stream.write_all(answer.as_bytes()).await.unwrap();
    })
    .await;
    let proxies = Proxies::from_vars(|name| {
        (name == "HTTP_PROXY").then(|| format!("http://me:secret@{proxy}"))
    })
    .proxying_loopback();
    let client = Client::with(proxies, Vec::new()).unwrap();
    let mut response = post(&client, "http://127.0.0.1:9/v1/chat?q=1")
        .await
        .unwrap();
    let seen = String::from_utf8(collect(&mut response).await.unwrap()).unwrap();
    assert!(
        seen.starts_with("POST http://127.0.0.1:9/v1/chat?q=1 HTTP/1.1\r\n"),
        "{seen}"
    );
    assert!(
        seen.contains("proxy-authorization: Basic bWU6c2VjcmV0\r\n"),
        "{seen}"
    );
}

/// A CA and a `localhost` certificate it signed, made with the `openssl` command.
struct TestPki {
    ca: rustls::pki_types::CertificateDer<'static>,
    server: Arc<rustls::ServerConfig>,
    _dir: tempfile::TempDir,
}

fn test_pki() -> TestPki {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let status = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("the TLS tests need the `openssl` command (Debian package openssl)");
        assert!(status.success(), "openssl {args:?}");
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    run(&[
        &["req", "-x509"],
        &ec[..],
        &[
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=agent-lsp test CA",
        ],
    ]
    .concat());
    run(&[
        &["req"],
        &ec[..],
        &[
            "-keyout",
            "leaf.key",
            "-out",
            "leaf.csr",
            "-subj",
            "/CN=localhost",
        ],
    ]
    .concat());
    std::fs::write(
        dir.path().join("ext.cnf"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "leaf.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]);
    let path = |name: &str| dir.path().join(name);
    let ca = CertificateDer::from_pem_file(path("ca.pem")).unwrap();
    let leaf = CertificateDer::from_pem_file(path("leaf.pem")).unwrap();
    let key = PrivateKeyDer::from_pem_file(path("leaf.key")).unwrap();
    let server = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![leaf], key)
    .unwrap();
    TestPki {
        ca,
        server: Arc::new(server),
        _dir: dir,
    }
}

/// An HTTPS server answering each request with its head, on `localhost`.
async fn https_server(pki: &TestPki) -> String {
    let acceptor = tokio_rustls::TlsAcceptor::from(pki.server.clone());
    server(move |stream, _| {
        let acceptor = acceptor.clone();
        async move {
            let Ok(mut tls) = acceptor.accept(stream).await else {
                return;
            };
            while let Some((head, _)) = read_request(&mut tls).await {
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{head}",
                    head.len()
                );
                tls.write_all(answer.as_bytes()).await.unwrap();
                tls.flush().await.unwrap();
            }
        }
    })
    .await
    .0
}

fn port_of(addr: &str) -> u16 {
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn https_checks_the_certificate() {
    let pki = test_pki();
    let addr = https_server(&pki).await;
    let url = format!("https://localhost:{}/v1", port_of(&addr));
    let trusting = Client::with(Proxies::none(), vec![pki.ca.clone()]).unwrap();
    for _ in 0..2 {
        let mut response = post(&trusting, &url).await.unwrap();
        let seen = String::from_utf8(collect(&mut response).await.unwrap()).unwrap();
        assert!(
            seen.starts_with("POST /v1 HTTP/1.1\r\nhost: localhost:"),
            "{seen}"
        );
    }
    let error = post(&client(), &url).await.err().unwrap().to_string();
    assert!(
        error.starts_with("TLS handshake with localhost failed") && error.contains("UnknownIssuer"),
        "{error}"
    );
}

#[tokio::test]
async fn https_is_tunnelled_through_connect() {
    let pki = test_pki();
    let origin = https_server(&pki).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let (proxy, _) = server(move |mut stream, _| {
        let (origin, log) = (origin.clone(), log.clone());
        async move {
            let (head, _) = read_request(&mut stream).await.unwrap();
            log.lock().unwrap().push(head.clone());
            if head.contains("forbidden") {
                stream
                    .write_all(b"HTTP/1.1 403 Forbidden\r\n\r\n")
                    .await
                    .unwrap();
                return;
            }
            let mut upstream = TcpStream::connect(&origin).await.unwrap();
            stream
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .unwrap();
            let _ = tokio::io::copy_bidirectional(&mut stream, &mut upstream).await;
        }
    })
    .await;
    let proxies = Proxies::from_vars(|name| (name == "HTTPS_PROXY").then(|| proxy.clone()))
        .proxying_loopback();
    let client = Client::with(proxies, vec![pki.ca.clone()]).unwrap();
    // The proxy connects to its one origin whatever the tunnel asks for: the URL's port only
    // has to appear in the `CONNECT` line.
    let mut response = post(&client, "https://localhost:4443/v1").await.unwrap();
    let head = String::from_utf8(collect(&mut response).await.unwrap()).unwrap();
    assert!(
        head.starts_with("POST /v1 HTTP/1.1\r\nhost: localhost:4443\r\n"),
        "{head}"
    );
    let connect = seen.lock().unwrap()[0].clone();
    assert!(
        connect.starts_with("CONNECT localhost:4443 HTTP/1.1\r\n"),
        "{connect}"
    );
    let error = post(&client, "https://forbidden:1/")
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("refused the tunnel to forbidden:1: 403 Forbidden"),
        "{error}"
    );
}
