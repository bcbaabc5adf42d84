//! Request building over the rich fixture transcript: it reaches every kind of block.

use serde_json::{Map, Value, json};

use super::build_request;
use crate::agent::message::ThinkingLevel;
use crate::agent::model::Model;
use crate::agent::stream_contract::{LlmContext, StreamOptions};
use crate::provider::transform::fixtures;

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
