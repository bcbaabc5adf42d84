//! Request building over the rich fixture transcript: it reaches every kind of block.

use serde_json::{Value, json};

use super::build_request;
use crate::agent::model::Model;
use crate::agent::stream_contract::{LlmContext, StreamOptions};
use crate::provider::transform::fixtures;

fn model(reasoning: bool, max_tokens: u64, compat: Value) -> Model {
    Model {
        max_tokens,
        ..fixtures::model(
            "anthropic-messages",
            "anthropic",
            "claude-test",
            reasoning,
            compat,
        )
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
    let body = build_request(&model, &context, &StreamOptions::default())
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
