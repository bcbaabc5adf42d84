//! What a `web_fetch` URL is, judged from the URL alone: whether it may be fetched (http and
//! https only), the site an "always" answer covers, and whether its host is local.
//!
//! Nothing here looks a name up: a DNS query made before the user approves would already carry
//! whatever the model put into the host name to wherever that name's server is.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use reqwest::Url;
use url::Host;

/// The tools' names.
pub const WEB_FETCH: &str = "web_fetch";
pub const WEB_SEARCH: &str = "web_search";

/// A URL `web_fetch` may fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub url: Url,
}

impl Target {
    /// Parses `raw`; `Err` says why it cannot be fetched (in words for the model).
    pub fn parse(raw: &str) -> Result<Target, String> {
        let url = Url::parse(raw.trim()).map_err(|e| format!("Invalid URL {raw:?}: {e}"))?;
        match url.scheme() {
            "http" | "https" => {}
            scheme => {
                return Err(format!(
                    "web_fetch only fetches http and https URLs, not {scheme}: ({raw}). Read \
                     local files with the read tool."
                ));
            }
        }
        if url.host().is_none() {
            return Err(format!("Invalid URL {raw:?}: it names no host"));
        }
        Ok(Target { url })
    }

    /// The host as written in URLs (`docs.rs`, `127.0.0.1`, `[::1]`).
    pub fn host(&self) -> String {
        self.url.host_str().unwrap_or_default().to_owned()
    }

    /// What an "always" answer covers and what a redirect may stay within without asking: the
    /// host, with its port when the URL names one that is not its scheme's default (so an
    /// answer for a docs server on `localhost:8000` does not cover every service on that host).
    pub fn site(&self) -> String {
        match self.url.port() {
            Some(port) => format!("{}:{port}", self.host()),
            None => self.host(),
        }
    }

    /// The host is this machine or a local network's: a loopback, private, link-local or
    /// unique-local address, `localhost`, a `.localhost` or `.local` name, or a name without
    /// a dot (which only a local resolver answers).
    pub fn is_local(&self) -> bool {
        match self.url.host() {
            Some(Host::Ipv4(ip)) => local_v4(ip),
            Some(Host::Ipv6(ip)) => local_v6(ip),
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                name == "localhost"
                    || name.ends_with(".localhost")
                    || name.ends_with(".local")
                    || !name.contains('.')
            }
            None => false,
        }
    }
}

fn local_v4(ip: Ipv4Addr) -> bool {
    ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified()
}

fn local_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return local_v4(v4);
    }
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        // fc00::/7 unique local, fe80::/10 link-local.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
}

/// The site of a `web_fetch` call's `url` argument, for the approval gate's memory; `None` when
/// it cannot be fetched.
pub fn site_of(url: &str) -> Option<String> {
    Target::parse(url).ok().map(|t| t.site())
}

/// Whether `ip` is this machine's or a local network's, as [`Target::is_local`] judges
/// addresses.
pub fn is_local_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => local_v4(v4),
        IpAddr::V6(v6) => local_v6(v6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_and_https() {
        assert!(Target::parse("https://docs.rs/serde").is_ok());
        assert!(Target::parse("HTTP://Example.COM/a").is_ok());
        let file = Target::parse("file:///etc/passwd").unwrap_err();
        assert!(file.contains("only fetches http and https"), "{file}");
        assert!(Target::parse("ftp://example.com/x").is_err());
        assert!(Target::parse("not a url").is_err());
        assert!(Target::parse("data:text/plain,hi").is_err());
    }

    #[test]
    fn sites_keep_a_port_that_is_not_the_default() {
        let site = |u: &str| Target::parse(u).unwrap().site();
        assert_eq!(site("https://Docs.RS/x"), "docs.rs");
        assert_eq!(site("https://docs.rs:443/x"), "docs.rs");
        assert_eq!(site("http://docs.rs/x"), "docs.rs");
        assert_eq!(site("http://127.0.0.1:8000/"), "127.0.0.1:8000");
        assert_eq!(site("http://[::1]:9/"), "[::1]:9");
        assert_eq!(site("http://2130706433/"), "127.0.0.1");
    }

    #[test]
    fn local_hosts() {
        let local = |u: &str| Target::parse(u).unwrap().is_local();
        for u in [
            "http://127.0.0.1:8080/",
            "http://localhost/",
            "http://api.localhost/",
            "http://printer.local/",
            "http://intranet/",
            "http://10.1.2.3/",
            "http://192.168.0.1/",
            "http://172.20.0.1/",
            "http://169.254.169.254/latest/meta-data",
            "http://[::1]/",
            "http://[fd00::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://0x7f000001/",
        ] {
            assert!(local(u), "{u}");
        }
        for u in [
            "https://docs.rs/",
            "http://8.8.8.8/",
            "http://[2001:db8::1]/",
        ] {
            assert!(!local(u), "{u}");
        }
    }
}
