//! The HTTP side shared by the wire APIs: send the request (retrying before the first token),
//! decode the SSE body ([`super::sse`]), and turn every failure into a terminal event.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use super::assembler::{Assembler, ConsumerGone};
use super::http::{self, Buffered};
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
fn status_message(status: u16, reason: &str, body: &str) -> String {
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
    let reason = http::canonical_reason(status)
        .or(Some(reason).filter(|r| !r.is_empty()))
        .unwrap_or("error");
    format!("{status} {reason}: {detail}")
}

/// Sends `target` and streams the answer through a fresh parser per attempt; always ends the
/// assembler with exactly one terminal event.
pub(crate) async fn drive<P: WireParser>(
    client: &http::Client,
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
    client: &http::Client,
    target: &HttpTarget,
    options: &StreamOptions,
    asm: &mut Assembler,
    parser: P,
) -> Attempt {
    let signal = &options.signal;
    if signal.is_cancelled() {
        return Attempt::Aborted;
    }
    let idle = idle_timeout(options);
    let sending = client.post(&target.url, &target.headers, target.body.as_bytes());
    let response = tokio::select! {
        _ = signal.cancelled() => return Attempt::Aborted,
        response = tokio::time::timeout(idle, sending) => response,
    };
    let response = match response {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => return Attempt::Failed(format!("Connection error: {}", error_chain(&e))),
        Err(_) => return Attempt::Failed(timed_out(idle, "no response")),
    };
    if !response.is_success() {
        let status = response.status();
        let server_delay = retry::server_delay(|name| response.header(name));
        let reason = response.reason().to_string();
        let body = tokio::select! {
            _ = signal.cancelled() => return Attempt::Aborted,
            body = response.text(ERROR_BODY_LIMIT) => body.unwrap_or_default(),
        };
        let message = status_message(status, &reason, &body);
        return if retry::is_retryable_status(status, &body) {
            Attempt::Retryable(message, server_delay)
        } else {
            Attempt::Failed(message)
        };
    }
    let content_type = response
        .header("content-type")
        .unwrap_or("")
        .to_ascii_lowercase();
    if content_type.contains("json") {
        // A server that ignored `stream: true` (or a proxy error page with status 200).
        let body = tokio::select! {
            _ = signal.cancelled() => return Attempt::Aborted,
            body = response.text(ERROR_BODY_LIMIT) => body.unwrap_or_default(),
        };
        let shown: String = body.trim().chars().take(500).collect();
        return Attempt::Failed(format!(
            "Expected an event stream but the server answered {content_type}: {shown}"
        ));
    }
    stream_body(response, options, asm, parser).await
}

/// Hands every complete event to the parser, decoding the body out of what was already read,
/// and reads from the connection only when nothing is left: a fast stream's read holds
/// hundreds of events, handled without any I/O or waker in between.
async fn stream_body<P: WireParser>(
    mut response: http::Response,
    options: &StreamOptions,
    asm: &mut Assembler,
    mut parser: P,
) -> Attempt {
    let mut decoder = SseDecoder::new();
    // One abort waiter and one idle timer for the whole body, polled only when the
    // connection has to be read (an abort is also checked before every event).
    let mut cancelled = CancelWaiter::new(&options.signal);
    let limit = idle_timeout(options);
    let mut idle = IdleTimer::new(limit);
    let body = response.body();
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
        match body.buffered() {
            Ok(Buffered::Data(data)) => {
                if let Err(e) = decoder.push(data) {
                    return Attempt::Failed(format!("Malformed SSE stream: {e}"));
                }
                continue;
            }
            Ok(Buffered::End) => break,
            Ok(Buffered::NeedRead) => {}
            Err(e) => return lost(&e),
        }
        let read = tokio::select! {
            biased;
            read = body.fill() => read,
            () = cancelled.wait() => return Attempt::Aborted,
            () = idle.expired() => return Attempt::Failed(timed_out(limit, "no event")),
        };
        if options.signal.is_cancelled() {
            return Attempt::Aborted;
        }
        idle.touch();
        if let Err(e) = read {
            return lost(&e);
        }
    }
    if options.signal.is_cancelled() {
        return Attempt::Aborted;
    }
    body.skip_buffered();
    match parser.finish(asm).await {
        Ok(reason) => Attempt::Done(reason),
        Err(failure) => failed(failure, options),
    }
}

/// Most of an error response's body kept for its message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

fn lost(error: &http::Error) -> Attempt {
    Attempt::Failed(format!(
        "Connection lost mid-stream: {}",
        error_chain(error)
    ))
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

/// The providers' HTTP client: the system proxies (loopback servers such as Ollama,
/// llama.cpp, LM Studio and the test mock always direct), no overall timeout (idle time is
/// limited per request, see [`DEFAULT_IDLE_TIMEOUT_MS`]). `Err` (TLS setup failed) is
/// reported on each request rather than at construction.
pub fn streaming_client() -> Result<http::Client, String> {
    http::Client::new().map_err(|e| format!("cannot create the HTTP client: {}", error_chain(&e)))
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
}
