//! The web tools' HTTP client: the providers' TLS set-up ([`client_builder`]: rustls, the
//! system's certificates and the Mozilla roots), proxies from the environment as the providers
//! take them (loopback reached directly), connecting bounded to [`CONNECT_TIMEOUT`], and no
//! automatic redirects: `web_fetch` follows them itself, only within the approved site.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::Url;

use crate::provider::http_error::{connection_failure, env_proxy, error_chain};
use crate::provider::transport::{client_builder, is_loopback};

/// How long connecting may take (TCP, a proxy's tunnel and TLS together).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one tool call may take on the network, redirects and the body included.
pub const TOTAL_TIMEOUT: Duration = Duration::from_secs(30);

const USER_AGENT: &str = concat!("agent-lsp/", env!("CARGO_PKG_VERSION"), " (web_fetch)");

/// The process's two clients (direct for loopback, else through the environment's proxy),
/// built on first use and shared, so connection pools are too.
static DIRECT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
static PROXIED: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();

/// The client for `url`; `Err` (no usable certificate store, say) fails the call with the why.
pub fn client_for(url: &Url) -> Result<reqwest::Client, String> {
    let direct = is_loopback(url);
    let cell = if direct { &DIRECT } else { &PROXIED };
    let build = || {
        let builder = client_builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT);
        let builder = if direct { builder.no_proxy() } else { builder };
        builder
            .build()
            .map_err(|e| format!("cannot create the HTTP client: {}", error_chain(&e)))
    };
    cell.get_or_init(build).clone()
}

/// Why a request to `url` got no response, naming the server (or proxy) and the cause.
pub fn request_failure(url: &Url, error: &reqwest::Error) -> String {
    let proxy = if is_loopback(url) {
        None
    } else {
        env_proxy(url)
    };
    connection_failure(url, proxy.as_deref(), error)
}
