//! Proxies from the environment, read as curl and reqwest read them: `HTTPS_PROXY` for
//! `https` targets, `HTTP_PROXY` for `http` (ignored in a CGI process, where a request header
//! could set it), `ALL_PROXY` for either when unset, lowercase forms too; `NO_PROXY` lists
//! hosts, domains (with their subdomains), addresses and CIDR ranges that go direct, `*` all.
//! Loopback targets (local models, the test mock) always go direct.

use std::net::IpAddr;

use super::Error;
use super::head::{Target, host_of};

/// A proxy: `http://` or `https://` (TLS to the proxy itself), with optional credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyUrl {
    pub https: bool,
    pub host: String,
    pub port: u16,
    /// `Proxy-Authorization` value from `user:password@` in the URL.
    pub credentials: Option<String>,
}

impl ProxyUrl {
    /// Parses a proxy setting; a bare `host:port` means `http://host:port`.
    pub fn parse(text: &str) -> Result<ProxyUrl, String> {
        let full = if text.contains("://") {
            text.to_string()
        } else {
            format!("http://{text}")
        };
        let url = url::Url::parse(&full).map_err(|e| format!("invalid proxy URL {text:?}: {e}"))?;
        let https = match url.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(format!(
                    "unsupported proxy scheme {other:?} in {text:?} (http or https)"
                ));
            }
        };
        let host = host_of(&url).ok_or_else(|| format!("no host in the proxy URL {text:?}"))?;
        Ok(ProxyUrl {
            https,
            host,
            port: url.port_or_known_default().unwrap_or(80),
            credentials: basic_credentials(&url),
        })
    }

    /// The proxy for messages and pool keys, without its credentials.
    pub fn shown(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        if self.host.contains(':') {
            format!("{scheme}://[{}]:{}", self.host, self.port)
        } else {
            format!("{scheme}://{}:{}", self.host, self.port)
        }
    }
}

/// The proxy settings of one client.
#[derive(Clone, Debug, Default)]
pub struct Proxies {
    http: Option<Result<ProxyUrl, String>>,
    https: Option<Result<ProxyUrl, String>>,
    no_proxy: Vec<String>,
    /// Off only in tests, whose proxies and targets are all on loopback.
    proxy_loopback: bool,
}

impl Proxies {
    /// No proxy at all.
    pub fn none() -> Proxies {
        Proxies::default()
    }

    pub fn from_env() -> Proxies {
        Proxies::from_vars(|name| std::env::var(name).ok())
    }

    /// The settings from environment variables read through `get`.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Proxies {
        let first = |names: &[&str]| {
            names
                .iter()
                .filter_map(|name| get(name))
                .map(|value| value.trim().to_string())
                .find(|value| !value.is_empty())
        };
        let cgi = get("REQUEST_METHOD").is_some();
        let all = first(&["ALL_PROXY", "all_proxy"]);
        let http = if cgi {
            None
        } else {
            first(&["HTTP_PROXY", "http_proxy"])
        };
        let https = first(&["HTTPS_PROXY", "https_proxy"]);
        let parse = |value: Option<String>| value.map(|v| ProxyUrl::parse(&v));
        Proxies {
            http: parse(http.or_else(|| all.clone())),
            https: parse(https.or(all)),
            no_proxy: first(&["NO_PROXY", "no_proxy"])
                .map(|list| {
                    list.split(',')
                        .map(|entry| entry.trim().to_ascii_lowercase())
                        .filter(|entry| !entry.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            proxy_loopback: false,
        }
    }

    /// Proxies loopback targets too (tests: everything there is on loopback).
    #[cfg(test)]
    pub fn proxying_loopback(mut self) -> Proxies {
        self.proxy_loopback = true;
        self
    }

    /// The proxy for `target`, if it goes through one; a bad proxy setting is an error here,
    /// on the request it would have served.
    pub fn for_target(&self, target: &Target) -> Result<Option<&ProxyUrl>, Error> {
        if (!self.proxy_loopback && is_loopback_host(&target.host)) || self.bypassed(&target.host) {
            return Ok(None);
        }
        let setting = if target.https {
            &self.https
        } else {
            &self.http
        };
        match setting {
            None => Ok(None),
            Some(Ok(proxy)) => Ok(Some(proxy)),
            Some(Err(why)) => Err(Error::Proxy {
                proxy: "setting".into(),
                why: why.clone(),
            }),
        }
    }

    /// Whether `NO_PROXY` sends `host` direct.
    fn bypassed(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        let ip = host.parse::<IpAddr>().ok();
        self.no_proxy.iter().any(|entry| {
            if entry == "*" {
                return true;
            }
            if let Some(ip) = ip {
                return match entry.split_once('/') {
                    Some((net, bits)) => in_cidr(ip, net, bits),
                    None => entry.trim_matches(['[', ']']).parse::<IpAddr>() == Ok(ip),
                };
            }
            let domain = entry.trim_start_matches("*.").trim_start_matches('.');
            host == domain
                || host
                    .strip_suffix(domain)
                    .is_some_and(|rest| rest.ends_with('.'))
        })
    }
}

fn in_cidr(ip: IpAddr, net: &str, bits: &str) -> bool {
    let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u32>()) else {
        return false;
    };
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `Basic …` credentials from a URL's `user:password@`, percent-decoded.
pub fn basic_credentials(url: &url::Url) -> Option<String> {
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let mut pair = percent_decode(url.username());
    pair.push(b':');
    pair.extend(percent_decode(url.password().unwrap_or_default()));
    Some(format!("Basic {}", base64(&pair)))
}

fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            *group.get(1).unwrap_or(&0),
            *group.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= group.len() {
                out.push(TABLE[(n >> shift) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies(vars: &[(&str, &str)]) -> Proxies {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Proxies::from_vars(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    fn proxy_for(p: &Proxies, url: &str) -> Option<String> {
        let target = Target::parse(url).unwrap();
        p.for_target(&target).unwrap().map(ProxyUrl::shown)
    }

    #[test]
    fn schemes_pick_their_proxy_and_all_proxy_fills_in() {
        let p = proxies(&[
            ("HTTPS_PROXY", "http://sec:3128"),
            ("ALL_PROXY", "gate:8080"),
        ]);
        assert_eq!(
            proxy_for(&p, "https://api.x.com/v1").as_deref(),
            Some("http://sec:3128")
        );
        assert_eq!(
            proxy_for(&p, "http://api.x.com/v1").as_deref(),
            Some("http://gate:8080")
        );
        let p = proxies(&[("https_proxy", "https://lower:443"), ("HTTPS_PROXY", "")]);
        assert_eq!(
            proxy_for(&p, "https://a.b/").as_deref(),
            Some("https://lower:443")
        );
        // A CGI process ignores HTTP_PROXY (a request header could have set it).
        let p = proxies(&[("HTTP_PROXY", "evil:1"), ("REQUEST_METHOD", "GET")]);
        assert_eq!(proxy_for(&p, "http://a.b/"), None);
        assert_eq!(proxy_for(&proxies(&[]), "https://a.b/"), None);
    }

    #[test]
    fn no_proxy_and_loopback_go_direct() {
        let p = proxies(&[
            ("HTTPS_PROXY", "http://p:1"),
            ("HTTP_PROXY", "http://p:1"),
            (
                "NO_PROXY",
                " internal.corp, .lan,10.0.0.0/8, 192.168.1.7 ,[::2]",
            ),
        ]);
        for direct in [
            "https://internal.corp/",
            "https://a.internal.corp/",
            "https://x.LAN/",
            "https://10.3.4.5/",
            "https://192.168.1.7/",
            "http://[::2]/",
            "http://127.0.0.1:8080/",
            "http://localhost:11434/",
            "http://[::1]/",
        ] {
            assert_eq!(proxy_for(&p, direct), None, "{direct}");
        }
        for proxied in [
            "https://notinternal.corp/",
            "https://11.0.0.1/",
            "https://lan.com/",
        ] {
            assert!(proxy_for(&p, proxied).is_some(), "{proxied}");
        }
        let all = proxies(&[("HTTPS_PROXY", "p:1"), ("no_proxy", "*")]);
        assert_eq!(proxy_for(&all, "https://a.b/"), None);
    }

    #[test]
    fn bad_proxy_settings_fail_the_request_they_would_serve() {
        let p = proxies(&[("HTTPS_PROXY", "socks5://s:1080")]);
        let target = Target::parse("https://a.b/").unwrap();
        let error = p.for_target(&target).unwrap_err().to_string();
        assert!(
            error.contains("unsupported proxy scheme \"socks5\""),
            "{error}"
        );
        assert_eq!(proxy_for(&p, "http://a.b/"), None);
    }

    #[test]
    fn credentials_are_decoded_and_encoded_as_basic() {
        let p = ProxyUrl::parse("http://al%20ice:p%40ss@proxy:3128").unwrap();
        assert_eq!(p.credentials.as_deref(), Some("Basic YWwgaWNlOnBAc3M="));
        assert_eq!(p.shown(), "http://proxy:3128");
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foob"), "Zm9vYg==");
    }

    fn is_loopback(url: &str) -> bool {
        Target::parse(url).is_ok_and(|target| is_loopback_host(&target.host))
    }

    #[test]
    fn loopback_urls_are_recognised() {
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://[::1]:1234"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("not a url"));
    }
}
