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
use super::assembler::{Assembler, spawn_provider};
use super::transport::{HttpClient, HttpTarget, apply_model_headers, checked_target, drive};
use crate::agent::model::Model;
use crate::agent::stream_contract::{AssistantEventStream, LlmContext, StreamFn, StreamOptions};

pub const API: &str = "anthropic-messages";

pub struct AnthropicMessages {
    client: HttpClient,
}

impl Default for AnthropicMessages {
    fn default() -> Self {
        AnthropicMessages::new()
    }
}

impl AnthropicMessages {
    pub fn new() -> Self {
        AnthropicMessages {
            client: HttpClient::new(),
        }
    }
}

/// `<baseUrl>/v1/messages` (default base `https://api.anthropic.com`).
pub fn endpoint(model: &Model) -> String {
    let base = if model.base_url.is_empty() {
        "https://api.anthropic.com"
    } else {
        &model.base_url
    };
    let base = base.trim_end_matches('/');
    let base = base.strip_suffix("/v1").unwrap_or(base);
    format!("{base}/v1/messages")
}

/// Request headers: OAuth tokens (`sk-ant-oat…`) go as a bearer token, keys as `x-api-key`.
fn headers(key: Option<&str>, betas: &[&str]) -> Vec<(String, String)> {
    let mut headers = vec![
        ("content-type".to_string(), "application/json".to_string()),
        ("accept".to_string(), "text/event-stream".to_string()),
        ("anthropic-version".to_string(), VERSION.to_string()),
    ];
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

impl StreamFn for AnthropicMessages {
    fn stream(
        &self,
        model: &Model,
        context: LlmContext,
        options: StreamOptions,
    ) -> AssistantEventStream {
        let client = self.client.clone();
        let model = model.clone();
        spawn_provider(&model.clone(), move |sink| async move {
            let asm = Assembler::new(sink, &model);
            let build = |key: Option<String>| {
                let request = build_request(&model, &context, &options)?;
                let mut headers = headers(key.as_deref(), &request.betas);
                apply_model_headers(&mut headers, &model, &options);
                Ok(HttpTarget {
                    url: endpoint(&model),
                    headers,
                    body: request.body,
                })
            };
            let Some((asm, target)) = checked_target(asm, &model, &options, build).await else {
                return;
            };
            // The body owns what it needs; the loop's next append must not find the
            // transcript still shared (it would copy it).
            drop(context);
            drive(&client, target, &options, asm, || {
                AnthropicParser::new(model.clone())
            })
            .await;
        })
    }
}
