//! The borrowed serialiser against the Value-built body it replaced: byte for byte (and the
//! same betas), for rich transcripts under every compat flag and option.

use serde_json::{Map, Value, json};

use super::{build_request, reference};
use crate::agent::message::{AgentMessage, ThinkingLevel};
use crate::provider::transform::fixtures;
use crate::provider::{LlmContext, Model, StreamOptions};

fn model(reasoning: bool, max_tokens: u64, compat: Value) -> Model {
    Model {
        id: "claude-test".into(),
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        reasoning,
        max_tokens,
        compat: compat.as_object().cloned(),
        ..Model::default()
    }
}

fn compats() -> Vec<(bool, u64, Value)> {
    vec![
        (false, 0, json!(null)),
        (true, 64_000, json!(null)),
        (true, 9_000, json!({"forceAdaptiveThinking": true})),
        (
            true,
            4_000,
            json!({"supportsEagerToolInputStreaming": true, "supportsLongCacheRetention": false}),
        ),
        (
            false,
            8_192,
            json!({"supportsMidConvoSystemMessages": true, "supportsMidConvoToolChanges": true,
                   "supportsEagerToolInputStreaming": true}),
        ),
    ]
}

fn options(level: Option<ThinkingLevel>, rich: bool) -> StreamOptions {
    let mut options = StreamOptions {
        reasoning: level,
        ..StreamOptions::default()
    };
    if rich {
        options.max_tokens = Some(2048);
        options.temperature = Some(0.5);
        let mut extra = Map::new();
        extra.insert("cacheRetention".into(), json!("long"));
        options.extra = extra;
    }
    options
}

fn assert_same(model: &Model, messages: Vec<AgentMessage>, options: &StreamOptions) {
    let context = LlmContext::new(messages);
    let (old, old_betas) = reference::build_request(model, &context, options);
    let new = build_request(model, &context, options).unwrap();
    assert_eq!(
        new.body,
        old.to_string(),
        "compat {:?}, options {options:?}",
        model.compat
    );
    assert_eq!(new.betas, old_betas);
}

#[test]
fn bodies_equal_the_value_built_ones_for_every_compat_and_option() {
    let levels = [None, Some(ThinkingLevel::Off), Some(ThinkingLevel::Medium)];
    for (reasoning, max, compat) in compats() {
        let model = model(reasoning, max, compat);
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
fn the_rich_fixture_reaches_every_kind_of_block() {
    let model = model(
        true,
        64_000,
        json!({"supportsMidConvoSystemMessages": true,
                                          "supportsMidConvoToolChanges": true}),
    );
    let context = LlmContext::new(fixtures::rich(&model));
    let body = build_request(&model, &context, &options(None, false))
        .unwrap()
        .body;
    for needle in [
        "\"type\":\"image\"",
        "\"type\":\"tool_result\"",
        "\"type\":\"redacted_thinking\"",
        "\"type\":\"thinking\"",
        "\"type\":\"tool_use\"",
        "\"type\":\"tool_removal\"",
        "\"type\":\"tool_addition\"",
        "\"input\":{}",
        "(no tool output)",
        "No result provided",
        "\"cache_control\"",
    ] {
        assert!(body.contains(needle), "{needle} missing in {body}");
    }
}

/// Successive requests sharing one cache produce exactly the uncached (and the Value-built)
/// bodies, over growing and rewritten histories, for every compat set.
#[test]
fn cached_bodies_equal_uncached_ones_over_growing_and_rewritten_histories() {
    for (reasoning, max_tokens, compat) in compats() {
        let model = model(reasoning, max_tokens, compat);
        for sequence in fixtures::request_sequences(&model) {
            let shared = options(Some(ThinkingLevel::High), true);
            for history in sequence {
                let context = LlmContext::new(history);
                let cached = build_request(&model, &context, &shared).unwrap();
                let fresh = options(Some(ThinkingLevel::High), true);
                let uncached = build_request(&model, &context, &fresh).unwrap();
                assert_eq!(cached.body, uncached.body, "compat {:?}", model.compat);
                let (old, _) = reference::build_request(&model, &context, &shared);
                assert_eq!(cached.body, old.to_string(), "compat {:?}", model.compat);
            }
        }
    }
}

/// A growing conversation of tool turns serialises only the newest turn: the cache holds every
/// message before the last tool result (which carries the cache breakpoint).
#[test]
fn a_growing_conversation_is_cached() {
    let model = model(false, 0, json!(null));
    let all = fixtures::turns(&model, 5);
    let shared = options(None, false);
    for n in (4..=all.len()).step_by(2) {
        let context = LlmContext::new(all[..n].to_vec());
        build_request(&model, &context, &shared).unwrap();
        assert_eq!(shared.request_cache.cached_messages(), n - 1);
    }
}

/// One cache shared by requests for different compat sets (tool strategies) never reuses text
/// rendered for another form.
#[test]
fn a_cache_shared_across_compat_sets_renders_each_in_its_own_form() {
    let shared = options(None, false);
    for _ in 0..2 {
        for (reasoning, max_tokens, compat) in compats() {
            let model = model(reasoning, max_tokens, compat);
            let context = LlmContext::new(fixtures::rich(&model));
            let cached = build_request(&model, &context, &shared).unwrap();
            let uncached = build_request(&model, &context, &options(None, false)).unwrap();
            assert_eq!(cached.body, uncached.body, "compat {:?}", model.compat);
        }
    }
}
