//! Request heads out, response heads in (RFC 9112 §3, §4).

use std::io::ErrorKind;

use super::Error;
use super::connect::Connection;
use super::proxy::{ProxyUrl, basic_credentials};

/// Most response header fields we accept (a model API sends about twenty).
const MAX_HEADERS: usize = 128;

/// Where a request goes, from its URL.
#[derive(Debug)]
pub struct Target {
    pub https: bool,
    /// For connecting and for TLS: a name or an address, without brackets.
    pub host: String,
    pub port: u16,
    /// The `Host` header: the host as written (brackets kept), the port only when given.
    pub authority: String,
    /// Path and query (origin form).
    pub path: String,
    /// `Authorization` from `user:password@` in the URL, as browsers and curl send it.
    pub credentials: Option<String>,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, Error> {
        let invalid = |why: String| Error::Url {
            url: url.to_string(),
            why,
        };
        let parsed = url::Url::parse(url).map_err(|e| invalid(e.to_string()))?;
        let https = match parsed.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(invalid(format!(
                    "unsupported scheme {other:?} (http or https)"
                )));
            }
        };
        let host = host_of(&parsed).ok_or_else(|| invalid("no host".into()))?;
        let written = parsed.host_str().unwrap_or_default();
        let authority = match parsed.port() {
            Some(port) => format!("{written}:{port}"),
            None => written.to_string(),
        };
        let mut path = parsed.path().to_string();
        if let Some(query) = parsed.query() {
            path.push('?');
            path.push_str(query);
        }
        Ok(Target {
            https,
            host,
            port: parsed
                .port_or_known_default()
                .unwrap_or(if https { 443 } else { 80 }),
            authority,
            path,
            credentials: basic_credentials(&parsed),
        })
    }

    /// `scheme://authority`.
    pub fn origin(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.authority)
    }
}

/// A URL's host for connecting and for TLS: a name or an address, without brackets.
pub fn host_of(url: &url::Url) -> Option<String> {
    Some(match url.host()? {
        url::Host::Domain(name) => name.to_string(),
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => ip.to_string(),
    })
}

/// The head of `POST target` with `headers` and a body of `body_len` bytes. Framing headers
/// (`Host`, `Content-Length`, `Transfer-Encoding`, `Connection`) are ours: given ones are
/// dropped. Through a proxy, a plain `http` request names its whole URL (absolute form).
pub fn request(
    target: &Target,
    proxy: Option<&ProxyUrl>,
    headers: &[(String, String)],
    body_len: usize,
) -> Result<Vec<u8>, Error> {
    let forwarded = proxy.filter(|_| !target.https);
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(b"POST ");
    if forwarded.is_some() {
        out.extend_from_slice(target.origin().as_bytes());
    }
    out.extend_from_slice(target.path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(target.authority.as_bytes());
    out.extend_from_slice(b"\r\n");
    let has = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    if !has("accept") {
        line(&mut out, "accept", "*/*");
    }
    if let Some(credentials) = target
        .credentials
        .as_deref()
        .filter(|_| !has("authorization"))
    {
        line(&mut out, "authorization", credentials);
    }
    if let Some(credentials) = forwarded.and_then(|p| p.credentials.as_deref()) {
        line(&mut out, "proxy-authorization", credentials);
    }
    for (name, value) in headers {
        check_header(name, value)?;
        let framing = ["host", "content-length", "transfer-encoding", "connection"];
        if !framing.iter().any(|f| name.eq_ignore_ascii_case(f)) {
            line(&mut out, name, value);
        }
    }
    out.extend_from_slice(format!("content-length: {body_len}\r\n\r\n").as_bytes());
    Ok(out)
}

/// `CONNECT host:port` for a tunnel to `target` through `proxy`.
pub fn connect_request(target: &Target, proxy: &ProxyUrl) -> Vec<u8> {
    let authority = format!("{}:{}", bracketed(&target.host), target.port);
    let mut out = format!("CONNECT {authority} HTTP/1.1\r\nhost: {authority}\r\n").into_bytes();
    if let Some(credentials) = &proxy.credentials {
        line(&mut out, "proxy-authorization", credentials);
    }
    out.extend_from_slice(b"\r\n");
    out
}

fn bracketed(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

fn line(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// A field name is a token; a value has no line breaks or NULs (they would split the head).
fn check_header(name: &str, value: &str) -> Result<(), Error> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    let why = if name.is_empty() || !name.bytes().all(token) {
        "not a valid field name"
    } else if value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
        "the value contains a line break or NUL"
    } else {
        return Ok(());
    };
    Err(Error::Header {
        name: name.to_string(),
        why,
    })
}

/// A response's status line and fields.
#[derive(Debug)]
pub struct ResponseHead {
    pub status: u16,
    pub reason: String,
    pub headers: Vec<(String, String)>,
    /// HTTP/1.1 without `Connection: close`: the connection may carry the next request.
    pub keep_alive: bool,
}

impl ResponseHead {
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why no response head was read.
pub enum ReadError {
    /// The connection ended (or was reset) before any byte of a response.
    ClosedEarly,
    Failed(Error),
}

/// Reads the final response head (skipping `1xx` interim responses).
pub async fn read_response(conn: &mut Connection) -> Result<ResponseHead, ReadError> {
    let mut received = false;
    loop {
        if !conn.buf.available().is_empty() {
            match parse(conn.buf.available()) {
                Ok(Some((head, len))) => {
                    conn.buf.consume(len);
                    if (100..200).contains(&head.status) && head.status != 101 {
                        continue;
                    }
                    return Ok(head);
                }
                Ok(None) => {}
                Err(error) => return Err(ReadError::Failed(error)),
            }
        }
        match conn.read_more().await {
            Ok(0) if !received => return Err(ReadError::ClosedEarly),
            Ok(0) => {
                return Err(ReadError::Failed(Error::Protocol(
                    "the connection closed inside the response head".into(),
                )));
            }
            Ok(_) => received = true,
            Err(e) if !received && is_reset(&e) => return Err(ReadError::ClosedEarly),
            Err(e) => return Err(ReadError::Failed(Error::Io(e))),
        }
    }
}

fn is_reset(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe
    )
}

/// A complete head at the start of `bytes` and its length, or `None` for more bytes.
fn parse(bytes: &[u8]) -> Result<Option<(ResponseHead, usize)>, Error> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut fields);
    let len = match response.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(Error::Protocol(format!("bad response head: {e}"))),
    };
    let headers: Vec<(String, String)> = response
        .headers
        .iter()
        .map(|h| {
            let value = String::from_utf8_lossy(h.value).trim().to_string();
            (h.name.to_string(), value)
        })
        .collect();
    let close = headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("connection")
            && v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close"))
    });
    let head = ResponseHead {
        status: response.code.unwrap_or_default(),
        reason: response.reason.unwrap_or_default().to_string(),
        keep_alive: response.version == Some(1) && !close,
        headers,
    };
    Ok(Some((head, len)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_become_targets() {
        let t = Target::parse("https://api.example.com/v1/chat?x=1").unwrap();
        assert!(t.https);
        assert_eq!(
            (
                t.host.as_str(),
                t.port,
                t.authority.as_str(),
                t.path.as_str()
            ),
            ("api.example.com", 443, "api.example.com", "/v1/chat?x=1")
        );
        let t = Target::parse("http://[::1]:8080/v1").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.authority.as_str()),
            ("::1", 8080, "[::1]:8080")
        );
        let t = Target::parse("http://u%40x:p%3Aw@localhost/").unwrap();
        assert_eq!(t.credentials.as_deref(), Some("Basic dUB4OnA6dw=="));
        for bad in ["ftp://x/", "not a url", "file:///tmp"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn request_heads_own_their_framing_and_refuse_split_headers() {
        let target = Target::parse("http://127.0.0.1:9/v1/x").unwrap();
        let headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("Content-Length".to_string(), "1".to_string()),
            ("Accept".to_string(), "text/event-stream".to_string()),
        ];
        let head = String::from_utf8(request(&target, None, &headers, 12).unwrap()).unwrap();
        assert_eq!(
            head,
            "POST /v1/x HTTP/1.1\r\nhost: 127.0.0.1:9\r\ncontent-type: application/json\r\n\
             Accept: text/event-stream\r\ncontent-length: 12\r\n\r\n"
        );
        let split = vec![("x-a".to_string(), "1\r\nx-b: 2".to_string())];
        assert!(matches!(
            request(&target, None, &split, 0),
            Err(Error::Header { .. })
        ));
        let bad_name = vec![("x a".to_string(), "1".to_string())];
        assert!(matches!(
            request(&target, None, &bad_name, 0),
            Err(Error::Header { .. })
        ));
    }

    #[test]
    fn response_heads_parse_in_pieces_and_tell_keep_alive() {
        let text = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Y:  z \r\n\r\nrest";
        for cut in 0..text.len() - 4 {
            assert!(parse(&text[..cut]).unwrap().is_none(), "cut at {cut}");
        }
        let (head, len) = parse(text).unwrap().unwrap();
        assert_eq!(len, text.len() - 4);
        assert_eq!(
            (head.status, head.reason.as_str(), head.keep_alive),
            (200, "OK", true)
        );
        assert_eq!(head.values("x-y").collect::<Vec<_>>(), ["z"]);
        let (head, _) = parse(b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(!head.keep_alive);
        let (head, _) = parse(b"HTTP/1.0 200 OK\r\n\r\n").unwrap().unwrap();
        assert!(!head.keep_alive);
        assert!(parse(b"HTTP/1.1 2x0 OK\r\n\r\n").is_err());
        assert!(parse(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
    }
}
