//! Messages for failed HTTP requests: which server failed and why (TLS, DNS, refused, timeout),
//! read from the source chain of reqwest's error (hyper, `std::io`, rustls errors beneath it).

use std::error::Error;
use std::io::ErrorKind;

/// The error text with its sources, without repeating the same text.
pub fn error_chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `host` or `host:port` of `url`, as the user wrote it.
pub fn server_of(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or("(no host)");
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

/// The proxy a request to `url` goes through, picked from the environment as reqwest picks it
/// (hyper-util's matcher): `scheme://host:port`, without credentials.
pub fn env_proxy(url: &reqwest::Url) -> Option<String> {
    let uri = url.as_str().parse::<http::Uri>().ok()?;
    let matcher = hyper_util::client::proxy::matcher::Matcher::from_env();
    let proxy = matcher.intercept(&uri)?;
    let uri = proxy.uri();
    Some(format!("{}://{}", uri.scheme_str()?, uri.authority()?))
}

/// Why a request to `url` (through `proxy`, if any) got no response.
pub fn connection_failure(
    url: &reqwest::Url,
    proxy: Option<&str>,
    error: &reqwest::Error,
) -> String {
    let server = server_of(url);
    let causes = causes(error);
    if let Some(tls) = causes
        .iter()
        .find_map(|cause| cause.downcast_ref::<rustls::Error>())
    {
        let hint = match tls {
            rustls::Error::InvalidCertificate(_) => {
                " (a certificate problem: if a proxy inspects TLS, its CA certificate belongs in \
                 the system's certificate store or in SSL_CERT_FILE)"
            }
            _ => "",
        };
        return format!("TLS handshake with {server} failed: {tls}{hint}");
    }
    let why = deepest(&causes);
    if let Some(proxy) = proxy
        && why.starts_with("tunnel error")
    {
        return format!("the proxy {proxy} did not open a tunnel to {server}: {why}");
    }
    // What the connection was opened to.
    let peer = match proxy {
        Some(proxy) => format!("the proxy {proxy} (for {server})"),
        None => server,
    };
    // hyper-util's name for a failed lookup; the cause beneath is the resolver's message.
    if causes.iter().any(|cause| cause.to_string() == "dns error") {
        let name = match proxy {
            Some(_) => peer,
            None => url.host_str().unwrap_or("").to_string(),
        };
        return format!("cannot resolve {name}: {why}");
    }
    if causes
        .iter()
        .any(|cause| io_kind(*cause) == Some(ErrorKind::ConnectionRefused))
    {
        return format!("cannot connect to {peer}: connection refused (is the server running?)");
    }
    if error.is_timeout() {
        return format!("connecting to {peer} timed out");
    }
    if error.is_builder() {
        return format!("invalid request to {url}: {why}");
    }
    format!("{peer}: {why}")
}

/// Why the body from `url` broke off.
pub fn lost_mid_stream(url: &reqwest::Url, error: &reqwest::Error) -> String {
    let why = deepest(&causes(error));
    format!("Connection lost mid-stream from {}: {why}", server_of(url))
}

/// The error's sources, outermost first (reqwest's own text only says which step failed),
/// including the errors inside a `std::io::Error` (whose `source` skips them).
fn causes(error: &reqwest::Error) -> Vec<&(dyn Error + 'static)> {
    std::iter::successors(error.source(), |&cause| {
        match cause.downcast_ref::<std::io::Error>() {
            Some(io) => io.get_ref().map(|inner| inner as &(dyn Error + 'static)),
            None => cause.source(),
        }
    })
    .collect()
}

/// The innermost cause's text: the most specific (hyper's, the system's, rustls's).
fn deepest(causes: &[&(dyn Error + 'static)]) -> String {
    causes
        .last()
        .map_or_else(|| "unknown error".to_string(), |cause| cause.to_string())
}

fn io_kind(cause: &(dyn Error + 'static)) -> Option<ErrorKind> {
    cause
        .downcast_ref::<std::io::Error>()
        .map(std::io::Error::kind)
}
