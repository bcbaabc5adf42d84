//! Golden request bodies (`snapshots/request_*.snap`): for each compat set, the exact body a
//! transcript with every kind of message becomes. The body is shown one token per line by a
//! lossless reformatting (removing the added whitespace gives the wire bytes back, duplicate
//! keys and all), so a snapshot match means a byte-for-byte match.

use serde_json::{Value, json};

use super::anthropic_request::build_request;
use super::openai_request::build_body;
use super::openai_responses_request::build_body as build_responses_body;
use super::transform::fixtures::{self, options};
use crate::agent::message::{
    AgentMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ThinkingLevel,
    ToolResultMessage,
};
use crate::agent::model::Model;
use crate::agent::stream_contract::{LlmContext, StreamOptions};

/// `text` (compact JSON) with a line break and indentation after every `{`, `[` and `,`.
fn pretty(text: &str) -> String {
    let mut out = String::new();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        let newline = |out: &mut String, depth: usize| {
            out.push('\n');
            out.push_str(&"  ".repeat(depth));
        };
        if in_string {
            (in_string, escaped) = (escaped || c != '"', !escaped && c == '\\');
            if in_string {
                continue;
            }
        } else {
            match c {
                '"' => in_string = true,
                ':' => out.push(' '),
                ',' => newline(&mut out, depth),
                '{' | '[' if !matches!(chars.peek(), Some('}' | ']')) => {
                    depth += 1;
                    newline(&mut out, depth);
                }
                '{' | '[' => depth += 1,
                _ => {}
            }
        }
        if !in_string && matches!(chars.peek(), Some('}' | ']')) {
            depth = depth.saturating_sub(1);
            if !matches!(c, '{' | '[') {
                newline(&mut out, depth);
            }
        }
    }
    assert_eq!(compact(&out), text, "the reformatting is lossless");
    out
}

/// `pretty`'s inverse for compact JSON: drops whitespace outside strings.
fn compact(text: &str) -> String {
    let mut out = String::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            (in_string, escaped) = (escaped || c != '"', !escaped && c == '\\');
        } else if c.is_whitespace() {
            continue;
        } else if c == '"' {
            in_string = true;
        }
        out.push(c);
    }
    out
}

/// Asserts `text` against `snapshots/<name>.snap` (shared with the stream goldens).
pub(super) fn snapshot(name: &str, description: &str, text: String) {
    insta::with_settings!({
        prepend_module_to_snapshot => false,
        omit_expression => true,
        description => description,
    }, {
        insta::assert_snapshot!(name, text);
    });
}

fn openai_model(id: &str, base_url: &str, reasoning: bool, compat: Value) -> Model {
    Model {
        base_url: base_url.into(),
        max_tokens: 64_000,
        ..fixtures::model("openai-completions", "openai", id, reasoning, compat)
    }
}

fn anthropic_model(reasoning: bool, max_tokens: u64, compat: Value) -> Model {
    let id = "claude-sonnet-4-5";
    Model {
        base_url: "https://api.anthropic.com".into(),
        max_tokens,
        ..fixtures::model("anthropic-messages", "anthropic", id, reasoning, compat)
    }
}

/// A transcript for a model: `fixtures::rich`, `fixtures::additive` or a case's own.
type History = fn(&Model) -> Vec<AgentMessage>;

fn openai(name: &str, description: &str, model: &Model, history: History, o: &StreamOptions) {
    let body = build_body(model, &LlmContext::new(history(model)), o).unwrap();
    snapshot(name, description, pretty(&body));
}

fn anthropic(name: &str, description: &str, model: &Model, history: History, o: &StreamOptions) {
    let request = build_request(model, &LlmContext::new(history(model)), o).unwrap();
    let betas = request.betas.join(",");
    snapshot(
        name,
        description,
        format!("anthropic-beta: {betas}\n{}", pretty(&request.body)),
    );
}

#[test]
fn the_reformatting_round_trips_compact_json() {
    let text = r#"{"a":[],"b":{},"c":[1,{"d":"x,\"{[y]}\\"}],"e":null}"#;
    assert_eq!(compact(&pretty(text)), text);
    let value: Value = serde_json::from_str(&pretty(text)).unwrap();
    assert_eq!(value.to_string(), text);
}

#[test]
fn openai_official() {
    let model = openai_model("gpt-5", "https://api.openai.com/v1", true, json!(null));
    let mut o = options(Some(ThinkingLevel::High), json!({"toolChoice": "auto"}));
    o.session_id = Some("session-1".into());
    let description = "api.openai.com, reasoning model at effort high: developer role, \
        max_completion_tokens, store false, prompt_cache_key, reasoning_effort, strict tools";
    openai(
        "request_openai_official",
        description,
        &model,
        fixtures::rich,
        &o,
    );
}

#[test]
fn openai_local_server() {
    let compat = json!({"supportsDeveloperRole": false, "maxTokensField": "max_tokens"});
    let model = openai_model(
        "qwen2.5-coder:7b",
        "http://127.0.0.1:11434/v1",
        false,
        compat,
    );
    let mut o = options(None, json!({}));
    o.temperature = Some(0.2);
    o.max_tokens = Some(4096);
    let description = "Ollama-style local server, no reasoning: system role, max_tokens, \
        temperature, no store";
    openai(
        "request_openai_local",
        description,
        &model,
        fixtures::rich,
        &o,
    );
}

#[test]
fn openai_openrouter_reasoning_quirks() {
    let compat = json!({"thinkingFormat": "openrouter", "requiresToolResultName": true,
        "requiresReasoningContentOnAssistantMessages": true, "supportsStrictMode": false});
    let model = openai_model(
        "anthropic/claude-sonnet-4.5",
        "https://openrouter.ai/api/v1",
        true,
        compat,
    );
    let o = options(Some(ThinkingLevel::Medium), json!({}));
    let description = "OpenRouter: reasoning {effort}, reasoning_details replay, \
        reasoning_content on every assistant message, tool result names, non-strict tools";
    openai(
        "request_openai_openrouter",
        description,
        &model,
        fixtures::rich,
        &o,
    );
}

#[test]
fn openai_qwen_thinking_as_text() {
    let compat = json!({"thinkingFormat": "qwen-chat-template", "requiresThinkingAsText": true,
        "requiresAssistantAfterToolResult": true, "thinkingTokenBudgetField": "thinking_budget",
        "supportsUsageInStreaming": false});
    let model = openai_model("qwen3-coder", "http://127.0.0.1:8080/v1", true, compat);
    let o = options(Some(ThinkingLevel::Low), json!({}));
    let description = "llama.cpp-style Qwen: chat_template_kwargs, thinking replayed as text, \
        an assistant message after tool results, a thinking budget field, no stream_options";
    openai(
        "request_openai_qwen",
        description,
        &model,
        fixtures::rich,
        &o,
    );
}

#[test]
fn openai_zai_tool_additions() {
    let compat = json!({"thinkingFormat": "zai", "supportsMidConvoSystemMessages": true,
        "supportsMidConvoToolAdditions": true});
    let model = openai_model(
        "glm-4.6",
        "https://api.z.ai/api/coding/paas/v4",
        true,
        compat,
    );
    let o = options(Some(ThinkingLevel::Off), json!({}));
    let description = "Z.ai with mid-conversation tool additions over an additive transcript: \
        thinking disabled, later system messages in place with the tools they add";
    openai(
        "request_openai_zai_additions",
        description,
        &model,
        fixtures::additive,
        &o,
    );
}

#[test]
fn openai_colliding_field_names() {
    let compat = json!({"maxTokensField": "stream", "thinkingTokenBudgetField": "model"});
    let model = openai_model("m", "http://127.0.0.1:1/v1", true, compat);
    let o = options(Some(ThinkingLevel::Minimal), json!({}));
    let description = "configured field names that collide with built-in ones replace the \
        earlier value where it stands";
    openai(
        "request_openai_colliding_fields",
        description,
        &model,
        |_| vec![AgentMessage::user_text("hi")],
        &o,
    );
}

#[test]
fn anthropic_thinking_budget() {
    let model = anthropic_model(true, 64_000, json!(null));
    let mut o = options(
        Some(ThinkingLevel::Medium),
        json!({"cacheRetention": "long"}),
    );
    o.max_tokens = Some(8192);
    o.temperature = Some(0.5);
    let description = "thinking budget with interleaved thinking, 1 h cache control on the \
        system prompt, the last tool and the last user block, fine-grained tool streaming";
    anthropic(
        "request_anthropic_budget",
        description,
        &model,
        fixtures::rich,
        &o,
    );
}

#[test]
fn anthropic_adaptive_tool_changes() {
    let compat = json!({"forceAdaptiveThinking": true, "supportsEagerToolInputStreaming": true,
        "supportsMidConvoSystemMessages": true, "supportsMidConvoToolChanges": true,
        "supportsLongCacheRetention": false});
    let model = anthropic_model(true, 32_000, compat);
    let o = options(Some(ThinkingLevel::High), json!({"cacheRetention": "long"}));
    let description = "adaptive thinking with an effort, eager tool input streaming, tool \
        changes in place (tool_addition/tool_removal), long retention unsupported";
    anthropic(
        "request_anthropic_adaptive_changes",
        description,
        &model,
        fixtures::rich,
        &o,
    );
}

#[test]
fn anthropic_thinking_off() {
    let model = anthropic_model(true, 0, json!(null));
    let mut o = options(Some(ThinkingLevel::Off), json!({}));
    o.temperature = Some(0.7);
    let description = "a reasoning model with thinking off: thinking disabled, temperature, \
        default max_tokens, additive transcript folded into one system prompt";
    anthropic(
        "request_anthropic_thinking_off",
        description,
        &model,
        fixtures::additive,
        &o,
    );
}

fn responses_model(base_url: &str, reasoning: bool, compat: Value) -> Model {
    Model {
        id: "gpt-5".into(),
        api: "openai-responses".into(),
        base_url: base_url.into(),
        input: vec!["text".into(), "image".into()],
        ..openai_model("gpt-5", base_url, reasoning, compat)
    }
}

/// Two tool turns of a Responses model (reasoning items, signed text, paired ids) after `rich`.
fn responses_history(model: &Model) -> Vec<AgentMessage> {
    let reasoning = |id: &str, summary: &str| {
        ContentBlock::Thinking(ThinkingContent {
            thinking: summary.into(),
            thinking_signature: Some(format!(
                r#"{{"id":"{id}","type":"reasoning","summary":[{{"type":"summary_text","text":"{summary}"}}],"encrypted_content":"enc-{id}"}}"#
            )),
            redacted: None,
        })
    };
    let call = |id: &str, path: &str| fixtures::call(id, json!({"path": path}), None);
    let turn =
        |content: Vec<ContentBlock>, stop: StopReason| fixtures::assistant(model, content, stop);
    let result = |id: &str, text: &str| {
        AgentMessage::from(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text(text)],
            ..ToolResultMessage::default()
        })
    };
    let mut history = fixtures::rich(model);
    history.extend([
        turn(
            vec![
                reasoning("rs_1", "Read a first."),
                ContentBlock::Text(TextContent {
                    text: "Reading.".into(),
                    text_signature: Some(r#"{"v":1,"id":"msg_1","phase":"commentary"}"#.into()),
                }),
                call("call_1|fc_1", "a.txt"),
            ],
            StopReason::ToolUse,
        ),
        result("call_1|fc_1", "alpha"),
        turn(
            vec![reasoning("rs_2", "Now b."), call("call_2|fc_2", "b.txt")],
            StopReason::ToolUse,
        ),
        result("call_2|fc_2", "beta"),
    ]);
    history
}

fn responses(name: &str, description: &str, model: &Model, o: &StreamOptions) {
    let history = responses_history(model);
    let body = build_responses_body(model, &LlmContext::new(history), o).unwrap();
    snapshot(name, description, pretty(&body));
}

#[test]
fn responses_official() {
    let model = responses_model("https://api.openai.com/v1", true, json!(null));
    let mut o = options(Some(ThinkingLevel::High), json!({"toolChoice": "auto"}));
    o.session_id = Some("session-1".into());
    let description = "api.openai.com, reasoning at effort high: developer instructions, \
        reasoning items replayed with their encrypted content, signed text ids, paired call ids, \
        store false, include, prompt_cache_key, strict tools; other models' thinking as text";
    responses("request_responses_official", description, &model, &o);
}

#[test]
fn responses_compatible_server() {
    let compat = json!({"supportsDeveloperRole": false, "supportsMaxOutputTokens": false});
    let model = responses_model("http://127.0.0.1:8000/v1", false, compat);
    let mut o = options(None, json!({}));
    o.temperature = Some(0.2);
    let description = "a Responses-compatible server, no reasoning: system instructions, no \
        max_output_tokens, temperature, non-strict tools, no reasoning or include";
    responses("request_responses_compatible", description, &model, &o);
}
