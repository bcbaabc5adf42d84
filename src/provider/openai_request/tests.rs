//! Request building over the rich fixture transcript: it reaches every kind of message.

use serde_json::{Map, Value, json};

use super::build_body;
use crate::agent::message::ThinkingLevel;
use crate::agent::model::Model;
use crate::agent::stream_contract::{LlmContext, StreamOptions};
use crate::provider::transform::fixtures;

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
