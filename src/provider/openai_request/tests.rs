//! The borrowed serialiser against the Value-built body it replaced: byte for byte, for rich
//! transcripts under every compat flag, thinking format and option.

use serde_json::{Map, Value, json};

use super::{build_body, reference};
use crate::agent::message::{AgentMessage, ThinkingLevel};
use crate::provider::transform::fixtures;
use crate::provider::{LlmContext, Model, StreamOptions};

fn model(reasoning: bool, base_url: &str, compat: Value) -> Model {
    Model {
        id: "gpt-test".into(),
        api: "openai-completions".into(),
        provider: "openai".into(),
        base_url: base_url.into(),
        reasoning,
        max_tokens: 50_000,
        compat: compat.as_object().cloned(),
        ..Model::default()
    }
}

fn options(level: Option<ThinkingLevel>, rich: bool) -> StreamOptions {
    let mut options = StreamOptions {
        reasoning: level,
        ..StreamOptions::default()
    };
    if rich {
        options.max_tokens = Some(1234);
        options.temperature = Some(0.25);
        options.session_id = Some("session-1".into());
        let mut extra = Map::new();
        extra.insert(
            "toolChoice".into(),
            json!({"type": "function", "name": "read"}),
        );
        options.extra = extra;
    }
    options
}

fn compats() -> Vec<(bool, &'static str, Value)> {
    let mut out = vec![
        (false, "http://127.0.0.1:1/v1", json!(null)),
        (true, "https://api.openai.com/v1", json!(null)),
        (
            false,
            "http://x/v1",
            json!({"supportsStrictMode": false, "supportsUsageInStreaming": false}),
        ),
        (
            true,
            "http://x/v1",
            json!({"supportsDeveloperRole": true, "requiresToolResultName": true,
                   "requiresAssistantAfterToolResult": true, "requiresThinkingAsText": true,
                   "requiresReasoningContentOnAssistantMessages": true,
                   "maxTokensField": "max_tokens", "thinkingTokenBudgetField": "budget"}),
        ),
        (
            true,
            "http://x/v1",
            json!({"requiresReasoningContentOnAssistantMessages": true, "supportsStore": true,
                   "thinkingTokenBudgetField": "model", "maxTokensField": "stream"}),
        ),
        (
            false,
            "http://x/v1",
            json!({"supportsMidConvoSystemMessages": true, "supportsMidConvoToolAdditions": true}),
        ),
    ];
    for format in [
        "openrouter",
        "deepseek",
        "zai",
        "together",
        "qwen",
        "qwen-chat-template",
        "string-thinking",
        "other",
    ] {
        let compat =
            json!({"thinkingFormat": format, "supportsReasoningEffort": format != "other"});
        out.push((true, "http://x/v1", compat));
    }
    out
}

fn assert_same(model: &Model, messages: Vec<AgentMessage>, options: &StreamOptions) {
    let context = LlmContext::new(messages);
    let old = reference::build_body(model, &context, options).to_string();
    let new = build_body(model, &context, options).unwrap();
    assert_eq!(new, old, "compat {:?}, options {options:?}", model.compat);
}

#[test]
fn bodies_equal_the_value_built_ones_for_every_compat_and_option() {
    let levels = [None, Some(ThinkingLevel::Off), Some(ThinkingLevel::High)];
    for (reasoning, base, compat) in compats() {
        let model = model(reasoning, base, compat);
        for transcript in [
            fixtures::rich(&model),
            fixtures::additive(&model),
            Vec::new(),
        ] {
            for level in levels {
                for rich in [false, true] {
                    assert_same(&model, transcript.clone(), &options(level, rich));
                }
            }
        }
    }
}

#[test]
fn the_rich_fixture_reaches_every_kind_of_message() {
    let model = model(
        true,
        "http://x/v1",
        json!({"requiresAssistantAfterToolResult": true}),
    );
    let body: Value = serde_json::from_str(
        &build_body(&model, &fixtures_context(&model), &options(None, true)).unwrap(),
    )
    .unwrap();
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    for role in ["system", "user", "assistant", "tool"] {
        assert!(roles.contains(&role), "{role} missing in {roles:?}");
    }
    let text = body.to_string();
    for needle in [
        "data:image/png;base64,iVBORw0KGgo=",
        "No result provided",
        "(see attached image)",
        "(no tool output)",
        "Attached image(s) from tool result:",
        "reasoning_details",
        "Foreign thought.",
        "\"arguments\":\"\\\"not an object\\\"\"",
    ] {
        assert!(text.contains(needle), "{needle} missing in {text}");
    }
}

fn fixtures_context(model: &Model) -> LlmContext {
    LlmContext::new(fixtures::rich(model))
}

/// Successive requests sharing one cache produce exactly the uncached (and the Value-built)
/// bodies, over growing and rewritten histories, for every compat set.
#[test]
fn cached_bodies_equal_uncached_ones_over_growing_and_rewritten_histories() {
    for (reasoning, base, compat) in compats() {
        let model = model(reasoning, base, compat);
        for sequence in fixtures::request_sequences(&model) {
            let shared = options(Some(ThinkingLevel::High), true);
            for history in sequence {
                let context = LlmContext::new(history);
                let cached = build_body(&model, &context, &shared).unwrap();
                let fresh = options(Some(ThinkingLevel::High), true);
                let uncached = build_body(&model, &context, &fresh).unwrap();
                assert_eq!(cached, uncached, "compat {:?}", model.compat);
                let old = reference::build_body(&model, &context, &shared).to_string();
                assert_eq!(cached, old, "compat {:?}", model.compat);
            }
        }
    }
}

/// A growing conversation serialises only its new messages: the cache holds the history.
#[test]
fn a_growing_conversation_is_cached() {
    let model = model(false, "http://127.0.0.1:1/v1", json!(null));
    let all = fixtures::turns(&model, 5);
    let shared = options(None, false);
    for n in (2..=all.len()).step_by(2) {
        let context = LlmContext::new(all[..n].to_vec());
        build_body(&model, &context, &shared).unwrap();
        assert_eq!(shared.request_cache.cached_messages(), n);
    }
    let other = options(None, false);
    assert_eq!(other.request_cache.cached_messages(), 0);
}

/// A tool result's `details` is never rendered: the cache keeps no copy of it, and a history
/// whose results differ only there gets exactly the uncached body.
#[test]
fn tool_result_details_are_not_rendered_and_cached_bodies_stay_exact() {
    let model = model(false, "http://127.0.0.1:1/v1", json!(null));
    let all = fixtures::turns(&model, 3);
    let shared = options(None, false);
    build_body(&model, &LlmContext::new(all.clone()), &shared).unwrap();
    let mut changed = all.clone();
    let mut results = 0;
    for message in &mut changed {
        if let AgentMessage::ToolResult(r) = message {
            r.details = Some(json!({"diff": "a very long diff that the model never sees"}));
            results += 1;
        }
    }
    assert!(results > 0, "the fixture has tool results");
    let context = LlmContext::new(changed);
    let cached = build_body(&model, &context, &shared).unwrap();
    let uncached = build_body(&model, &context, &options(None, false)).unwrap();
    assert_eq!(cached, uncached);
    assert!(!cached.contains("a very long diff"));
    assert_eq!(shared.request_cache.cached_messages(), all.len());
}

/// One cache shared by requests for different models and compat sets (a model switch) never
/// reuses text rendered for another form.
#[test]
fn a_cache_shared_across_compat_sets_renders_each_in_its_own_form() {
    let shared = options(None, false);
    for _ in 0..2 {
        for (reasoning, base, compat) in compats() {
            let model = model(reasoning, base, compat);
            let context = LlmContext::new(fixtures::rich(&model));
            let cached = build_body(&model, &context, &shared).unwrap();
            let uncached = build_body(&model, &context, &options(None, false)).unwrap();
            assert_eq!(cached, uncached, "compat {:?}", model.compat);
        }
    }
}
