//! Request building over the rich fixture transcript: it reaches every kind of message.

use serde_json::{Value, json};

use super::build_body;
use crate::agent::model::Model;
use crate::agent::stream_contract::{LlmContext, StreamOptions};
use crate::provider::transform::fixtures;

fn model(reasoning: bool, base_url: &str, compat: Value) -> Model {
    Model {
        base_url: base_url.into(),
        max_tokens: 50_000,
        ..fixtures::model(
            "openai-completions",
            "openai",
            "gpt-test",
            reasoning,
            compat,
        )
    }
}

/// Options that set every field the body carries.
fn rich_options() -> StreamOptions {
    let tool_choice = json!({"toolChoice": {"type": "function", "name": "read"}});
    StreamOptions {
        max_tokens: Some(1234),
        temperature: Some(0.25),
        session_id: Some("session-1".into()),
        ..fixtures::options(None, tool_choice)
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
        &build_body(&model, &fixtures_context(&model), &rich_options()).unwrap(),
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
