//! The `anthropic-messages` API: Anthropic Messages streaming at `<baseUrl>/v1/messages`.
//!
//! `model.compat` flags: `forceAdaptiveThinking` (adaptive thinking with an effort instead of a
//! budget), `supportsLongCacheRetention` [true], `supportsEagerToolInputStreaming` (per-tool
//! `eager_input_streaming` instead of the fine-grained streaming beta),
//! `supportsMidConvoSystemMessages` + `supportsMidConvoToolChanges` (tool strategy "changes":
//! inline `tool_addition`/`tool_removal` blocks, beta `inline-tools-2026-09-15`).
//! `StreamOptions::extra` keys: `cacheRetention` (`long` → 1 h cache TTL), `headers`, `timeoutMs`.

use super::anthropic_request::{VERSION, build_request};
use super::anthropic_stream::AnthropicParser;
use super::http_provider::{Call, HttpApi, HttpProvider};
use super::transport::{HttpTarget, apply_model_headers, base_url, stream_headers};
use crate::agent::model::Model;

pub const API: &str = "anthropic-messages";

/// `<baseUrl>/v1/messages` (default base `https://api.anthropic.com`).
pub fn endpoint(model: &Model) -> String {
    let base = base_url(model, "https://api.anthropic.com");
    let base = base.strip_suffix("/v1").unwrap_or(base);
    format!("{base}/v1/messages")
}

/// Request headers: OAuth tokens (`sk-ant-oat…`) go as a bearer token, keys as `x-api-key`.
fn headers(key: Option<&str>, betas: &[&str]) -> Vec<(String, String)> {
    let mut headers = stream_headers();
    headers.push(("anthropic-version".to_string(), VERSION.to_string()));
    let mut betas: Vec<&str> = betas.to_vec();
    match key {
        Some(key) if key.starts_with("sk-ant-oat") => {
            headers.push(("authorization".to_string(), format!("Bearer {key}")));
            betas.push("oauth-2025-04-20");
        }
        Some(key) => headers.push(("x-api-key".to_string(), key.to_string())),
        None => {}
    }
    if !betas.is_empty() {
        headers.push(("anthropic-beta".to_string(), betas.join(",")));
    }
    headers
}

/// Streams from `<baseUrl>/v1/messages`.
pub type AnthropicMessages = HttpProvider<Messages>;

/// The Messages wire API.
pub enum Messages {}

impl HttpApi for Messages {
    type Parser = AnthropicParser;

    fn target(call: Call<'_>, key: Option<String>) -> Result<HttpTarget, serde_json::Error> {
        let request = build_request(call.model, call.context, call.options)?;
        let mut headers = headers(key.as_deref(), &request.betas);
        apply_model_headers(&mut headers, call.model, call.options);
        Ok(HttpTarget {
            url: endpoint(call.model),
            headers,
            body: request.body,
        })
    }

    fn parser(model: &Model) -> AnthropicParser {
        AnthropicParser::new(model.clone())
    }
}
