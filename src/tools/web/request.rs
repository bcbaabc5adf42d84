//! One `web_fetch` on the network: a GET that follows redirects within the approved site (at
//! most [`MAX_REDIRECTS`]), stops at a redirect to another site, and reads at most
//! [`MAX_BODY_BYTES`] of the body.

use std::net::SocketAddr;

use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use reqwest::{StatusCode, Url};

use super::client::{client_for, request_failure};
use super::page::{ContentType, refused_by_type};
use super::target::{Target, is_local_ip};
use crate::provider::http_error::{env_proxy, lost_mid_stream};
use crate::provider::transport::is_loopback;

/// Redirects followed within one site.
pub const MAX_REDIRECTS: usize = 5;

/// The most of a body downloaded; the rest is not read.
pub const MAX_BODY_BYTES: usize = 5 * 1024 * 1024;

/// What the model prefers to read, in order.
const ACCEPTED: &str = "text/html, application/xhtml+xml, text/markdown;q=0.9, text/plain;q=0.9, \
                        application/json;q=0.9, */*;q=0.5";

/// What came back.
#[derive(Debug)]
pub enum Fetched {
    /// `at` redirected (`status`) to `location`, on another site: not followed.
    OtherSite {
        at: Url,
        status: StatusCode,
        location: Url,
    },
    /// A response that is not a redirect to follow.
    Body(Body),
}

/// A response and (up to the cap) its body.
#[derive(Debug)]
pub struct Body {
    /// The URL that answered (after same-site redirects).
    pub url: Url,
    pub status: StatusCode,
    /// The `Content-Type` header as sent.
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
    /// The body went on past [`MAX_BODY_BYTES`].
    pub capped: bool,
    /// The media type alone refused it, so the body was not read.
    pub skipped: bool,
}

/// Fetches `target`, following redirects within its site; `Err` is the text for the model.
pub async fn fetch(target: &Target) -> Result<Fetched, String> {
    let site = target.site();
    let mut url = target.url.clone();
    for _ in 0..=MAX_REDIRECTS {
        let client = client_for(&url)?;
        let response = client
            .get(url.clone())
            .header(ACCEPT, ACCEPTED)
            .send()
            .await
            .map_err(|e| format!("Cannot fetch {url}: {}", request_failure(&url, &e)))?;
        let proxied = !is_loopback(&url) && env_proxy(&url).is_some();
        if let Some(why) = local_peer(target, &url, response.remote_addr(), proxied) {
            return Err(why);
        }
        let status = response.status();
        let location = response
            .headers()
            .get(LOCATION)
            .and_then(|l| l.to_str().ok())
            .filter(|_| status.is_redirection());
        let Some(location) = location else {
            return read_body(url, response).await.map(Fetched::Body);
        };
        let next = url
            .join(location)
            .map_err(|e| format!("{url} redirected to an invalid URL {location:?}: {e}"))?;
        let next_target = Target::parse(next.as_str())
            .map_err(|why| format!("{url} redirected to {next}, which cannot be fetched: {why}"))?;
        if next_target.site() != site {
            return Ok(Fetched::OtherSite {
                at: url,
                status,
                location: next,
            });
        }
        url = next;
    }
    Err(format!(
        "{} redirected more than {MAX_REDIRECTS} times (last to {url}): not followed further",
        target.url
    ))
}

/// Why a response is not read: the user approved a name that is not local, but the connection
/// (made directly, not through a proxy) reached this machine or a local network — a name made
/// to resolve there (DNS rebinding) would otherwise let a page's host read local services.
fn local_peer(
    target: &Target,
    url: &Url,
    peer: Option<SocketAddr>,
    proxied: bool,
) -> Option<String> {
    let peer = peer?;
    if target.is_local() || proxied || !is_local_ip(peer.ip()) {
        return None;
    }
    Some(format!(
        "{} resolved to {}, an address of this machine or a local network, although its name is \
         not local: the response was not read. Fetch it by that address if it is meant.",
        url.host_str().unwrap_or_default(),
        peer.ip()
    ))
}

/// Reads the body up to the cap, unless its media type alone refuses it.
async fn read_body(url: Url, mut response: reqwest::Response) -> Result<Body, String> {
    let status = response.status();
    let content_type = (response.headers().get(CONTENT_TYPE))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut body = Body {
        url,
        status,
        content_type,
        bytes: Vec::new(),
        capped: false,
        skipped: false,
    };
    let refused =
        (body.content_type.as_deref()).is_some_and(|t| refused_by_type(&ContentType::parse(t)));
    if refused && status.is_success() {
        body.skipped = true;
        return Ok(body);
    }
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) => return Err(lost_mid_stream(&body.url, &e)),
        };
        let room = MAX_BODY_BYTES - body.bytes.len();
        if chunk.len() > room {
            body.bytes.extend_from_slice(&chunk[..room]);
            body.capped = true;
            break;
        }
        body.bytes.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_is_not_local_must_not_reach_a_local_address() {
        let peer = |ip: &str| Some(SocketAddr::new(ip.parse().unwrap(), 80));
        let public = Target::parse("http://docs.example/").unwrap();
        let why = local_peer(&public, &public.url, peer("127.0.0.1"), false).unwrap();
        assert!(
            why.starts_with("docs.example resolved to 127.0.0.1"),
            "{why}"
        );
        assert!(local_peer(&public, &public.url, peer("10.0.0.8"), false).is_some());
        assert_eq!(
            local_peer(&public, &public.url, peer("93.184.216.34"), false),
            None
        );
        // Through a proxy the peer is the proxy, often on this machine.
        assert_eq!(
            local_peer(&public, &public.url, peer("127.0.0.1"), true),
            None
        );
        let local = Target::parse("http://localhost:8000/").unwrap();
        assert_eq!(
            local_peer(&local, &local.url, peer("127.0.0.1"), false),
            None
        );
    }
}
