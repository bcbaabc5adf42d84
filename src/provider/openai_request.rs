//! OpenAI Chat Completions request building (§A5): compat flags, messages, tools, reasoning.
//!
//! The body is serialised straight from the borrowed transcript (`messages.rs`): every turn
//! sends the whole history, so building it as a `serde_json::Value` from copies of every
//! message made each turn's own cost grow with the transcript (issue 6, scenario 4). The
//! messages array reuses what earlier requests of the conversation serialised
//! ([`super::request_cache`]), so a turn serialises only its new messages.

use serde::ser::{Serialize, Serializer};
use serde_json::{Value, json};

use super::request_cache::RequestCache;
use super::tool_fold::{self, ToolStrategy, compat_flag};
use super::transform::{sanitize_id_cow, transform_messages};
use super::{LlmContext, Model, StreamOptions};
use crate::agent::message::{AgentMessage, ThinkingLevel};

pub(crate) mod json_out;
mod messages;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

use json_out::Fields;
use messages::{Message, Text, Tool, convert_messages};

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
    normalize_id_cow(id).into_owned()
}

/// [`normalize_id`], borrowing ids already in that form.
pub fn normalize_id_cow(id: &str) -> std::borrow::Cow<'_, str> {
    sanitize_id_cow(id.split('|').next().unwrap_or(id), 40)
}

/// A top-level field value of the body.
enum Top<'a> {
    Json(Value),
    Ref(&'a Value),
    Str(&'a str),
    /// The messages array, written pre-serialised by [`build_body`].
    Messages,
    /// Already serialised JSON (the cached tool list).
    Raw(String),
}

impl Serialize for Top<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Top::Json(v) => v.serialize(s),
            Top::Ref(v) => v.serialize(s),
            Top::Str(v) => s.serialize_str(v),
            Top::Messages => Err(serde::ser::Error::custom(
                "the messages array is written pre-serialised",
            )),
            Top::Raw(_) => Err(serde::ser::Error::custom(
                "raw JSON is written by build_body",
            )),
        }
    }
}

/// The request body as JSON text, serialised straight from the borrowed transcript (no
/// `serde_json::Value` tree of the history, no copy of it).
pub fn build_body(
    model: &Model,
    context: &LlmContext,
    options: &StreamOptions,
) -> Result<String, serde_json::Error> {
    let compat = OpenAiCompat::for_model(model);
    let history = transform_messages(&context.messages, model, normalize_id_cow);
    let messages = || history.iter().map(|m| &**m);
    let wanted = if compat.tool_additions {
        ToolStrategy::Additions
    } else {
        ToolStrategy::None
    };
    let strategy = tool_fold::effective_strategy(wanted, messages());
    let tools = tool_fold::request_tools(strategy, messages());
    let mut body = Fields::with_capacity(12);
    body.insert("model", Top::Str(&model.id));
    let messages_json =
        render_messages(&history, model, &compat, strategy, &options.request_cache)?;
    body.insert("messages", Top::Messages);
    body.insert("stream", Top::Json(Value::Bool(true)));
    if compat.usage_in_streaming {
        body.insert("stream_options", Top::Json(json!({"include_usage": true})));
    }
    if compat.store {
        body.insert("store", Top::Json(Value::Bool(false)));
    }
    if let Some(max) = max_tokens(model, options) {
        body.insert(&compat.max_tokens_field, Top::Json(json!(max)));
    }
    if let Some(t) = options.temperature {
        body.insert("temperature", Top::Json(json!(t)));
    }
    if let (Some(session), true) = (&options.session_id, compat.store) {
        // Official OpenAI: route a session's requests to the same prompt cache.
        body.insert("prompt_cache_key", Top::Str(session));
    }
    let has_tool_history = messages().any(|m| matches!(m, AgentMessage::ToolResult(_)));
    if !tools.is_empty() || has_tool_history {
        let strict = compat.strict_mode;
        let render = || {
            let decls: Vec<Tool<'_>> = tools.iter().map(|decl| Tool { decl, strict }).collect();
            serde_json::to_string(&decls)
        };
        let text = options
            .request_cache
            .tools_json(ToolsForm { strict }, &tools, render)?;
        body.insert("tools", Top::Raw(text));
    }
    if let Some(choice) = options.extra.get("toolChoice") {
        body.insert("tool_choice", Top::Ref(choice));
    }
    if model.reasoning {
        add_reasoning(&mut body, options.reasoning.unwrap_or_default(), &compat);
    }
    body.to_json_with(|v| match v {
        Top::Messages => Some(messages_json.as_str()),
        Top::Raw(text) => Some(text.as_str()),
        _ => None,
    })
}

/// What shapes the serialised tool list besides the declarations.
#[derive(PartialEq)]
struct ToolsForm {
    strict: bool,
}

/// Everything besides the messages themselves that shapes how a message is rendered.
#[derive(PartialEq)]
struct Form {
    compat: OpenAiCompat,
    reasoning: bool,
    strategy: ToolStrategy,
}

/// The messages array: the system prompt (strategy "none"; it depends on the whole history,
/// so it is never cached), the cached prefix, then the messages rendered fresh.
fn render_messages(
    history: &[std::borrow::Cow<'_, AgentMessage>],
    model: &Model,
    compat: &OpenAiCompat,
    strategy: ToolStrategy,
    cache: &RequestCache,
) -> Result<String, serde_json::Error> {
    let system_role = if model.reasoning && compat.developer_role {
        "developer"
    } else {
        "system"
    };
    let mut out = String::from("[");
    if strategy == ToolStrategy::None {
        let prompt = tool_fold::current_system_prompt(history.iter().map(|m| &**m));
        if !prompt.is_empty() {
            let content = Text::Owned(prompt);
            let system = Message::Text {
                role: system_role,
                content,
            };
            out.push_str(&serde_json::to_string(&system)?);
            out.push(',');
        }
    }
    let form = Form {
        compat: compat.clone(),
        reasoning: model.reasoning,
        strategy,
    };
    cache.append_messages(&mut out, form, history, history.len(), |start, cuts| {
        convert_messages(history, start, system_role, compat, strategy, cuts)
    })?;
    if out.ends_with(',') {
        out.pop();
    }
    out.push(']');
    Ok(out)
}

/// `options.maxTokens`, else the model's limit capped at 32000 (pi's simple-options base).
pub fn max_tokens(model: &Model, options: &StreamOptions) -> Option<u64> {
    options
        .max_tokens
        .or((model.max_tokens > 0).then(|| model.max_tokens.min(32_000)))
}

fn effort(level: ThinkingLevel) -> &'static str {
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

fn add_reasoning<'a>(
    body: &mut Fields<'a, Top<'a>>,
    level: ThinkingLevel,
    compat: &'a OpenAiCompat,
) {
    let on = level != ThinkingLevel::Off;
    let kind = if on { "enabled" } else { "disabled" };
    match compat.thinking_format.as_str() {
        "openrouter" => {
            body.insert("reasoning", Top::Json(json!({"effort": effort(level)})));
        }
        "deepseek" => {
            body.insert("thinking", Top::Json(json!({"type": kind})));
            if on && compat.reasoning_effort {
                body.insert("reasoning_effort", Top::Json(json!(effort(level))));
            }
        }
        "zai" => {
            let thinking = json!({"type": kind, "clear_thinking": false});
            body.insert("thinking", Top::Json(thinking));
        }
        "together" => {
            body.insert("reasoning", Top::Json(json!({"enabled": on})));
        }
        "qwen" => {
            body.insert("enable_thinking", Top::Json(json!(on)));
        }
        "qwen-chat-template" => {
            let kwargs = json!({"enable_thinking": on, "preserve_thinking": true});
            body.insert("chat_template_kwargs", Top::Json(kwargs));
        }
        "string-thinking" if on => {
            body.insert("thinking", Top::Json(json!(level.as_str())));
        }
        _ if on && compat.reasoning_effort => {
            body.insert("reasoning_effort", Top::Json(json!(effort(level))));
        }
        _ => {}
    }
    if let (Some(field), true) = (&compat.thinking_budget_field, on) {
        body.insert(field, Top::Json(json!(thinking_budget(level))));
    }
}
