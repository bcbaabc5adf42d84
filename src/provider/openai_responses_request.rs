//! OpenAI Responses request building (pi's `openai-responses.ts` `buildParams`): stateless
//! (`store: false`), the transcript as `input` items (`input.rs`), function tools, and
//! reasoning with encrypted content included so it can be replayed on the next request.

use serde_json::{Map, Value, json};

use super::openai_request::{effort, max_tokens};
use super::tool_fold::{self, ToolStrategy, compat_flag};
use super::transform::transform_messages;
use crate::agent::message::{ThinkingLevel, ToolDeclaration};
use crate::agent::model::Model;
use crate::agent::stream_contract::{LlmContext, StreamOptions};

mod input;

pub use input::{normalize_id, short_hash};

/// The Responses API rejects `max_output_tokens` below 16 (pi issue 6265).
const MIN_OUTPUT_TOKENS: u64 = 16;
/// OpenAI's limit on `prompt_cache_key`, in characters.
const PROMPT_CACHE_KEY_MAX: usize = 64;

/// Provider quirks (pi's names), from `model.compat`.
pub struct ResponsesCompat {
    /// `supportsDeveloperRole` [true]: instructions of reasoning models go as `developer`.
    pub developer_role: bool,
    /// `supportsStrictMode` [official OpenAI]: tools carry `strict: false`.
    pub strict_mode: bool,
    /// `supportsMaxOutputTokens` [true].
    pub max_output_tokens: bool,
    /// `supportsLongCacheRetention` [true]: `cacheRetention: "long"` keeps the prompt cache 24 h.
    pub long_cache_retention: bool,
}

impl ResponsesCompat {
    pub fn for_model(model: &Model) -> Self {
        let official = model.base_url.contains("api.openai.com");
        let flag = |name: &str, default: bool| compat_flag(model, name).unwrap_or(default);
        ResponsesCompat {
            developer_role: flag("supportsDeveloperRole", true),
            strict_mode: flag("supportsStrictMode", official),
            max_output_tokens: flag("supportsMaxOutputTokens", true),
            long_cache_retention: flag("supportsLongCacheRetention", true),
        }
    }
}

/// The request body as JSON text.
pub fn build_body(
    model: &Model,
    context: &LlmContext,
    options: &StreamOptions,
) -> Result<String, serde_json::Error> {
    let compat = ResponsesCompat::for_model(model);
    let history = transform_messages(&context.messages, model, normalize_id);
    // Mid-conversation tool declarations need OpenAI's `additional_tools` items, which pi only
    // uses behind compat flags: every request declares the current tools at the top level.
    let tools = tool_fold::request_tools(ToolStrategy::None, &history);
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    let items = input::convert_input(&history, model, &compat);
    body.insert("input".into(), Value::Array(items));
    body.insert("stream".into(), json!(true));
    let retention = cache_retention(options);
    if let (Some(session), false) = (&options.session_id, retention == "none") {
        let key: String = session.chars().take(PROMPT_CACHE_KEY_MAX).collect();
        body.insert("prompt_cache_key".into(), json!(key));
    }
    if retention == "long" && compat.long_cache_retention {
        body.insert("prompt_cache_retention".into(), json!("24h"));
    }
    body.insert("store".into(), json!(false));
    if let (Some(max), true) = (max_tokens(model, options), compat.max_output_tokens) {
        body.insert(
            "max_output_tokens".into(),
            json!(max.max(MIN_OUTPUT_TOKENS)),
        );
    }
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if !tools.is_empty() {
        let decls = tools.iter().map(|t| tool_json(t, &compat)).collect();
        body.insert("tools".into(), Value::Array(decls));
    }
    if let Some(choice) = options.extra.get("toolChoice") {
        body.insert("tool_choice".into(), choice.clone());
    }
    let level = options.reasoning.unwrap_or_default();
    if model.reasoning && level != ThinkingLevel::Off {
        // Off sends no `reasoning` at all: pi's built-in OpenAI models map off to null (the
        // API's `none` effort is refused by o3, o4-mini and gpt-5).
        body.insert(
            "reasoning".into(),
            json!({"effort": effort(level), "summary": "auto"}),
        );
    }
    if model.reasoning {
        // Unlike pi, also with thinking off: such a model still reasons at its default effort,
        // and a reasoning item without its encrypted content cannot be replayed statelessly.
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    serde_json::to_string(&body)
}

/// `StreamOptions::extra.cacheRetention`: `none`, `short` (the default) or `long`.
pub fn cache_retention(options: &StreamOptions) -> &str {
    let retention = options.extra.get("cacheRetention").and_then(Value::as_str);
    retention.unwrap_or("short")
}

/// A function tool in Responses form (flat, not nested under `function`).
fn tool_json(tool: &ToolDeclaration, compat: &ResponsesCompat) -> Value {
    let mut decl = json!({
        "type": "function", "name": tool.name, "description": tool.description,
        "parameters": tool.parameters,
    });
    if compat.strict_mode {
        decl["strict"] = json!(false);
    }
    decl
}

#[cfg(test)]
mod tests;
