//! Anthropic Messages request building (§A4, §A13): system block, messages with merged tool
//! results, thinking replay, tools with cache breakpoints, thinking budgets and betas.
//!
//! The body is serialised straight from the borrowed transcript (`messages.rs`), without a
//! `serde_json::Value` tree of the history or a copy of it (issue 6, scenario 4); the messages
//! array reuses what earlier requests of the conversation serialised
//! ([`super::request_cache`]), so a turn serialises only its new messages.

use serde::ser::{Serialize, Serializer};
use serde_json::{Value, json};

use std::borrow::Cow;

use super::openai_request::json_out::Fields;
use super::openai_request::thinking_budget;
use super::request_cache::RequestCache;
use super::tool_fold::{self, ToolStrategy, compat_flag, current_system_prompt};
use super::transform::{sanitize_id, sanitize_id_cow, transform_messages};
use super::{LlmContext, Model, StreamOptions};
use crate::agent::message::{AgentMessage, ThinkingLevel};
use crate::agent::transcript::system_message_text;

mod messages;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

use messages::{Tool, convert_messages, last_user_source};

pub const VERSION: &str = "2023-06-01";
const BETA_FINE_GRAINED: &str = "fine-grained-tool-streaming-2025-05-14";
const BETA_INTERLEAVED: &str = "interleaved-thinking-2025-05-14";
const BETA_INLINE_TOOLS: &str = "inline-tools-2026-09-15";

/// A built request: body plus the betas it needs.
pub struct AnthropicRequest {
    /// The JSON body, serialised.
    pub body: String,
    pub betas: Vec<&'static str>,
}

pub fn normalize_id(id: &str) -> String {
    sanitize_id(id, 64)
}

/// [`normalize_id`], borrowing ids already in that form.
pub fn normalize_id_cow(id: &str) -> Cow<'_, str> {
    sanitize_id_cow(id, 64)
}

/// The tool strategy: "changes" when the model can take mid-conversation tool changes.
fn wanted_strategy(model: &Model) -> ToolStrategy {
    let flag = |name| compat_flag(model, name).unwrap_or(false);
    if flag("supportsMidConvoSystemMessages") && flag("supportsMidConvoToolChanges") {
        ToolStrategy::Changes
    } else {
        ToolStrategy::None
    }
}

/// A top-level field value of the body.
enum Top<'a> {
    Json(Value),
    Str(&'a str),
    System {
        text: String,
        cache: &'a Value,
    },
    /// The messages array, written pre-serialised by [`build_request`].
    Messages,
    /// Already serialised JSON (the cached tool list).
    Raw(String),
}

impl Serialize for Top<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Top::Json(v) => v.serialize(s),
            Top::Str(v) => s.serialize_str(v),
            Top::System { text, cache } => {
                let block = json!({"type": "text", "text": text, "cache_control": cache});
                s.collect_seq([block])
            }
            Top::Messages => Err(serde::ser::Error::custom(
                "the messages array is written pre-serialised",
            )),
            Top::Raw(_) => Err(serde::ser::Error::custom(
                "raw JSON is written by build_request",
            )),
        }
    }
}

/// The request, its body serialised straight from the borrowed transcript.
pub fn build_request(
    model: &Model,
    context: &LlmContext,
    options: &StreamOptions,
) -> Result<AnthropicRequest, serde_json::Error> {
    let history = transform_messages(&context.messages, model, normalize_id_cow);
    let messages = || history.iter().map(|m| &**m);
    let strategy = tool_fold::effective_strategy(wanted_strategy(model), messages());
    let tools = tool_fold::request_tools(strategy, messages());
    let cache = cache_control(model, options);
    let mut body = Fields::with_capacity(10);
    let mut betas = Vec::new();
    body.insert("model", Top::Str(&model.id));
    let level = options
        .reasoning
        .filter(|_| model.reasoning)
        .unwrap_or_default();
    let (max_tokens, budget) = token_limits(model, options, level);
    body.insert("max_tokens", Top::Json(json!(max_tokens)));
    body.insert("stream", Top::Json(Value::Bool(true)));
    let system_text = match strategy {
        ToolStrategy::None => current_system_prompt(messages()),
        _ => messages()
            .find_map(AgentMessage::as_system)
            .map(system_message_text)
            .unwrap_or_default(),
    };
    if !system_text.is_empty() {
        let system = Top::System {
            text: system_text,
            cache: &cache,
        };
        body.insert("system", system);
    }
    let messages_json = render_messages(&history, strategy, &cache, &options.request_cache)?;
    body.insert("messages", Top::Messages);
    if !tools.is_empty() {
        // Per-tool eager input streaming replaces the fine-grained streaming beta where supported.
        let eager = compat_flag(model, "supportsEagerToolInputStreaming").unwrap_or(false);
        if !eager {
            betas.push(BETA_FINE_GRAINED);
        }
        let last = tools.len() - 1;
        let render = || {
            let decls = tools.iter().enumerate().map(|(i, decl)| Tool {
                decl,
                cache: (i == last).then_some(&cache),
                eager,
            });
            serde_json::to_string(&decls.collect::<Vec<_>>())
        };
        let form = ToolsForm {
            cache: cache.to_string(),
            eager,
        };
        let text = options.request_cache.tools_json(form, &tools, render)?;
        body.insert("tools", Top::Raw(text));
    }
    if strategy == ToolStrategy::Changes {
        betas.push(BETA_INLINE_TOOLS);
    }
    add_thinking(&mut body, &mut betas, model, options, level, budget);
    Ok(AnthropicRequest {
        body: body.to_json_with(|v| match v {
            Top::Messages => Some(messages_json.as_str()),
            Top::Raw(text) => Some(text.as_str()),
            _ => None,
        })?,
        betas,
    })
}

/// What shapes the serialised tool list besides the declarations.
#[derive(PartialEq)]
struct ToolsForm {
    cache: String,
    eager: bool,
}

/// What shapes a message's rendering besides the messages (the cache breakpoint goes on the
/// last user message, which is always rendered fresh).
#[derive(PartialEq)]
struct Form(ToolStrategy);

/// The messages array: the cached prefix (ending before the message that opens the last user
/// message, which carries the cache breakpoint), then the messages rendered fresh.
fn render_messages(
    history: &[Cow<'_, AgentMessage>],
    strategy: ToolStrategy,
    cache_control: &Value,
    cache: &RequestCache,
) -> Result<String, serde_json::Error> {
    let limit = last_user_source(history).unwrap_or(history.len());
    let mut out = String::from("[");
    cache.append_messages(&mut out, Form(strategy), history, limit, |start, cuts| {
        convert_messages(history, start, strategy, cache_control, cuts)
    })?;
    if out.ends_with(',') {
        out.pop();
    }
    out.push(']');
    Ok(out)
}

/// `{"type": "ephemeral"}`, with `ttl: "1h"` when long retention is asked for
/// (`cacheRetention: "long"` in the options) and the model supports it.
fn cache_control(model: &Model, options: &StreamOptions) -> Value {
    let long = options.extra.get("cacheRetention").and_then(Value::as_str) == Some("long");
    let supported = compat_flag(model, "supportsLongCacheRetention").unwrap_or(true);
    if long && supported {
        json!({"type": "ephemeral", "ttl": "1h"})
    } else {
        json!({"type": "ephemeral"})
    }
}

/// Thinking per §A4: adaptive (`forceAdaptiveThinking`) with an effort, else a token budget with
/// interleaved thinking; explicitly disabled for reasoning models when off. Temperature only
/// without thinking.
fn add_thinking(
    body: &mut Fields<'_, Top<'_>>,
    betas: &mut Vec<&'static str>,
    model: &Model,
    options: &StreamOptions,
    level: ThinkingLevel,
    budget: Option<u64>,
) {
    let adaptive = compat_flag(model, "forceAdaptiveThinking").unwrap_or(false);
    match budget {
        Some(_) if adaptive => {
            body.insert("thinking", Top::Json(json!({"type": "adaptive"})));
            let effort = json!({"effort": adaptive_effort(level)});
            body.insert("output_config", Top::Json(effort));
        }
        Some(budget) => {
            let thinking = json!({"type": "enabled", "budget_tokens": budget});
            body.insert("thinking", Top::Json(thinking));
            betas.push(BETA_INTERLEAVED);
        }
        None => {
            if model.reasoning {
                body.insert("thinking", Top::Json(json!({"type": "disabled"})));
            }
            if let Some(t) = options.temperature {
                body.insert("temperature", Top::Json(json!(t)));
            }
        }
    }
}

/// pi's adaptive effort map: minimal/low → low, medium → medium, higher → high.
fn adaptive_effort(level: ThinkingLevel) -> &'static str {
    match level {
        ThinkingLevel::Off | ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => "high",
    }
}

/// `(max_tokens, thinking budget)` per pi's simple options: the budget is added to the base
/// and capped by the model; a budget that does not fit shrinks to leave 1024 output tokens.
pub fn token_limits(
    model: &Model,
    options: &StreamOptions,
    level: ThinkingLevel,
) -> (u64, Option<u64>) {
    let model_max = if model.max_tokens > 0 {
        model.max_tokens
    } else {
        32_000
    };
    let base = options
        .max_tokens
        .filter(|m| *m > 0)
        .unwrap_or(model_max.min(32_000));
    if level == ThinkingLevel::Off {
        return (base, None);
    }
    let mut budget = thinking_budget(level);
    let max_tokens = (base + budget).min(model_max);
    if max_tokens <= budget {
        budget = max_tokens.saturating_sub(1024);
    }
    (max_tokens, (budget > 0).then_some(budget))
}
