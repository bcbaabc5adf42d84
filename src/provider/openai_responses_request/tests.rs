use serde_json::{Value, json};

use super::*;
use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent,
    ToolCall, ToolResultMessage,
};

const REASONING: &str = r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Look first."}],"encrypted_content":"gAAA=="}"#;

fn gpt5() -> Model {
    Model {
        id: "gpt-5".into(),
        api: "openai-responses".into(),
        provider: "openai".into(),
        base_url: "https://api.openai.com/v1".into(),
        reasoning: true,
        input: vec!["text".into(), "image".into()],
        max_tokens: 128_000,
        ..Model::default()
    }
}

/// A tool turn as the Responses API produced it, its result, and a follow-up prompt.
fn tool_turn(from: &Model) -> Vec<AgentMessage> {
    vec![
        AgentMessage::user_text("read a.txt"),
        AgentMessage::from(AssistantMessage {
            content: vec![
                ContentBlock::Thinking(ThinkingContent {
                    thinking: "Look first.".into(),
                    thinking_signature: Some(REASONING.into()),
                    redacted: None,
                }),
                ContentBlock::Text(TextContent {
                    text: "Reading.".into(),
                    text_signature: Some(r#"{"v":1,"id":"msg_7","phase":"commentary"}"#.into()),
                }),
                ContentBlock::ToolCall(ToolCall {
                    id: "call_1|fc_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.txt"}),
                    ..ToolCall::default()
                }),
            ],
            api: from.api.clone(),
            provider: from.provider.clone(),
            model: from.id.clone(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        }),
        AgentMessage::from(ToolResultMessage {
            tool_call_id: "call_1|fc_1".into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text("hello")],
            ..ToolResultMessage::default()
        }),
    ]
}

/// `tool_turn` with its thinking block signed `signature` instead.
fn tool_turn_signed(from: &Model, signature: &str) -> Vec<AgentMessage> {
    let mut history = tool_turn(from);
    if let AgentMessage::Assistant(a) = &mut history[1]
        && let ContentBlock::Thinking(t) = &mut std::sync::Arc::make_mut(a).content[0]
    {
        t.thinking_signature = Some(signature.into());
    }
    history
}

fn body(model: &Model, history: Vec<AgentMessage>, level: Option<ThinkingLevel>) -> Value {
    let options = StreamOptions {
        reasoning: level,
        ..StreamOptions::default()
    };
    let text = build_body(model, &LlmContext::new(history), &options).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_reasoning_item_goes_back_verbatim_with_its_call() {
    let model = gpt5();
    let body = body(&model, tool_turn(&model), Some(ThinkingLevel::Medium));
    let input = body["input"].as_array().unwrap();
    assert_eq!(input[1], serde_json::from_str::<Value>(REASONING).unwrap());
    assert_eq!(input[2]["id"], "msg_7");
    assert_eq!(input[2]["phase"], "commentary");
    assert_eq!(
        input[3],
        json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read",
               "arguments": "{\"path\":\"a.txt\"}"})
    );
    assert_eq!(
        input[4],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "hello"})
    );
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        body["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
}

#[test]
fn thinking_off_sends_no_reasoning_but_still_asks_for_encrypted_content() {
    let model = gpt5();
    let off = body(&model, tool_turn(&model), Some(ThinkingLevel::Off));
    assert!(off.get("reasoning").is_none());
    assert_eq!(off["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(off["max_output_tokens"], 32_000);
    let plain = Model {
        id: "gpt-4.1".into(),
        reasoning: false,
        ..gpt5()
    };
    let plain = body(&plain, vec![AgentMessage::user_text("hi")], None);
    assert!(plain.get("include").is_none());
}

#[test]
fn another_models_turn_loses_its_reasoning_text_ids_and_item_ids() {
    let other = Model {
        id: "gpt-5-mini".into(),
        ..gpt5()
    };
    let body = body(&gpt5(), tool_turn(&other), Some(ThinkingLevel::High));
    let input = body["input"].as_array().unwrap();
    let text = body.to_string();
    assert!(!text.contains("gAAA=="), "{text}");
    // Its thinking became text (transform.rs), with pi's fallback message ids.
    assert_eq!(input[1]["content"][0]["text"], "Look first.");
    assert_eq!(input[1]["id"], "msg_pi_1");
    assert_eq!(input[2]["id"], "msg_pi_1_1");
    assert!(input[3].get("id").is_none(), "{}", input[3]);
    assert_eq!(input[3]["call_id"], "call_1");
}

#[test]
fn responses_reasoning_never_reaches_chat_completions_or_anthropic() {
    let history = tool_turn(&gpt5());
    let chat = Model {
        api: "openai-completions".into(),
        ..gpt5()
    };
    let options = StreamOptions::default();
    let context = LlmContext::new(history.clone());
    let chat_body = crate::provider::openai_request::build_body(&chat, &context, &options).unwrap();
    assert!(
        !chat_body.contains("gAAA==") && !chat_body.contains("rs_1"),
        "{chat_body}"
    );
    assert!(
        chat_body.contains(r#""tool_call_id":"call_1""#),
        "{chat_body}"
    );
    let claude = Model {
        id: "claude-sonnet-4-5".into(),
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        base_url: "https://api.anthropic.com".into(),
        ..gpt5()
    };
    let request =
        crate::provider::anthropic_request::build_request(&claude, &context, &options).unwrap();
    assert!(!request.body.contains("gAAA==") && !request.body.contains("rs_1"));
    assert!(
        !request.body.contains('|'),
        "ids are sanitized: {}",
        request.body
    );
}

#[test]
fn reasoning_items_without_encrypted_content_are_not_replayed() {
    let model = gpt5();
    let history = tool_turn_signed(&model, r#"{"id":"rs_1","type":"reasoning","summary":[]}"#);
    let body = body(&model, history, Some(ThinkingLevel::High));
    assert_eq!(body["input"][1]["type"], "message", "{}", body["input"]);
}

#[test]
fn other_apis_signatures_are_not_sent_as_reasoning() {
    let model = gpt5();
    let history = tool_turn_signed(&model, "reasoning_content");
    let body = body(&model, history, Some(ThinkingLevel::High));
    let input = body["input"].as_array().unwrap();
    assert_eq!(input[1]["type"], "message", "the bad signature is skipped");
}

#[test]
fn ids_are_normalized_as_pi_does() {
    for (id, normalized) in [
        ("call_1|fc_1", "call_1|fc_1"),
        ("call.1|item", "call_1|fc_item"),
        ("toolu_01__", "toolu_01"),
    ] {
        assert_eq!(normalize_id(id), normalized);
    }
    // pi's shortHash, checked against its JavaScript.
    for (text, hash) in [
        ("", "k4n83c7h0j2b"),
        ("msg_abc", "6piae0s8vela"),
        ("héllo😀", "1olj6nu1frhbfw"),
    ] {
        assert_eq!(short_hash(text), hash);
    }
}

#[test]
fn cache_retention_sets_the_key_and_its_lifetime() {
    let model = gpt5();
    let with = |retention: &str| {
        let mut options = StreamOptions {
            session_id: Some("s".repeat(70)),
            ..StreamOptions::default()
        };
        options
            .extra
            .insert("cacheRetention".into(), json!(retention));
        let text = build_body(&model, &LlmContext::new(tool_turn(&model)), &options).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()
    };
    let long = with("long");
    assert_eq!(
        long["prompt_cache_key"],
        "s".repeat(64),
        "cut to 64 characters"
    );
    assert_eq!(long["prompt_cache_retention"], "24h");
    let short = with("short");
    assert!(short.get("prompt_cache_retention").is_none());
    let none = with("none");
    assert!(none.get("prompt_cache_key").is_none());
}
