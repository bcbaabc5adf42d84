//! Anthropic Messages request building (§A4, §A13): system block, messages with merged tool
//! results, thinking replay, tools with cache breakpoints, thinking budgets and betas. The body
//! is serialised per request from the transcript (`messages.rs` converts it).

use serde_json::{Map, Value, json};

use super::openai_request::thinking_budget;
use super::tool_fold::{self, ToolStrategy, compat_flag};
use super::transform::{sanitize_id, transform_messages};
use crate::agent::message::ThinkingLevel;
use crate::agent::model::Model;
use crate::agent::stream_contract::{LlmContext, StreamOptions};
use crate::agent::transcript::{current_system_prompt, system_message_text};

mod messages;

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

/// The tool strategy: "changes" when the model can take mid-conversation tool changes.
fn wanted_strategy(model: &Model) -> ToolStrategy {
    let flag = |name| compat_flag(model, name).unwrap_or(false);
    if flag("supportsMidConvoSystemMessages") && flag("supportsMidConvoToolChanges") {
        ToolStrategy::Changes
    } else {
        ToolStrategy::None
    }
}

/// The request: the body serialised, and the betas it needs.
pub fn build_request(
    model: &Model,
    context: &LlmContext,
    options: &StreamOptions,
) -> Result<AnthropicRequest, serde_json::Error> {
    let history = transform_messages(&context.messages, model, normalize_id);
    let strategy = tool_fold::effective_strategy(wanted_strategy(model), &history);
    let tools = tool_fold::request_tools(strategy, &history);
    let mut body = Map::new();
    let mut betas = Vec::new();
    body.insert("model".into(), json!(model.id));
    let level = options
        .reasoning
        .filter(|_| model.reasoning)
        .unwrap_or_default();
    let (max_tokens, budget) = token_limits(model, options, level);
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    let system_text = match strategy {
        ToolStrategy::None => current_system_prompt(history.iter().map(|m| &**m)),
        _ => history
            .iter()
            .find_map(|m| m.as_system())
            .map(system_message_text)
            .unwrap_or_default(),
    };
    let cache = cache_control(model, options);
    if !system_text.is_empty() {
        let system = json!([{"type": "text", "text": system_text, "cache_control": cache}]);
        body.insert("system".into(), system);
    }
    let messages = messages::convert_messages(&history, strategy, &cache);
    body.insert("messages".into(), Value::Array(messages));
    if !tools.is_empty() {
        let mut decls: Vec<Value> = tools.iter().map(messages::tool_json).collect();
        if let Some(last) = decls.last_mut() {
            last["cache_control"] = cache.clone();
        }
        // Per-tool eager input streaming replaces the fine-grained streaming beta where supported.
        if compat_flag(model, "supportsEagerToolInputStreaming").unwrap_or(false) {
            decls
                .iter_mut()
                .for_each(|d| d["eager_input_streaming"] = json!(true));
        } else {
            betas.push(BETA_FINE_GRAINED);
        }
        body.insert("tools".into(), Value::Array(decls));
    }
    if strategy == ToolStrategy::Changes {
        betas.push(BETA_INLINE_TOOLS);
    }
    add_thinking(&mut body, &mut betas, model, options, level, budget);
    Ok(AnthropicRequest {
        body: serde_json::to_string(&body)?,
        betas,
    })
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
    body: &mut Map<String, Value>,
    betas: &mut Vec<&'static str>,
    model: &Model,
    options: &StreamOptions,
    level: ThinkingLevel,
    budget: Option<u64>,
) {
    let adaptive = compat_flag(model, "forceAdaptiveThinking").unwrap_or(false);
    match budget {
        Some(_) if adaptive => {
            body.insert("thinking".into(), json!({"type": "adaptive"}));
            body.insert(
                "output_config".into(),
                json!({"effort": adaptive_effort(level)}),
            );
        }
        Some(budget) => {
            let thinking = json!({"type": "enabled", "budget_tokens": budget});
            body.insert("thinking".into(), thinking);
            betas.push(BETA_INTERLEAVED);
        }
        None => {
            if model.reasoning {
                body.insert("thinking".into(), json!({"type": "disabled"}));
            }
            if let Some(t) = options.temperature {
                body.insert("temperature".into(), json!(t));
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

#[cfg(test)]
mod tests;
