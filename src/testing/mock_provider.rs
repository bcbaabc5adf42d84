//! [`MockProvider`]: the loopback HTTP server that serves scripted responses and records requests.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::http::{self, HttpRequest, StreamPlan};
use super::invariants::check_history;
use super::script::{MockResponse, MockScript};
use super::wire::{self, WireApi};

/// One request as the mock saw it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRequest {
    /// 0-based arrival order.
    pub index: usize,
    /// Milliseconds since the server started, when the request was read (or refused).
    pub elapsed_ms: u64,
    /// Empty for a refused connection (closed before reading).
    pub method: String,
    pub path: String,
    /// Lowercased header names.
    pub headers: BTreeMap<String, String>,
    /// The JSON body (`null` when absent or not JSON).
    pub body: Value,
    /// Which scripted response answered it (`None`: 404, invariant failure, or script exhausted).
    pub response_index: Option<usize>,
    /// The HTTP status sent (0 for a refused or cut connection before the status line).
    pub status: u16,
    /// Set when the history invariants failed; the request was answered with 400.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub violation: Option<String>,
    pub refused: bool,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

struct State {
    queue: VecDeque<(usize, MockResponse)>,
    next_response: usize,
    requests: Vec<RecordedRequest>,
    /// How long writing each answer took, in the order the writes ended.
    write_times: Vec<Duration>,
    log: Option<std::fs::File>,
}

struct Shared {
    state: Mutex<State>,
    started: Instant,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not wedge the server: recover the data.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, mut request: RecordedRequest) {
        let mut state = self.lock();
        request.index = state.requests.len();
        if let Some(log) = state.log.as_mut()
            && let Ok(line) = serde_json::to_string(&request)
        {
            // Logging is best effort: a full disk must not break the served response.
            let _ = writeln!(log, "{line}");
        }
        state.requests.push(request);
    }
}

/// A scripted model provider on `127.0.0.1:<port>` speaking OpenAI Chat Completions, OpenAI
/// Responses and Anthropic Messages streaming. Stops when dropped.
pub struct MockProvider {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
}

impl MockProvider {
    /// Starts serving `script` on an ephemeral loopback port.
    pub async fn start(script: MockScript) -> std::io::Result<MockProvider> {
        MockProvider::start_with(script, 0, None).await
    }

    /// Starts on `port` (0 = ephemeral), appending each request as a JSON line to `log`.
    pub async fn start_with(
        script: MockScript,
        port: u16,
        log: Option<&Path>,
    ) -> std::io::Result<MockProvider> {
        let log = match log {
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            ),
            None => None,
        };
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let next_response = script.responses.len();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: script.responses.into_iter().enumerate().collect(),
                next_response,
                requests: Vec::new(),
                write_times: Vec::new(),
                log,
            }),
            started: Instant::now(),
        });
        let shutdown = CancellationToken::new();
        tokio::spawn(accept_loop(listener, shared.clone(), shutdown.clone()));
        Ok(MockProvider {
            addr,
            shared,
            shutdown,
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:<port>/v1` (clients append `/chat/completions` or `/responses`).
    pub fn openai_base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port())
    }

    /// `http://127.0.0.1:<port>` (clients append `/v1/messages`).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port())
    }

    /// The line the binary prints: `{"port","openaiBaseUrl","anthropicBaseUrl"}`.
    pub fn announcement(&self) -> Value {
        json!({
            "port": self.port(),
            "openaiBaseUrl": self.openai_base_url(),
            "anthropicBaseUrl": self.anthropic_base_url(),
        })
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// How long writing each answer took (from the status line to the last byte handed to the
    /// socket), in the order the writes ended: the benchmarks' measure of the mock's own
    /// serving time during a client's run.
    pub fn write_times(&self) -> Vec<Duration> {
        self.shared.lock().write_times.clone()
    }

    /// Every history-invariant violation so far.
    pub fn violations(&self) -> Vec<String> {
        let state = self.shared.lock();
        state
            .requests
            .iter()
            .filter_map(|r| r.violation.clone())
            .collect()
    }

    /// Appends a response to the script.
    pub fn push_response(&self, response: MockResponse) {
        let mut state = self.shared.lock();
        let index = state.next_response;
        state.next_response += 1;
        state.queue.push_back((index, response));
    }

    /// Scripted responses not yet served.
    pub fn remaining(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// Stops accepting connections (also done on drop).
    pub fn shutdown(&self) {
        self.shutdown.cancel();
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, shutdown: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((socket, _)) = accepted else {
            // Transient accept errors (e.g. too many open files): back off briefly.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let shared = shared.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = shutdown.cancelled() => {}
                result = serve_connection(socket, &shared) => {
                    if let Err(error) = result {
                        tracing::debug!("mock provider connection ended: {error}");
                    }
                }
            }
        });
    }
}

fn elapsed_ms(shared: &Shared) -> u64 {
    u64::try_from(shared.started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Pops the front response if it says to refuse the connection.
fn take_refusal(shared: &Shared) -> Option<usize> {
    let mut state = shared.lock();
    if state.queue.front().is_some_and(|(_, r)| r.refuse) {
        return state.queue.pop_front().map(|(index, _)| index);
    }
    None
}

async fn serve_connection(mut socket: TcpStream, shared: &Shared) -> std::io::Result<()> {
    if let Some(index) = take_refusal(shared) {
        shared.record(RecordedRequest {
            index: 0,
            elapsed_ms: elapsed_ms(shared),
            method: String::new(),
            path: String::new(),
            headers: BTreeMap::new(),
            body: Value::Null,
            response_index: Some(index),
            status: 0,
            violation: None,
            refused: true,
        });
        drop(socket);
        return Ok(());
    }
    let request = http::read_request(&mut socket).await?;
    let mut record = RecordedRequest {
        index: 0,
        elapsed_ms: elapsed_ms(shared),
        method: request.method.clone(),
        path: request.path.clone(),
        headers: request.headers.clone(),
        body: serde_json::from_slice(&request.body).unwrap_or(Value::Null),
        response_index: None,
        status: 0,
        violation: None,
        refused: false,
    };
    // Record before answering so a client that finished reading always finds its request.
    let reply = decide(shared, &request, &mut record);
    shared.record(record);
    let started = Instant::now();
    let result = reply.write(&mut socket).await;
    shared.lock().write_times.push(started.elapsed());
    result
}

fn route(request: &HttpRequest) -> Option<WireApi> {
    let path = request.path.split('?').next().unwrap_or_default();
    match (request.method.as_str(), path) {
        ("POST", "/v1/chat/completions" | "/chat/completions") => Some(WireApi::OpenAi),
        ("POST", "/v1/responses" | "/responses") => Some(WireApi::OpenAiResponses),
        ("POST", "/v1/messages") => Some(WireApi::Anthropic),
        _ => None,
    }
}

fn error_body(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}

/// What to send back.
enum Reply {
    Plain {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// Rendered while it is written (see [`wire::render_stream`]).
    Stream {
        api: WireApi,
        response: Box<MockResponse>,
        id: String,
        model: String,
        plan: StreamPlan,
    },
}

impl Reply {
    fn plain(status: u16, body: String) -> Reply {
        Reply::Plain {
            status,
            headers: Vec::new(),
            body,
        }
    }

    async fn write(self, socket: &mut TcpStream) -> std::io::Result<()> {
        match self {
            Reply::Plain {
                status,
                headers,
                body,
            } => http::write_plain(socket, status, &headers, &body).await,
            Reply::Stream {
                api,
                response,
                id,
                model,
                plan,
            } => {
                let chunks = wire::render_stream(api, &response, &id, &model);
                http::write_sse(socket, chunks, &plan).await
            }
        }
    }
}

/// Another serving of a repeating response: its tool calls get ids of their own.
fn repeated(response: &MockResponse, request: usize) -> MockResponse {
    let mut response = response.clone();
    for call in &mut response.tool_calls {
        call.id = format!("{}-{request}", call.id);
    }
    response
}

fn decide(shared: &Shared, request: &HttpRequest, record: &mut RecordedRequest) -> Reply {
    let Some(api) = route(request) else {
        record.status = 404;
        let message = format!("no route for {} {}", request.method, request.path);
        return Reply::plain(404, error_body("not_found", &message));
    };
    if let Err(violation) = check_history(api, &record.body) {
        let message = format!("mock provider: history invariant violated: {violation}");
        tracing::error!("{message}");
        record.status = 400;
        record.violation = Some(violation);
        return Reply::plain(400, error_body("invalid_request_error", &message));
    }
    let next = {
        let mut state = shared.lock();
        let request = state.requests.len();
        match state.queue.front() {
            Some((index, response)) if response.repeat => {
                Some((*index, repeated(response, request)))
            }
            _ => state.queue.pop_front(),
        }
    };
    let Some((index, response)) = next else {
        record.status = 500;
        return Reply::plain(500, error_body("mock_error", "no more scripted responses"));
    };
    record.response_index = Some(index);
    // A 200 with a body is a plain (non-streaming) answer, like a server ignoring `stream`.
    if let Some(status) = response
        .status
        .filter(|s| *s != 200 || response.body.is_some())
    {
        record.status = status;
        let body = response
            .body
            .clone()
            .unwrap_or_else(|| error_body("mock_error", &format!("scripted HTTP {status}")));
        let headers = response
            .retry_after
            .iter()
            .map(|r| ("Retry-After", r.header_value()))
            .collect();
        return Reply::Plain {
            status,
            headers,
            body,
        };
    }
    record.status = 200;
    let requested_model = record
        .body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock-model");
    let id = response
        .id
        .clone()
        .unwrap_or_else(|| format!("mock-{index}"));
    Reply::Stream {
        api,
        id,
        model: requested_model.to_string(),
        plan: StreamPlan {
            delay: response.delay_ms.map(Duration::from_millis),
            write_bytes: response.write_bytes,
            disconnect_after_chunks: response.disconnect_after_chunks,
            malformed_after_chunks: response.malformed_after_chunks,
            malformed_chunk: wire::malformed_chunk(api),
        },
        response: Box::new(response),
    }
}
