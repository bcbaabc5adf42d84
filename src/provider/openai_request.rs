//! OpenAI Chat Completions request building (§A5): compat flags, messages, tools, reasoning.
//! The body is serialised per request from the transcript (`messages.rs` converts it).

use serde_json::{Map, Value, json};

use super::tool_fold::{self, ToolStrategy, compat_flag};
use super::transform::{sanitize_id, transform_messages};
use crate::agent::message::{AgentMessage, ThinkingLevel, ToolDeclaration};
use crate::agent::model::Model;
use crate::agent::stream_contract::{LlmContext, StreamOptions};

mod messages;

/// Provider quirks, detected from the base URL and overridden by `model.compat`.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenAiCompat {
    pub developer_role: bool,
    pub max_tokens_field: String,
    pub usage_in_streaming: bool,
    pub store: bool,
    pub strict_mode: bool,
    pub reasoning_effort: bool,
    pub thinking_format: String,
    pub tool_result_name: bool,
    pub assistant_after_tool_result: bool,
    pub thinking_as_text: bool,
    pub reasoning_content_on_assistant: bool,
    pub finish_reason: bool,
    pub tool_additions: bool,
    pub thinking_budget_field: Option<String>,
}

impl OpenAiCompat {
    pub fn for_model(model: &Model) -> Self {
        let official = model.base_url.contains("api.openai.com");
        let flag = |name: &str, default: bool| compat_flag(model, name).unwrap_or(default);
        let text = |name: &str| {
            model
                .compat
                .as_ref()
                .and_then(|c| c.get(name))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        OpenAiCompat {
            developer_role: flag("supportsDeveloperRole", official),
            max_tokens_field: text("maxTokensField").unwrap_or("max_completion_tokens".into()),
            usage_in_streaming: flag("supportsUsageInStreaming", true),
            store: flag("supportsStore", official),
            strict_mode: flag("supportsStrictMode", true),
            reasoning_effort: flag("supportsReasoningEffort", true),
            thinking_format: text("thinkingFormat").unwrap_or("openai".into()),
            tool_result_name: flag("requiresToolResultName", false),
            assistant_after_tool_result: flag("requiresAssistantAfterToolResult", false),
            thinking_as_text: flag("requiresThinkingAsText", false),
            reasoning_content_on_assistant: flag(
                "requiresReasoningContentOnAssistantMessages",
                false,
            ),
            finish_reason: flag("supportsFinishReason", true),
            tool_additions: flag("supportsMidConvoSystemMessages", false)
                && flag("supportsMidConvoToolAdditions", false),
            thinking_budget_field: text("thinkingTokenBudgetField"),
        }
    }
}

/// Tool-call ids: the call part of `call|item`, sanitized, at most 40 characters.
pub fn normalize_id(id: &str) -> String {
    sanitize_id(id.split('|').next().unwrap_or(id), 40)
}

/// The request body as JSON text.
pub fn build_body(
    model: &Model,
    context: &LlmContext,
    options: &StreamOptions,
) -> Result<String, serde_json::Error> {
    let compat = OpenAiCompat::for_model(model);
    let history = transform_messages(&context.messages, model, normalize_id);
    let wanted = if compat.tool_additions {
        ToolStrategy::Additions
    } else {
        ToolStrategy::None
    };
    let strategy = tool_fold::effective_strategy(wanted, &history);
    let tools = tool_fold::request_tools(strategy, &history);
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    let messages = messages::convert_messages(&history, model, &compat, strategy);
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    if compat.usage_in_streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.store {
        body.insert("store".into(), json!(false));
    }
    if let Some(max) = max_tokens(model, options) {
        body.insert(compat.max_tokens_field.clone(), json!(max));
    }
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let (Some(session), true) = (&options.session_id, compat.store) {
        // Official OpenAI: route a session's requests to the same prompt cache.
        body.insert("prompt_cache_key".into(), json!(session));
    }
    let has_tool_history = history
        .iter()
        .any(|m| matches!(**m, AgentMessage::ToolResult(_)));
    if !tools.is_empty() || has_tool_history {
        let decls = tools.iter().map(|t| tool_json(t, &compat)).collect();
        body.insert("tools".into(), Value::Array(decls));
    }
    if let Some(choice) = options.extra.get("toolChoice") {
        body.insert("tool_choice".into(), choice.clone());
    }
    if model.reasoning {
        add_reasoning(&mut body, options.reasoning.unwrap_or_default(), &compat);
    }
    serde_json::to_string(&body)
}

/// A tool in Chat Completions form.
fn tool_json(tool: &ToolDeclaration, compat: &OpenAiCompat) -> Value {
    let mut function = json!({
        "name": tool.name, "description": tool.description, "parameters": tool.parameters,
    });
    if compat.strict_mode {
        function["strict"] = json!(false);
    }
    json!({"type": "function", "function": function})
}

/// `options.maxTokens`, else the model's limit capped at 32000 (pi's simple-options base).
pub fn max_tokens(model: &Model, options: &StreamOptions) -> Option<u64> {
    options
        .max_tokens
        .or((model.max_tokens > 0).then(|| model.max_tokens.min(32_000)))
}

/// The wire effort of a thinking level (Chat Completions `reasoning_effort`, Responses
/// `reasoning.effort`).
pub(crate) fn effort(level: ThinkingLevel) -> &'static str {
    match level {
        ThinkingLevel::Off => "none",
        ThinkingLevel::Minimal => "minimal",
        ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => "high",
    }
}

/// pi's default thinking budgets per level.
pub fn thinking_budget(level: ThinkingLevel) -> u64 {
    match level {
        ThinkingLevel::Off => 0,
        ThinkingLevel::Minimal => 1024,
        ThinkingLevel::Low => 2048,
        ThinkingLevel::Medium => 8192,
        ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => 16384,
    }
}

fn add_reasoning(body: &mut Map<String, Value>, level: ThinkingLevel, compat: &OpenAiCompat) {
    let on = level != ThinkingLevel::Off;
    let kind = if on { "enabled" } else { "disabled" };
    let mut set = |key: &str, value: Value| {
        body.insert(key.into(), value);
    };
    match compat.thinking_format.as_str() {
        "openrouter" => set("reasoning", json!({"effort": effort(level)})),
        "deepseek" => {
            set("thinking", json!({"type": kind}));
            if on && compat.reasoning_effort {
                set("reasoning_effort", json!(effort(level)));
            }
        }
        "zai" => set("thinking", json!({"type": kind, "clear_thinking": false})),
        "together" => set("reasoning", json!({"enabled": on})),
        "qwen" => set("enable_thinking", json!(on)),
        "qwen-chat-template" => set(
            "chat_template_kwargs",
            json!({"enable_thinking": on, "preserve_thinking": true}),
        ),
        "string-thinking" if on => set("thinking", json!(level.as_str())),
        _ if on && compat.reasoning_effort => set("reasoning_effort", json!(effort(level))),
        _ => {}
    }
    if let (Some(field), true) = (&compat.thinking_budget_field, on) {
        set(field, json!(thinking_budget(level)));
    }
}

#[cfg(test)]
mod tests;
