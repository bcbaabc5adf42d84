//! The network allowlist (`sandboxNetwork: ["crates.io", "*.npmjs.org"]`): the command's only
//! route out is this proxy, which the daemon runs on a Unix socket in a folder of its own and
//! the jail's init relays to from `127.0.0.1:3128` inside the command's network namespace.
//!
//! It speaks what `HTTP(S)_PROXY` clients send: `CONNECT host:port` (HTTPS, git, anything
//! tunnelled; the TLS stays end to end) and absolute-form plain HTTP requests. A host is
//! allowed when it equals an allowed domain, or is a subdomain of a `*.domain` entry; the
//! address it resolves to must not be loopback or link-local (cloud metadata) unless the entry
//! names that address or `localhost` itself, so an allowed name cannot be pointed at the
//! user's own services. Refusals get `403` with a body saying why, and are kept for
//! `agent/getState` (`refusedHosts`). When the daemon itself has `HTTPS_PROXY`/`HTTP_PROXY`,
//! allowed connections go through it.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

use super::SandboxError;

/// The longest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// How many refused hosts are remembered for the status.
const MAX_REFUSED: usize = 50;

/// A session's proxy: started by the first command that needs it, with the allowlist of the
/// latest command (a changed setting applies from the next connection on).
#[derive(Debug)]
pub struct SessionProxy {
    dir: PathBuf,
    shared: Arc<Shared>,
    running: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

#[derive(Debug, Default)]
struct Shared {
    allowed: Mutex<Vec<String>>,
    refused: Mutex<Vec<String>>,
}

impl Shared {
    fn note_refused(&self, entry: String) {
        let mut refused = lock(&self.refused);
        if !refused.contains(&entry) {
            if refused.len() == MAX_REFUSED {
                refused.remove(0);
            }
            refused.push(entry);
        }
    }
}

impl SessionProxy {
    pub fn new(dir: PathBuf) -> Self {
        SessionProxy {
            dir,
            shared: Arc::default(),
            running: Mutex::new(None),
        }
    }

    /// The socket for a command allowed to reach `domains`, starting the proxy if needed.
    pub fn ensure(&self, domains: &[String]) -> Result<PathBuf, SandboxError> {
        *lock(&self.shared.allowed) = domains.to_vec();
        let socket = self.dir.join("proxy.sock");
        let mut running = lock(&self.running);
        if running.as_ref().is_some_and(|task| !task.is_finished()) {
            return Ok(socket);
        }
        let prepare = |e: std::io::Error| {
            SandboxError::Prepare(format!("the network proxy could not start: {e}"))
        };
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)
                .map_err(prepare)?;
        }
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).map_err(prepare)?;
        let shared = self.shared.clone();
        *running = Some(tokio::spawn(serve(listener, shared)));
        Ok(socket)
    }

    /// The hosts refused so far (latest last).
    pub fn refused(&self) -> Vec<String> {
        lock(&self.shared.refused).clone()
    }
}

impl Drop for SessionProxy {
    fn drop(&mut self) {
        if let Some(task) = lock(&self.running).take() {
            task.abort();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

async fn serve(listener: UnixListener, shared: Arc<Shared>) {
    while let Ok((conn, _)) = listener.accept().await {
        let shared = shared.clone();
        tokio::spawn(async move {
            if let Err(e) = handle(conn, &shared).await {
                tracing::debug!(%e, "sandbox proxy connection ended");
            }
        });
    }
}

/// One request from the command.
struct Request {
    /// `CONNECT` (a tunnel) or a plain HTTP request to forward.
    tunnel: bool,
    host: String,
    port: u16,
    /// For a plain request: the head to send upstream (origin-form, `Connection: close`).
    head: Vec<u8>,
    /// Bytes read past the head (a body's start).
    rest: Vec<u8>,
}

async fn handle(mut conn: UnixStream, shared: &Shared) -> std::io::Result<()> {
    let (buf, head_len) = read_head(&mut conn).await?;
    let request = match parse(&buf[..head_len]) {
        Ok(mut r) => {
            r.rest = buf[head_len..].to_vec();
            r
        }
        Err(why) => return reply(&mut conn, 400, &why).await,
    };
    let allowed = lock(&shared.allowed).clone();
    let target = match decide(&request.host, request.port, &allowed).await {
        Ok(addr) => addr,
        Err(why) => {
            shared.note_refused(format!("{}:{}", request.host, request.port));
            tracing::info!(host = %request.host, port = request.port, %why, "sandbox proxy refused");
            return reply(
                &mut conn,
                403,
                &format!(
                    "{}:{} is blocked by the sandbox's network allowlist ({why})",
                    request.host, request.port
                ),
            )
            .await;
        }
    };
    let mut upstream = match connect(&request, target).await {
        Ok(stream) => stream,
        Err(e) => {
            return reply(
                &mut conn,
                502,
                &format!("cannot reach {}: {e}", request.host),
            )
            .await;
        }
    };
    if request.tunnel {
        conn.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
    } else {
        upstream.write_all(&request.head).await?;
    }
    upstream.write_all(&request.rest).await?;
    tokio::io::copy_bidirectional(&mut conn, &mut upstream).await?;
    Ok(())
}

async fn read_head(conn: &mut UnixStream) -> std::io::Result<(Vec<u8>, usize)> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(at) = memchr::memmem::find(&buf, b"\r\n\r\n") {
            return Ok((buf, at + 4));
        }
        if buf.len() > MAX_HEAD {
            return Err(std::io::Error::other("request head too long"));
        }
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn parse(head: &[u8]) -> Result<Request, String> {
    let mut headers = [httparse::EMPTY_HEADER; 100];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err("not an HTTP proxy request".into()),
    }
    let method = req.method.unwrap_or_default();
    let target = req.path.unwrap_or_default();
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_host_port(target, 443)?;
        return Ok(Request {
            tunnel: true,
            host,
            port,
            head: Vec::new(),
            rest: Vec::new(),
        });
    }
    let rest = target
        .strip_prefix("http://")
        .ok_or("only CONNECT and http:// requests go through the sandbox's proxy")?;
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, "/"),
    };
    let (host, port) = split_host_port(authority, 80)?;
    let mut out = format!("{method} {path} HTTP/1.1\r\n").into_bytes();
    for h in req.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if [
            "connection",
            "proxy-connection",
            "proxy-authorization",
            "keep-alive",
        ]
        .contains(&name.as_str())
        {
            continue;
        }
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Request {
        tunnel: false,
        host,
        port,
        head: out,
        rest: Vec::new(),
    })
}

fn split_host_port(authority: &str, default_port: u16) -> Result<(String, u16), String> {
    let bad = || format!("bad host in the request: {authority}");
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']').ok_or_else(bad)?;
            (host, after.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    let port = match port {
        Some(p) => p.parse().map_err(|_| bad())?,
        None => default_port,
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host, port))
}

/// Whether `host` is allowed, and where to connect: refused with the reason otherwise.
async fn decide(host: &str, port: u16, allowed: &[String]) -> Result<SocketAddr, String> {
    let entry = allowed
        .iter()
        .find(|d| matches_domain(host, d))
        .ok_or("the host is not allowed")?;
    let addrs = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("the host does not resolve: {e}"))?;
    pick(host, entry, addrs)
}

/// The address to connect to: a loopback or link-local one only when the entry names that
/// address (or `localhost`) itself.
fn pick(
    host: &str,
    entry: &str,
    addrs: impl IntoIterator<Item = SocketAddr>,
) -> Result<SocketAddr, String> {
    let named_literally = entry == host && (host == "localhost" || host.parse::<IpAddr>().is_ok());
    addrs
        .into_iter()
        .find(|a| named_literally || !is_local(a.ip()))
        .ok_or_else(|| "it resolves to a loopback or link-local address".into())
}

fn matches_domain(host: &str, domain: &str) -> bool {
    match domain.strip_prefix("*.") {
        Some(parent) => host.len() > parent.len() + 1 && host.ends_with(&format!(".{parent}")),
        None => host == domain,
    }
}

/// Loopback, link-local (cloud metadata at 169.254.169.254) and unspecified addresses.
fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_link_local() || v4.is_unspecified(),
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_local(IpAddr::V4(v4)))
        }
    }
}

/// Connects to `target`, through the daemon's own proxy when it has one for this host.
async fn connect(request: &Request, target: SocketAddr) -> std::io::Result<TcpStream> {
    match upstream_proxy(&request.host, request.tunnel) {
        Some(proxy) => {
            let mut stream = TcpStream::connect(&proxy).await?;
            if request.tunnel {
                let line = format!(
                    "CONNECT {0}:{1} HTTP/1.1\r\nHost: {0}:{1}\r\n\r\n",
                    request.host, request.port
                );
                stream.write_all(line.as_bytes()).await?;
                expect_established(&mut stream).await?;
            }
            Ok(stream)
        }
        None => TcpStream::connect(target).await,
    }
}

/// `host:port` of the proxy the daemon's environment names for this request, unless
/// `NO_PROXY` exempts the host.
fn upstream_proxy(host: &str, tunnel: bool) -> Option<String> {
    let var = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()))
    };
    let url = match tunnel {
        true => var(&["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]),
        false => var(&["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]),
    }?;
    let exempt = var(&["NO_PROXY", "no_proxy"]).is_some_and(|list| {
        list.split(',').map(str::trim).any(|e| {
            e == "*"
                || host == e.trim_start_matches('.')
                || host.ends_with(&format!(".{}", e.trim_start_matches('.')))
        })
    });
    if exempt {
        return None;
    }
    let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    Some(match authority.contains(':') {
        true => authority.to_string(),
        false => format!("{authority}:80"),
    })
}

async fn expect_established(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if buf.len() > MAX_HEAD || stream.read(&mut byte).await? == 0 {
            return Err(std::io::Error::other(
                "the upstream proxy closed the tunnel",
            ));
        }
        buf.push(byte[0]);
    }
    let status = buf.split(|b| *b == b' ').nth(1).unwrap_or_default();
    match status.starts_with(b"2") {
        true => Ok(()),
        false => Err(std::io::Error::other(format!(
            "the upstream proxy refused: {}",
            String::from_utf8_lossy(buf.split(|b| *b == b'\r').next().unwrap_or_default())
        ))),
    }
}

async fn reply(conn: &mut UnixStream, status: u16, message: &str) -> std::io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        _ => "Bad Gateway",
    };
    let body = format!("{message}\n");
    let text = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nX-Proxy-Error: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        match status {
            403 => "blocked-by-allowlist",
            _ => "proxy-error",
        },
        body.len()
    );
    conn.write_all(text.as_bytes()).await?;
    conn.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_match_exactly_or_as_subdomains_of_a_wildcard() {
        assert!(matches_domain("crates.io", "crates.io"));
        assert!(!matches_domain("static.crates.io", "crates.io"));
        assert!(matches_domain("registry.npmjs.org", "*.npmjs.org"));
        assert!(!matches_domain("npmjs.org", "*.npmjs.org"));
        assert!(!matches_domain("evilnpmjs.org", "*.npmjs.org"));
    }

    #[test]
    fn a_name_that_resolves_to_the_users_machine_is_refused_unless_named_so() {
        let lo: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let metadata: SocketAddr = "169.254.169.254:80".parse().unwrap();
        let public: SocketAddr = "93.184.215.14:80".parse().unwrap();
        assert!(pick("evil.example", "*.example", [lo]).is_err());
        assert!(pick("evil.example", "*.example", [metadata]).is_err());
        assert_eq!(pick("evil.example", "*.example", [lo, public]), Ok(public));
        assert_eq!(pick("localhost", "localhost", [lo]), Ok(lo));
        assert_eq!(pick("127.0.0.1", "127.0.0.1", [lo]), Ok(lo));
    }

    #[test]
    fn loopback_and_link_local_are_local() {
        for ip in [
            "127.0.0.1",
            "169.254.169.254",
            "::1",
            "fe80::1",
            "0.0.0.0",
            "::ffff:127.0.0.1",
        ] {
            assert!(
                is_local(ip.parse().unwrap_or(IpAddr::from([8, 8, 8, 8]))),
                "{ip}"
            );
        }
        assert!(!is_local(
            "10.0.0.1".parse().unwrap_or(IpAddr::from([127, 0, 0, 1]))
        ));
    }

    #[test]
    fn requests_parse_as_tunnels_or_origin_form_requests() {
        let t = parse(b"CONNECT crates.io:443 HTTP/1.1\r\nHost: crates.io\r\n\r\n");
        assert!(
            t.as_ref()
                .is_ok_and(|r| r.tunnel && r.host == "crates.io" && r.port == 443)
        );
        let p = parse(b"GET http://Example.com:8080/a?b HTTP/1.1\r\nHost: example.com\r\nProxy-Connection: keep-alive\r\n\r\n");
        let p = p.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (p.host.as_str(), p.port, p.tunnel),
            ("example.com", 8080, false)
        );
        let head = String::from_utf8_lossy(&p.head).into_owned();
        assert!(head.starts_with("GET /a?b HTTP/1.1\r\n"), "{head}");
        assert!(!head.contains("Proxy-Connection") && head.ends_with("Connection: close\r\n\r\n"));
        assert!(parse(b"GET https://x/ HTTP/1.1\r\n\r\n").is_err());
    }
}
