//! Test doubles that run for real: a scripted model provider served over loopback HTTP.
//!
//! [`MockProvider`] is a hand-written HTTP/1.1 server on `127.0.0.1:<port>` (no web framework)
//! serving `POST /v1/chat/completions` (OpenAI Chat Completions streaming: `data:` chunks,
//! then `data: [DONE]`), `POST /v1/responses` (OpenAI Responses streaming: named events
//! `response.created` … `response.completed`) and `POST /v1/messages` (Anthropic Messages
//! streaming: named events `message_start` … `message_stop`). Each request pops the next
//! scripted response, whatever the API; every request is recorded ([`RecordedRequest`]:
//! method, path, lowercased headers, JSON body, arrival time in ms since start) and, with a
//! log file, appended to it as a JSON line. Every request's history is checked: each tool result must answer an earlier unanswered tool
//! call, and no call may be left unanswered (Responses, with `store: false`: every replayed
//! reasoning item carries its `encrypted_content`); a violation is answered with HTTP 400
//! "mock provider: history invariant violated: …" (and does not consume a response). When the
//! script runs out the answer is HTTP 500 "no more scripted responses". SSE bodies use chunked
//! transfer encoding, so a cut connection is visible to the client as a truncated body.
//!
//! # Script format (JSON)
//!
//! ```json
//! {"responses": [
//!   {"text": "Hello"},
//!   {"thinking": "hmm", "text": "Answer", "usage": {"input": 10, "output": 5, "cacheRead": 3}},
//!   {"toolCalls": [{"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}}]},
//!   {"text": "slow", "chunkSize": 4, "delayMs": 50},
//!   {"status": 429, "retryAfter": 1},
//!   {"disconnectAfterChunks": 3, "text": "partial"} ]}
//! ```
//!
//! Keys of a response (all optional; unknown keys are an error):
//! - content, streamed in this order: `thinking` (OpenAI: `reasoning_content` delta, or the field
//!   named by `reasoningField`; Anthropic: a `thinking` block closed by a `signature_delta` with
//!   `signature`, default `sig-mock`; Responses: a `reasoning` item whose summary is the text and
//!   whose `encrypted_content` is `signature`, default `enc-<response id>`), `redactedThinking`
//!   (Anthropic: a `redacted_thinking` block with that `data`), `text`, `toolCalls`
//!   (`[{id, name, arguments}]`, or `rawArguments` to stream verbatim text such as truncated
//!   JSON). `interleave: true` streams several OpenAI tool calls' argument deltas round-robin; `encryptedReasoning: true` sends
//!   OpenRouter-style `reasoning_details` (`reasoning.encrypted`, `id` = each call's id, `data`
//!   `enc-<id>`) before the tool calls.
//! - `usage`: `{input, output, cacheRead, cacheWrite, reasoning}` in pi's sense (`input` is
//!   non-cached). OpenAI: a final `choices: []` chunk with `prompt_tokens` = input + cacheRead +
//!   cacheWrite, `prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens`.
//!   Anthropic: `message_start` usage (input, cache read/creation) and `message_delta` output.
//!   Responses: `response.completed` usage with `input_tokens_details.cached_tokens` and
//!   `output_tokens_details.reasoning_tokens`.
//! - `stopReason`: the raw wire stop reason (`finish_reason` / `stop_reason`), e.g. `length` or an
//!   unknown value; default `stop`/`tool_calls` (OpenAI), `end_turn`/`tool_use` (Anthropic).
//!   Responses: the terminal status, `completed` (default), `incomplete` (reason
//!   `max_output_tokens`, as `response.incomplete`) or `failed` (as `response.failed`).
//! - delivery: `chunkSize` (split text/thinking/arguments into deltas of at most n bytes, never
//!   splitting a character), `writeBytes` (write the SSE byte stream in n-byte HTTP chunks,
//!   deliberately splitting UTF-8 characters across chunk boundaries), `delayMs` (before each SSE
//!   chunk, or each write with `writeBytes`).
//! - faults: `status` + `body` (+ `retryAfter`: seconds or a raw header value such as an HTTP
//!   date) answers with that status instead of a stream (`status` 200 with a `body` is a plain
//!   JSON answer, as from a server that ignores `stream`); `refuse: true` closes the connection
//!   without reading it; `disconnectAfterChunks: n` cuts the connection after n SSE chunks;
//!   `malformedAfterChunks: n` inserts a non-JSON `data:` line after n chunks; `omitDone` drops
//!   `data: [DONE]` / `message_stop`; `omitStopReason` drops the `finish_reason` / the
//!   `message_delta` (Responses: both drop the terminal `response.completed`); `streamError`
//!   (Anthropic) ends the stream with an `overloaded_error` `event: error` (the only event when the
//!   response has no content; Responses: an `error` event with code `server_error` after the
//!   output items).
//! - `id` (default `mock-<n>`), `model` (default: the requested model).
//! - `repeat: true` serves the response to every later request (a model stuck in a loop); each
//!   serving's tool call ids get `-<request index>` appended.
//!
//! The binary `agent-lsp-mock --script FILE [--port N] [--log FILE.jsonl]` serves a script file
//! and prints [`MockProvider::announcement`] as one JSON line; it stops when killed or when its
//! stdin (a pipe, socket or terminal) closes, and with stdin at `/dev/null` serves until killed.

mod http;
mod invariants;
pub mod mcp_server;
mod mock_provider;
mod script;
#[cfg(test)]
pub mod tags;
mod wire;
mod wire_responses;

pub use invariants::check_history;
pub use mock_provider::{MockProvider, RecordedRequest};
pub use script::{MockResponse, MockScript, MockToolCall, MockUsage, RetryAfter, ScriptError};
pub use wire::WireApi;
