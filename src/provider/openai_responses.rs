//! The `openai-responses` API: OpenAI's Responses streaming (`<baseUrl>/responses`), which
//! OpenAI's reasoning models use so their encrypted reasoning survives across tool turns
//! without server-side state (`store: false`, `include: ["reasoning.encrypted_content"]`).
//!
//! pi's representation, so sessions stay interoperable: a reasoning item becomes a thinking
//! block (its summary as the text) whose `thinkingSignature` is the whole item as JSON, replayed
//! verbatim; assistant text carries `textSignature` `{"v":1,"id":<message item id>}`; tool calls
//! have ids `<call_id>|<item id>`. `model.compat` flags: `supportsDeveloperRole` [true],
//! `supportsStrictMode` [official OpenAI], `supportsMaxOutputTokens` [true],
//! `supportsLongCacheRetention` [true]. `StreamOptions::extra` keys: `toolChoice`,
//! `cacheRetention` (`none`: no prompt cache key or session headers; `long`: 24 h retention),
//! `headers`, `timeoutMs`.
//!
//! Where this differs from pi 1.6: encrypted reasoning is asked for whenever the model reasons
//! (pi: only with thinking on; an effort-less request still reasons), a stored reasoning item
//! without encrypted content is not replayed (the API cannot resolve it with `store: false`),
//! and OpenAI's `input_transformations` are not recorded as message diagnostics.

use super::http_provider::{Call, HttpApi, HttpProvider};
use super::openai_responses_request::{build_body, cache_retention};
use super::openai_responses_stream::ResponsesParser;
use super::transport::{HttpTarget, apply_model_headers, base_url, stream_headers};
use crate::agent::model::Model;
use crate::agent::stream_contract::StreamOptions;

pub const API: &str = "openai-responses";

/// `<baseUrl>/responses` (default base `https://api.openai.com/v1`).
pub fn endpoint(model: &Model) -> String {
    let base = base_url(model, "https://api.openai.com/v1");
    format!("{base}/responses")
}

/// The headers of one request: pi's session affinity (`session-id`, `x-client-request-id`)
/// keeps a session on one backend, whose prompt cache it reuses.
fn headers(model: &Model, options: &StreamOptions, key: Option<String>) -> Vec<(String, String)> {
    let mut headers = stream_headers();
    if let Some(key) = key {
        headers.push(("authorization".to_string(), format!("Bearer {key}")));
    }
    if let (Some(session), false) = (&options.session_id, cache_retention(options) == "none") {
        headers.push(("session-id".to_string(), session.clone()));
        headers.push(("x-client-request-id".to_string(), session.clone()));
    }
    apply_model_headers(&mut headers, model, options);
    headers
}

/// Streams from `<baseUrl>/responses`.
pub type OpenAiResponses = HttpProvider<Responses>;

/// The Responses wire API.
pub enum Responses {}

impl HttpApi for Responses {
    type Parser = ResponsesParser;

    fn target(call: Call<'_>, key: Option<String>) -> Result<HttpTarget, serde_json::Error> {
        Ok(HttpTarget {
            url: endpoint(call.model),
            headers: headers(call.model, call.options, key),
            body: build_body(call.model, call.context, call.options)?,
        })
    }

    fn parser(model: &Model) -> ResponsesParser {
        ResponsesParser::new(model.clone())
    }
}
