//! The HTTP side shared by the wire APIs: send the request with reqwest (retrying before the
//! first token), decode the SSE body ([`super::sse`]), and turn every failure into a terminal
//! event whose message says which server failed and why.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use super::api_key;
use super::assembler::{Assembler, ConsumerGone};
use super::http_error::{connection_failure, env_proxy, error_chain, lost_mid_stream, server_of};
use super::retry;
use super::sse::{SseDecoder, SseEvent};
use crate::agent::message::StopReason;
use crate::agent::model::Model;
use crate::agent::stream_contract::{AssistantMessageEvent, StreamOptions};

/// The model's base URL without a trailing `/`, or `default` when it has none.
pub fn base_url<'a>(model: &'a Model, default: &'a str) -> &'a str {
    let base = if model.base_url.is_empty() {
        default
    } else {
        &model.base_url
    };
    base.trim_end_matches('/')
}

/// What to send.
pub struct HttpTarget {
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// The JSON body, already serialised.
    pub body: String,
}

/// Why a response could not complete.
pub enum Failure {
    Gone,
    Error { message: String, retryable: bool },
}

impl Failure {
    pub fn error(message: impl Into<String>) -> Failure {
        Failure::Error {
            message: message.into(),
            retryable: false,
        }
    }
}

impl From<ConsumerGone> for Failure {
    fn from(_: ConsumerGone) -> Self {
        Failure::Gone
    }
}

/// Whether the parser wants more events.
pub enum Flow {
    Continue,
    Stop,
}

/// One wire API's SSE event handling. Its futures are `Send`, so one generic task
/// ([`super::http_provider::HttpProvider`]) can drive any parser; implementations are `async fn`s.
pub(crate) trait WireParser: Send {
    fn on_event(
        &mut self,
        asm: &mut Assembler,
        event: SseEvent<'_>,
    ) -> impl Future<Output = Result<Flow, Failure>> + Send;
    /// The stream ended (cleanly or at `Flow::Stop`): the stop reason, or why it is an error.
    fn finish(
        self,
        asm: &mut Assembler,
    ) -> impl Future<Output = Result<StopReason, Failure>> + Send;
}

/// An OpenAI event's data: `[DONE]` ends the stream, an empty one is skipped, the rest is JSON.
pub(crate) enum Payload<T> {
    Done,
    Empty,
    Json(T),
}

/// The data of an OpenAI event (either API) as `T`.
pub(crate) fn openai_payload<'a, T: serde::Deserialize<'a>>(
    data: &'a str,
    what: &str,
) -> Result<Payload<T>, Failure> {
    let data = data.trim();
    match data {
        "[DONE]" => Ok(Payload::Done),
        "" => Ok(Payload::Empty),
        _ => serde_json::from_str(data)
            .map(Payload::Json)
            .map_err(|e| unparsable(what, &e, data)),
    }
}

/// An event that is not what its API sends: the parse error and the data's start.
pub(crate) fn unparsable(what: &str, e: &serde_json::Error, data: &str) -> Failure {
    let shown: String = data.chars().take(200).collect();
    Failure::error(format!("Could not parse {what}: {e}; data={shown}"))
}

pub const ABORTED: &str = "Request was aborted";

/// How long connecting may take (TCP, a proxy's tunnel and TLS together).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The providers' HTTP client. Proxies come from the environment as reqwest reads them
/// (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`); loopback servers (Ollama, llama.cpp,
/// LM Studio, the test mock) are always reached directly. No overall timeout: idle time is
/// limited per request ([`DEFAULT_IDLE_TIMEOUT_MS`]). Cheap to clone (clones share the pools).
#[derive(Clone, Default)]
pub struct HttpClient {
    clients: Arc<Clients>,
}

/// Built on first use: loading the system's certificates takes milliseconds.
#[derive(Default)]
struct Clients {
    proxied: OnceLock<Result<reqwest::Client, String>>,
    direct: OnceLock<Result<reqwest::Client, String>>,
}

impl HttpClient {
    pub fn new() -> HttpClient {
        HttpClient::default()
    }

    /// The reqwest client for `url` (direct for loopback, else through the environment's
    /// proxy), for MCP servers over HTTP.
    pub fn client_for(&self, url: &str) -> Result<reqwest::Client, String> {
        let url = reqwest::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
        self.for_url(&url).cloned().map_err(Clone::clone)
    }

    /// The client for `url`, trusting the system's certificate store (or `SSL_CERT_FILE`) and
    /// the Mozilla roots. `Err` (say, a certificate store with no usable certificate) fails
    /// each request.
    fn for_url(&self, url: &reqwest::Url) -> Result<&reqwest::Client, &String> {
        let direct = is_loopback(url);
        let client = if direct {
            &self.clients.direct
        } else {
            &self.clients.proxied
        };
        let build = || {
            let builder = client_builder().connect_timeout(CONNECT_TIMEOUT);
            let builder = if direct { builder.no_proxy() } else { builder };
            builder
                .build()
                .map_err(|e| format!("cannot create the HTTP client: {}", error_chain(&e)))
        };
        client.get_or_init(build).as_ref()
    }
}

/// A reqwest builder with the crate's TLS set-up: rustls on ring, the system's certificates
/// (its store, or `SSL_CERT_FILE` / `SSL_CERT_DIR`, through the platform verifier) and the
/// Mozilla roots. MCP servers over HTTP use it too.
pub fn client_builder() -> reqwest::ClientBuilder {
    // Whoever installs a provider first wins; ring is what the crate builds with.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mozilla = webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .filter_map(|der| reqwest::Certificate::from_der(der).ok());
    reqwest::Client::builder().tls_certs_merge(mozilla)
}

pub(crate) fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or("").trim_matches(['[', ']']);
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            let host = host.to_ascii_lowercase();
            host == "localhost" || host.ends_with(".localhost")
        }
    }
}

/// What a 404 from a URL without an API version in its path most likely means: a base URL
/// without its `/v1` (`OPENAI_BASE_URL=http://localhost:8080` instead of `…/v1`).
fn version_hint(url: &reqwest::Url) -> Option<String> {
    let versioned = (url.path_segments()?).any(|segment| {
        let mut chars = segment.chars();
        chars.next() == Some('v') && chars.next().is_some_and(|c| c.is_ascii_digit())
    });
    (!versioned).then(|| {
        format!(
            " ({} has no API version in its path: an OpenAI-compatible base URL usually ends in \
             /v1, e.g. OPENAI_BASE_URL=http://127.0.0.1:8080/v1)",
            url
        )
    })
}

/// A readable message from an error response body (the API's `error.message` when present).
fn status_message(status: StatusCode, body: &str) -> String {
    let detail = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            let error = v.get("error")?;
            error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| error.as_str().map(str::to_string))
        })
        .unwrap_or_else(|| body.trim().chars().take(2000).collect());
    let detail = if detail.is_empty() {
        "(no body)".to_string()
    } else {
        detail
    };
    let reason = status.canonical_reason().unwrap_or("error");
    format!("{} {reason}: {detail}", status.as_u16())
}

/// The steps every API takes before sending: the key resolved and checked, then the request
/// built with it. A missing key or a body that cannot be encoded ends the stream (through
/// `asm`) with its message, and gives `None`.
pub(crate) async fn checked_target(
    asm: Assembler,
    model: &Model,
    options: &StreamOptions,
    build: impl FnOnce(Option<String>) -> Result<HttpTarget, serde_json::Error>,
) -> Option<(Assembler, HttpTarget)> {
    let key = api_key::resolve(model, options);
    if let Some(message) = api_key::missing_key_error(model, key.as_deref()) {
        asm.fail(StopReason::Error, message).await;
        return None;
    }
    match build(key) {
        Ok(target) => Some((asm, target)),
        Err(e) => {
            let message = format!("Cannot encode the request: {e}");
            asm.fail(StopReason::Error, message).await;
            None
        }
    }
}

/// Sends `target` and streams the answer through a fresh parser per attempt; always ends the
/// assembler with exactly one terminal event.
pub(crate) async fn drive<P: WireParser>(
    client: &HttpClient,
    target: HttpTarget,
    options: &StreamOptions,
    mut asm: Assembler,
    make_parser: impl Fn() -> P,
) {
    let max_retries = options.max_retries.unwrap_or(retry::DEFAULT_MAX_RETRIES);
    let cap_ms = options
        .max_retry_delay_ms
        .unwrap_or(retry::DEFAULT_MAX_RETRY_DELAY_MS);
    let mut retries = 0;
    loop {
        let outcome = attempt(client, &target, options, &mut asm, make_parser()).await;
        let (message, server_delay) = match outcome {
            Attempt::Done(reason) => {
                let _ = asm.done(reason).await;
                return;
            }
            Attempt::Gone => return,
            Attempt::Aborted => return asm.fail(StopReason::Aborted, ABORTED.into()).await,
            Attempt::Failed(message) => return asm.fail(StopReason::Error, message).await,
            Attempt::Retryable(message, delay) => (message, delay),
        };
        if retries >= max_retries || asm.started() {
            return asm.fail(StopReason::Error, message).await;
        }
        retries += 1;
        let delay = match retry::retry_delay(retries, server_delay, cap_ms) {
            Ok(delay) => delay,
            Err(why) => {
                return asm
                    .fail(StopReason::Error, format!("{message} ({why})"))
                    .await;
            }
        };
        let notice = AssistantMessageEvent::Retry {
            attempt: retries,
            max_attempts: max_retries,
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error_message: message,
        };
        if asm.retry(notice).await.is_err() {
            return;
        }
        let waited = tokio::select! {
            () = options.signal.cancelled() => false,
            () = tokio::time::sleep(delay) => true,
        };
        if !waited {
            return asm.fail(StopReason::Aborted, ABORTED.into()).await;
        }
    }
}

enum Attempt {
    Done(StopReason),
    Gone,
    Aborted,
    Failed(String),
    Retryable(String, Option<Duration>),
}

async fn attempt<P: WireParser>(
    client: &HttpClient,
    target: &HttpTarget,
    options: &StreamOptions,
    asm: &mut Assembler,
    parser: P,
) -> Attempt {
    let signal = &options.signal;
    if signal.is_cancelled() {
        return Attempt::Aborted;
    }
    let url = match reqwest::Url::parse(&target.url) {
        Ok(url) => url,
        Err(e) => return Attempt::Failed(format!("Invalid URL {:?}: {e}", target.url)),
    };
    let http = match client.for_url(&url) {
        Ok(http) => http,
        Err(e) => return Attempt::Failed(e.clone()),
    };
    let mut request = http.post(url.clone());
    for (name, value) in &target.headers {
        request = request.header(name, value);
    }
    let idle = idle_timeout(options);
    let sending = request.body(target.body.clone()).send();
    let response = tokio::select! {
        () = signal.cancelled() => return Attempt::Aborted,
        response = tokio::time::timeout(idle, sending) => response,
    };
    let response = match response {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => {
            let proxy = (!is_loopback(&url)).then(|| env_proxy(&url)).flatten();
            let why = connection_failure(&url, proxy.as_deref(), &e);
            return Attempt::Failed(format!("Connection error: {why}"));
        }
        Err(_) => {
            let waited = format!("no response from {}", server_of(&url));
            return Attempt::Failed(timed_out(idle, &waited));
        }
    };
    let status = response.status();
    if !status.is_success() {
        let server_delay = retry::server_delay(|name| response.headers().get(name)?.to_str().ok());
        let Some(body) = read_text(response, options, ERROR_BODY_LIMIT).await else {
            return Attempt::Aborted;
        };
        let mut message = status_message(status, &body);
        if status == StatusCode::NOT_FOUND
            && let Some(hint) = version_hint(&url)
        {
            message.push_str(&hint);
        }
        return if retry::is_retryable_status(status.as_u16(), &body) {
            Attempt::Retryable(message, server_delay)
        } else {
            Attempt::Failed(message)
        };
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
        .unwrap_or_default();
    if !may_be_event_stream(&content_type) {
        // A server that ignored `stream: true`, a captive portal's page, a wrong base URL.
        let Some(body) = read_text(response, options, SHOWN_BODY_LIMIT).await else {
            return Attempt::Aborted;
        };
        let shown: String = body.trim().chars().take(500).collect();
        return Attempt::Failed(format!(
            "Expected an event stream but the server answered {content_type} ({status}) from {url}: {shown}"
        ));
    }
    stream_body(response, options, asm, parser).await
}

/// SSE comes as `text/event-stream`; minimal servers send it as `text/plain` or unlabelled.
fn may_be_event_stream(content_type: &str) -> bool {
    let media_type = content_type.split(';').next().unwrap_or("").trim();
    matches!(media_type, "" | "text/event-stream" | "text/plain")
}

/// Hands every event of the body to the parser; the idle limit restarts with each chunk.
async fn stream_body<P: WireParser>(
    mut response: reqwest::Response,
    options: &StreamOptions,
    asm: &mut Assembler,
    mut parser: P,
) -> Attempt {
    let url = response.url().clone();
    let mut decoder = SseDecoder::new();
    let limit = idle_timeout(options);
    let cancelled = options.signal.cancelled();
    // One timer for the whole body, moved only when it fires early: arming a timer per chunk
    // (one per delta) cost CPU, and resetting the one timer per chunk halved a fast stream's
    // throughput (BENCH.md, scenario 2); reading the clock per chunk costs neither.
    let idle = tokio::time::sleep(limit);
    let mut last_data = tokio::time::Instant::now();
    tokio::pin!(cancelled, idle);
    'read: loop {
        let chunk = tokio::select! {
            biased;
            () = &mut cancelled => return Attempt::Aborted,
            chunk = response.chunk() => chunk,
            () = &mut idle => {
                let due = last_data + limit;
                if due > tokio::time::Instant::now() {
                    idle.as_mut().reset(due);
                    continue;
                }
                return Attempt::Failed(timed_out(limit, "no event"));
            }
        };
        let chunk = match chunk {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) => return Attempt::Failed(lost_mid_stream(&url, &e)),
        };
        last_data = tokio::time::Instant::now();
        if let Err(e) = decoder.push(&chunk) {
            return Attempt::Failed(format!("Malformed SSE stream: {e}"));
        }
        while let Some(event) = decoder.next_event() {
            if options.signal.is_cancelled() {
                return Attempt::Aborted;
            }
            match parser.on_event(asm, event).await {
                Ok(Flow::Continue) => {}
                Ok(Flow::Stop) => break 'read,
                Err(failure) => return failed(failure, options),
            }
        }
    }
    if options.signal.is_cancelled() {
        return Attempt::Aborted;
    }
    match parser.finish(asm).await {
        Ok(reason) => Attempt::Done(reason),
        Err(failure) => failed(failure, options),
    }
}

/// Up to `limit` bytes of the body as text (invalid UTF-8 replaced), what arrived until an
/// error or the idle limit; `None` when aborted.
async fn read_text(
    mut response: reqwest::Response,
    options: &StreamOptions,
    limit: usize,
) -> Option<String> {
    let idle = idle_timeout(options);
    let mut bytes = Vec::new();
    while bytes.len() < limit {
        let chunk = tokio::select! {
            () = options.signal.cancelled() => return None,
            chunk = tokio::time::timeout(idle, response.chunk()) => chunk,
        };
        let Ok(Ok(Some(chunk))) = chunk else {
            break;
        };
        let room = limit - bytes.len();
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Most of an error response's body kept for its message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// The start of a body that is not an event stream, shown in the error.
const SHOWN_BODY_LIMIT: usize = 2048;

/// Inactivity limit: `timeoutMs` in the options, else 10 minutes (the OpenAI and Anthropic
/// SDKs' default). It restarts with every chunk of the body, so long streams are fine; a server
/// that goes silent (a hung local model, a dead proxy) ends the request.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 600_000;

fn idle_timeout(options: &StreamOptions) -> Duration {
    let ms = options.extra.get("timeoutMs").and_then(Value::as_u64);
    Duration::from_millis(ms.filter(|ms| *ms > 0).unwrap_or(DEFAULT_IDLE_TIMEOUT_MS))
}

fn timed_out(idle: Duration, what: &str) -> String {
    format!("Request timed out: {what} for {} ms", idle.as_millis())
}

fn failed(failure: Failure, options: &StreamOptions) -> Attempt {
    match failure {
        Failure::Gone => Attempt::Gone,
        _ if options.signal.is_cancelled() => Attempt::Aborted,
        Failure::Error {
            message,
            retryable: true,
        } => Attempt::Retryable(message, None),
        Failure::Error { message, .. } => Attempt::Failed(message),
    }
}

/// What every streamed JSON request starts with: a JSON body, an event stream back.
pub fn stream_headers() -> Vec<(String, String)> {
    vec![
        ("content-type".to_string(), "application/json".to_string()),
        ("accept".to_string(), "text/event-stream".to_string()),
    ]
}

/// Adds the model's configured headers, then the request's (`options.extra.headers`); a `null`
/// value removes a default header.
pub fn apply_model_headers(
    headers: &mut Vec<(String, String)>,
    model: &crate::agent::model::Model,
    options: &StreamOptions,
) {
    let from_options = options.extra.get("headers").and_then(Value::as_object);
    for (name, value) in model
        .headers
        .iter()
        .flatten()
        .chain(from_options.into_iter().flatten())
    {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        match value {
            Value::Null => {}
            Value::String(s) => headers.push((name.clone(), s.clone())),
            other => headers.push((name.clone(), other.to_string())),
        }
    }
}
