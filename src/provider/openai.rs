//! The `openai-completions` API: OpenAI Chat Completions streaming, which also serves Ollama,
//! vLLM, llama.cpp, LM Studio and proxies by base URL.
//!
//! `model.compat` flags (pi's names; defaults in brackets): `supportsDeveloperRole` [official
//! OpenAI], `maxTokensField` \[`max_completion_tokens`\], `supportsUsageInStreaming` [true],
//! `supportsStore` [official OpenAI], `supportsStrictMode` [true], `supportsReasoningEffort`
//! [true], `thinkingFormat` [`openai`; also `openrouter`, `deepseek`, `zai`, `together`, `qwen`,
//! `qwen-chat-template`, `string-thinking`], `thinkingTokenBudgetField`,
//! `requiresToolResultName`, `requiresAssistantAfterToolResult`, `requiresThinkingAsText`,
//! `requiresReasoningContentOnAssistantMessages`, `supportsFinishReason` [true],
//! `supportsMidConvoSystemMessages` + `supportsMidConvoToolAdditions` (tool strategy
//! "additions"), `sendSessionAffinityHeaders` + `sessionAffinityFormat`.
//! `StreamOptions::extra` keys: `toolChoice`, `headers` (null removes a default), `timeoutMs`.

use super::http_provider::{Call, HttpApi, HttpProvider};
use super::openai_request::{OpenAiCompat, build_body};
use super::openai_stream::OpenAiParser;
use super::transport::{HttpTarget, apply_model_headers, base_url, stream_headers};
use crate::agent::model::Model;
use crate::agent::stream_contract::StreamOptions;

pub const API: &str = "openai-completions";

/// `<baseUrl>/chat/completions` (default base `https://api.openai.com/v1`).
pub fn endpoint(model: &Model) -> String {
    let base = base_url(model, "https://api.openai.com/v1");
    format!("{base}/chat/completions")
}

/// Session-affinity headers (compat `sendSessionAffinityHeaders`, `sessionAffinityFormat`):
/// keep a session's requests on one backend so its prompt cache is reused.
fn session_headers(model: &Model, options: &StreamOptions) -> Vec<(String, String)> {
    let compat = model.compat.as_ref();
    let enabled = compat
        .and_then(|c| c.get("sendSessionAffinityHeaders"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let (Some(session), true) = (&options.session_id, enabled) else {
        return Vec::new();
    };
    let format = compat
        .and_then(|c| c.get("sessionAffinityFormat"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or("openai");
    let names: &[&str] = match format {
        "openrouter" => &["x-session-id"],
        "openai-nosession" => &["x-client-request-id", "x-session-affinity"],
        _ => &["session_id", "x-client-request-id", "x-session-affinity"],
    };
    names
        .iter()
        .map(|name| (name.to_string(), session.clone()))
        .collect()
}

/// Streams from `<baseUrl>/chat/completions`.
pub type OpenAiCompletions = HttpProvider<ChatCompletions>;

/// The Chat Completions wire API.
pub enum ChatCompletions {}

impl HttpApi for ChatCompletions {
    type Parser = OpenAiParser;

    fn target(call: Call<'_>, key: Option<String>) -> Result<HttpTarget, serde_json::Error> {
        let mut headers = stream_headers();
        if let Some(key) = key {
            headers.push(("authorization".to_string(), format!("Bearer {key}")));
        }
        headers.extend(session_headers(call.model, call.options));
        apply_model_headers(&mut headers, call.model, call.options);
        Ok(HttpTarget {
            url: endpoint(call.model),
            headers,
            body: build_body(call.model, call.context, call.options)?,
        })
    }

    fn parser(model: &Model) -> OpenAiParser {
        OpenAiParser::new(model.clone(), OpenAiCompat::for_model(model).finish_reason)
    }
}
