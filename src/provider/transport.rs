//! The HTTP side shared by the wire APIs: send the request (retrying before the first token),
//! decode the SSE body ([`super::sse`]), and turn every failure into a terminal event.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use super::assembler::{Assembler, ConsumerGone};
use super::retry;
use super::sse::{SseDecoder, SseEvent};
use super::{AssistantMessageEvent, StreamOptions};
use crate::agent::message::StopReason;

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

/// One wire API's SSE event handling.
pub(crate) trait WireParser {
    async fn on_event(&mut self, asm: &mut Assembler, event: SseEvent<'_>)
    -> Result<Flow, Failure>;
    /// The stream ended (cleanly or at `Flow::Stop`): the stop reason, or why it is an error.
    async fn finish(self, asm: &mut Assembler) -> Result<StopReason, Failure>;
}

pub const ABORTED: &str = "Request was aborted";

/// The error text with its sources, without repeating the same text.
pub fn error_chain(error: &dyn std::error::Error) -> String {
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

/// A readable message from an error response body (the API's `error.message` when present).
fn status_message(status: reqwest::StatusCode, body: &str) -> String {
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
    format!(
        "{} {}: {detail}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("error")
    )
}

/// Sends `target` and streams the answer through a fresh parser per attempt; always ends the
/// assembler with exactly one terminal event.
pub(crate) async fn drive<P: WireParser>(
    client: &reqwest::Client,
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
        if !sleep_or_abort(delay, options).await {
            return asm.fail(StopReason::Aborted, ABORTED.into()).await;
        }
    }
}

/// `false` when aborted during the wait.
async fn sleep_or_abort(delay: Duration, options: &StreamOptions) -> bool {
    tokio::select! {
        _ = options.signal.cancelled() => false,
        _ = tokio::time::sleep(delay) => true,
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
    client: &reqwest::Client,
    target: &HttpTarget,
    options: &StreamOptions,
    asm: &mut Assembler,
    parser: P,
) -> Attempt {
    let signal = &options.signal;
    if signal.is_cancelled() {
        return Attempt::Aborted;
    }
    let mut request = client.post(&target.url).body(target.body.clone());
    for (name, value) in &target.headers {
        request = request.header(name, value);
    }
    let idle = idle_timeout(options);
    let response = tokio::select! {
        _ = signal.cancelled() => return Attempt::Aborted,
        response = tokio::time::timeout(idle, request.send()) => response,
    };
    let response = match response {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => return Attempt::Failed(format!("Connection error: {}", error_chain(&e))),
        Err(_) => return Attempt::Failed(timed_out(idle, "no response")),
    };
    let status = response.status();
    if !status.is_success() {
        let server_delay = retry::server_delay(response.headers());
        let body = tokio::select! {
            _ = signal.cancelled() => return Attempt::Aborted,
            body = response.text() => body.unwrap_or_default(),
        };
        let message = status_message(status, &body);
        return if retry::is_retryable_status(status.as_u16(), &body) {
            Attempt::Retryable(message, server_delay)
        } else {
            Attempt::Failed(message)
        };
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if content_type.contains("json") {
        // A server that ignored `stream: true` (or a proxy error page with status 200).
        let body = tokio::select! {
            _ = signal.cancelled() => return Attempt::Aborted,
            body = response.text() => body.unwrap_or_default(),
        };
        let shown: String = body.trim().chars().take(500).collect();
        return Attempt::Failed(format!(
            "Expected an event stream but the server answered {content_type}: {shown}"
        ));
    }
    stream_body(response, options, asm, parser).await
}

/// Reads the body chunk by chunk and hands every complete event of a chunk to the parser before
/// reading on: a fast stream delivers many events per read, and they are handled in one go.
async fn stream_body<P: WireParser>(
    mut response: reqwest::Response,
    options: &StreamOptions,
    asm: &mut Assembler,
    mut parser: P,
) -> Attempt {
    let mut decoder = SseDecoder::new();
    // One abort waiter and one idle timer for the whole body, not one of each per chunk
    // (registering and dropping them per read was a tenth of the per-delta cost).
    let mut cancelled = CancelWaiter::new(&options.signal);
    let limit = idle_timeout(options);
    let mut idle = IdleTimer::new(limit);
    'read: loop {
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
        // Data first: when the body has a chunk ready (the task was woken for it), the abort
        // waiter and the idle timer are not polled at all (a third of the per-delta wake cost);
        // an abort is still seen at once, by the check below and before every event.
        let next = tokio::select! {
            biased;
            next = response.chunk() => next,
            () = cancelled.wait() => return Attempt::Aborted,
            () = idle.expired() => return Attempt::Failed(timed_out(limit, "no event")),
        };
        if options.signal.is_cancelled() {
            return Attempt::Aborted;
        }
        idle.touch();
        let chunk = match next {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) => {
                return Attempt::Failed(format!("Connection lost mid-stream: {}", error_chain(&e)));
            }
        };
        if let Err(e) = decoder.push(&chunk) {
            return Attempt::Failed(format!("Malformed SSE stream: {e}"));
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

/// Waits for a cancellation like `token.cancelled()`, without re-registering on every poll.
///
/// A stream's consumer polls its abort waiter once per delta (each time the stream is
/// momentarily empty), and polling `WaitForCancellationFuture` takes two locks each time. Its
/// waiter stays registered with the waker it was last polled with, so this polls it again only
/// when the task's waker changes, and otherwise just checks the token (one lock).
pub struct CancelWaiter<'a> {
    token: &'a CancellationToken,
    waiting: Pin<Box<WaitForCancellationFuture<'a>>>,
    registered: Option<Waker>,
}

impl<'a> CancelWaiter<'a> {
    pub fn new(token: &'a CancellationToken) -> Self {
        CancelWaiter {
            token,
            waiting: Box::pin(token.cancelled()),
            registered: None,
        }
    }

    /// Resolves once the token is cancelled.
    pub fn wait(&mut self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(|cx| self.poll_cancelled(cx))
    }

    fn poll_cancelled(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.token.is_cancelled() {
            return Poll::Ready(());
        }
        if self
            .registered
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            return Poll::Pending;
        }
        let polled = self.waiting.as_mut().poll(cx);
        self.registered = Some(cx.waker().clone());
        polled
    }
}

/// The idle limit of one body: a single timer, armed for the limit after the last activity.
/// Activity only records the time; the timer moves when it fires early.
struct IdleTimer {
    limit: Duration,
    last: tokio::time::Instant,
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl IdleTimer {
    fn new(limit: Duration) -> Self {
        let last = tokio::time::Instant::now();
        IdleTimer {
            limit,
            last,
            sleep: Box::pin(tokio::time::sleep_until(last + limit)),
        }
    }

    fn touch(&mut self) {
        self.last = tokio::time::Instant::now();
    }

    /// Resolves once `limit` passed without activity.
    async fn expired(&mut self) {
        loop {
            self.sleep.as_mut().await;
            let deadline = self.last + self.limit;
            if deadline <= tokio::time::Instant::now() {
                return;
            }
            self.sleep.as_mut().reset(deadline);
        }
    }
}

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

/// Streaming HTTP clients: one honouring the system proxy settings, one direct for loopback
/// servers (Ollama, llama.cpp, LM Studio, the test mock), which a proxy must never intercept.
#[derive(Clone)]
pub struct HttpClients {
    proxied: reqwest::Client,
    direct: reqwest::Client,
}

impl HttpClients {
    /// The client for a request URL.
    pub fn for_url(&self, url: &str) -> &reqwest::Client {
        if is_loopback(url) {
            &self.direct
        } else {
            &self.proxied
        }
    }
}

/// Whether a URL points at this machine.
pub fn is_loopback(url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    let host = url.host_str().unwrap_or("");
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Clients for streaming: a connect timeout, no overall timeout (idle time is limited per
/// request, see [`DEFAULT_IDLE_TIMEOUT_MS`]). `Err` (TLS
/// setup failed) is reported on each request rather than at construction.
pub fn streaming_client() -> Result<HttpClients, String> {
    let builder = || reqwest::Client::builder().connect_timeout(Duration::from_secs(30));
    let error = |e: reqwest::Error| format!("cannot create the HTTP client: {}", error_chain(&e));
    Ok(HttpClients {
        proxied: builder().build().map_err(error)?,
        direct: builder().no_proxy().build().map_err(error)?,
    })
}

/// Adds the model's configured headers, then the request's (`options.extra.headers`); a `null`
/// value removes a default header.
pub fn apply_model_headers(
    headers: &mut Vec<(String, String)>,
    model: &super::Model,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The waiter registered by its first pending poll still wakes its task after later polls
    /// skipped re-registering.
    #[tokio::test]
    async fn cancel_waiter_wakes_after_skipped_polls() {
        let token = CancellationToken::new();
        let watched = token.clone();
        let task = tokio::spawn(async move {
            let mut waiter = CancelWaiter::new(&watched);
            for _ in 0..3 {
                let wait = tokio::time::timeout(Duration::from_millis(5), waiter.wait());
                assert!(wait.await.is_err(), "not cancelled yet");
            }
            waiter.wait().await;
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        token.cancel();
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the waiter woke on cancel")
            .unwrap();
    }

    #[test]
    fn loopback_urls_bypass_proxies() {
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://[::1]:1234"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("not a url"));
    }
}
