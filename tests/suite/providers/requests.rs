//! What goes on the wire: recorded request bodies and headers for each API (messages converted,
//! tools folded from transcript system messages, thinking replayed, parameters set).

use agent_lsp::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, ImageContent, MessageContent, StopReason,
    SystemMessage, ThinkingContent, ThinkingLevel, ToolCall, ToolDeclaration, ToolReference,
    ToolResultMessage,
};
use agent_lsp::agent::stream_contract::{LlmContext, StreamOptions};
use serde_json::{Value, json};

use super::common::*;

fn tool(name: &str) -> ToolDeclaration {
    ToolDeclaration {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
                           "additionalProperties": false}),
        constrained_sampling: None,
    }
}

/// A transcript: system prompt with tools, a tool round trip (with thinking and an image
/// result), an errored turn, a later system message changing tools, and a new prompt.
fn conversation(api: &str) -> LlmContext {
    let system = SystemMessage {
        content: "You are terse.".into(),
        tools_added: Some(vec![tool("read"), tool("bash")]),
        ..SystemMessage::default()
    };
    let signature = if api == "openai-completions" {
        "reasoning_content"
    } else {
        "sig-1"
    };
    let assistant = AssistantMessage {
        content: vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking: "need the file".into(),
                thinking_signature: Some(signature.into()),
                redacted: None,
            }),
            ContentBlock::text("Reading."),
            ContentBlock::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: json!({"path": "a.txt"}),
                ..ToolCall::default()
            }),
        ],
        api: api.into(),
        provider: "mock".into(),
        model: "mock-model".into(),
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::default()
    };
    let result = ToolResultMessage {
        tool_call_id: "call_1".into(),
        tool_name: "read".into(),
        content: vec![
            ContentBlock::text("file body"),
            ContentBlock::Image(ImageContent {
                data: "aW1n".into(),
                mime_type: "image/png".into(),
            }),
        ],
        ..ToolResultMessage::default()
    };
    let errored = AssistantMessage {
        content: vec![ContentBlock::text("oops")],
        stop_reason: StopReason::Error,
        ..assistant.clone()
    };
    let later = SystemMessage {
        content: "Now you may write.".into(),
        tools_added: Some(vec![tool("write")]),
        tools_removed: Some(vec![ToolReference {
            name: "bash".into(),
        }]),
        timestamp: 5,
        ..SystemMessage::default()
    };
    LlmContext::new(vec![
        system.into(),
        AgentMessage::user_text("read a.txt"),
        assistant.into(),
        result.into(),
        errored.into(),
        later.into(),
        AgentMessage::user_text("now write"),
    ])
}

async fn recorded_body(
    api: &str,
    context: LlmContext,
    options: StreamOptions,
) -> (Value, agent_lsp::testing::RecordedRequest) {
    let mock = mock(r#"{"responses": [{"text": "ok"}]}"#).await;
    let events = run(&model_for(api, &mock), context, options).await;
    done(&events);
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
    let request = mock.requests().remove(0);
    (request.body.clone(), request)
}

fn names(tools: &Value, pointer: &str) -> Vec<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.pointer(pointer).unwrap().as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn openai_request_converts_messages_and_folds_tools() {
    let options = StreamOptions {
        api_key: Some("sk-test".into()),
        reasoning: Some(ThinkingLevel::Medium),
        temperature: Some(0.5),
        ..StreamOptions::default()
    };
    let (body, request) = recorded_body(
        "openai-completions",
        conversation("openai-completions"),
        options,
    )
    .await;
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_completion_tokens"], 4096);
    assert_eq!(body["temperature"], 0.5);
    assert_eq!(body["reasoning_effort"], "medium");
    // Strategy "none": system messages collapsed, the current tool list at the top level.
    assert_eq!(names(&body["tools"], "/function/name"), ["read", "write"]);
    assert_eq!(body["tools"][0]["function"]["strict"], false);
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "user", "user"]
    );
    assert_eq!(
        messages[0]["content"],
        "You are terse.\n\nNow you may write."
    );
    assert_eq!(messages[2]["content"], "Reading.");
    assert_eq!(messages[2]["reasoning_content"], "need the file");
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        r#"{"path":"a.txt"}"#
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "file body"})
    );
    assert_eq!(
        messages[4]["content"][0]["text"],
        "Attached image(s) from tool result:"
    );
    assert_eq!(
        messages[4]["content"][1]["image_url"]["url"],
        "data:image/png;base64,aW1n"
    );
    assert_eq!(messages[5]["content"], "now write");
}

#[tokio::test]
async fn openai_additions_render_tools_in_place_when_enabled() {
    let mut context = conversation("openai-completions");
    // Only additions: drop the removal so the history stays additive.
    if let AgentMessage::System(later) = &mut std::sync::Arc::make_mut(&mut context.messages)[5] {
        std::sync::Arc::make_mut(later).tools_removed = None;
    }
    let mock = mock(r#"{"responses": [{"text": "ok"}, {"text": "ok"}]}"#).await;
    let mut model = model_for("openai-completions", &mock);
    let compat =
        json!({"supportsMidConvoSystemMessages": true, "supportsMidConvoToolAdditions": true});
    model.compat = compat.as_object().cloned();
    done(&run(&model, context.clone(), StreamOptions::default()).await);
    let body = mock.requests()[0].body.clone();
    assert_eq!(names(&body["tools"], "/function/name"), ["read", "bash"]);
    let in_place = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m.get("tools").is_some())
        .unwrap();
    assert_eq!(in_place["role"], "system");
    assert_eq!(in_place["content"], "Now you may write.");
    assert_eq!(names(&in_place["tools"], "/function/name"), ["write"]);
    // A removal makes the history non-additive: fall back to "none".
    done(
        &run(
            &model,
            conversation("openai-completions"),
            StreamOptions::default(),
        )
        .await,
    );
    let body = mock.requests()[1].body.clone();
    assert_eq!(names(&body["tools"], "/function/name"), ["read", "write"]);
    assert!(
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m.get("tools").is_none())
    );
}

#[tokio::test]
async fn anthropic_request_converts_messages_and_folds_tools() {
    let options = StreamOptions {
        api_key: Some("sk-ant-test".into()),
        reasoning: Some(ThinkingLevel::Low),
        ..StreamOptions::default()
    };
    let (body, request) = recorded_body(
        "anthropic-messages",
        conversation("anthropic-messages"),
        options,
    )
    .await;
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    let betas = request.header("anthropic-beta").unwrap_or_default();
    assert!(
        betas.contains("fine-grained-tool-streaming") && betas.contains("interleaved-thinking"),
        "{betas}"
    );
    // min(32000 base + 2048 budget, model max 4096) = 4096; budget fits.
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(
        body["system"][0]["text"],
        "You are terse.\n\nNow you may write."
    );
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(names(&body["tools"], "/name"), ["read", "write"]);
    assert_eq!(
        body["tools"][0]["input_schema"],
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    );
    assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "user"]);
    assert_eq!(
        messages[1]["content"][0],
        json!({"type": "thinking", "thinking": "need the file", "signature": "sig-1"})
    );
    assert_eq!(
        messages[1]["content"][2],
        json!({"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a.txt"}})
    );
    let result = &messages[2]["content"][0];
    assert_eq!(
        (result["type"].as_str(), result["tool_use_id"].as_str()),
        (Some("tool_result"), Some("call_1"))
    );
    assert_eq!(result["content"][1]["source"]["media_type"], "image/png");
    assert_eq!(
        messages[3]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
}

#[tokio::test]
async fn foreign_thinking_becomes_text_and_orphans_get_results() {
    let mut context = conversation("openai-completions");
    std::sync::Arc::make_mut(&mut context.messages).truncate(3); // Ends on the assistant's unanswered tool call.
    let (body, _) = recorded_body("anthropic-messages", context, StreamOptions::default()).await;
    let messages = body["messages"].as_array().unwrap();
    // Thinking from another API is replayed as text.
    assert_eq!(
        messages[1]["content"][0],
        json!({"type": "text", "text": "need the file"})
    );
    let orphan = &messages[2]["content"][0];
    assert_eq!(orphan["tool_use_id"], "call_1");
    assert_eq!(orphan["is_error"], true);
    assert_eq!(orphan["content"][0]["text"], "No result provided");
}

#[tokio::test]
async fn anthropic_changes_strategy_renders_tool_changes_in_place() {
    let mock = mock(r#"{"responses": [{"text": "ok"}]}"#).await;
    let mut model = model_for("anthropic-messages", &mock);
    let compat =
        json!({"supportsMidConvoSystemMessages": true, "supportsMidConvoToolChanges": true});
    model.compat = compat.as_object().cloned();
    done(
        &run(
            &model,
            conversation("anthropic-messages"),
            StreamOptions::default(),
        )
        .await,
    );
    let request = mock.requests().remove(0);
    assert!(
        request
            .header("anthropic-beta")
            .unwrap_or_default()
            .contains("inline-tools-2026-09-15")
    );
    let body = request.body;
    assert_eq!(names(&body["tools"], "/name"), ["read", "bash"]);
    assert_eq!(body["system"][0]["text"], "You are terse.");
    let change = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "system")
        .unwrap();
    let kinds: Vec<&str> = change["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "tool_removal", "tool_addition"]);
    assert_eq!(
        change["content"][1]["tool"],
        json!({"type": "tool_reference", "name": "bash"})
    );
    assert_eq!(change["content"][2]["tool"]["definition"]["name"], "write");
}

#[tokio::test]
async fn user_images_and_blocks_convert() {
    let blocks = MessageContent::Blocks(vec![
        ContentBlock::text("what is this?"),
        ContentBlock::Image(ImageContent {
            data: "cGl4".into(),
            mime_type: "image/jpeg".into(),
        }),
    ]);
    let context = LlmContext::new(vec![AgentMessage::from(
        agent_lsp::agent::message::UserMessage {
            content: blocks,
            timestamp: 1,
        },
    )]);
    let (body, _) = recorded_body(
        "openai-completions",
        context.clone(),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(
        body["messages"][0]["content"][1]["image_url"]["url"],
        "data:image/jpeg;base64,cGl4"
    );
    assert!(
        body.get("tools").is_none(),
        "no tools and no tool history: no tools field"
    );
    let (body, _) = recorded_body("anthropic-messages", context, StreamOptions::default()).await;
    assert_eq!(body["messages"][0]["content"][1]["source"]["data"], "cGl4");
}

#[tokio::test]
async fn model_and_request_headers_apply_and_null_removes_a_default() {
    for api in APIS {
        let mock = mock(r#"{"responses": [{"text": "ok"}]}"#).await;
        let mut model = model_for(api, &mock);
        model.headers = json!({"x-custom": "model", "x-model-only": "m", "accept": null})
            .as_object()
            .cloned();
        let mut options = StreamOptions {
            api_key: Some("k".into()),
            ..StreamOptions::default()
        };
        options
            .extra
            .insert("headers".into(), json!({"x-custom": "request"}));
        done(&run(&model, user_context("x"), options).await);
        let request = mock.requests().remove(0);
        assert_eq!(request.header("x-custom"), Some("request"), "{api}");
        assert_eq!(request.header("x-model-only"), Some("m"));
        assert_ne!(
            request.header("accept"),
            Some("text/event-stream"),
            "{api}: null removed it"
        );
    }
}

#[tokio::test]
async fn hosted_apis_without_a_key_fail_before_any_request() {
    for (api, base_url) in [
        ("openai-completions", "https://api.openai.com/v1"),
        ("anthropic-messages", "https://api.anthropic.com"),
    ] {
        // A provider id with no environment variable, so the test never depends on the host's env.
        let model = agent_lsp::agent::model::Model {
            id: "m".into(),
            api: api.into(),
            provider: "keyless-test".into(),
            base_url: base_url.into(),
            ..agent_lsp::agent::model::Model::default()
        };
        let events = run(&model, user_context("x"), StreamOptions::default()).await;
        assert_eq!(error_text(&events), "No API key for provider: keyless-test");
    }
}

#[tokio::test]
async fn anthropic_adaptive_thinking_and_long_cache_retention() {
    let mock = mock(r#"{"responses": [{"text": "ok"}, {"text": "ok"}]}"#).await;
    let mut model = model_for("anthropic-messages", &mock);
    model.compat = json!({"forceAdaptiveThinking": true}).as_object().cloned();
    let mut options = StreamOptions {
        reasoning: Some(ThinkingLevel::Minimal),
        temperature: Some(0.2),
        ..StreamOptions::default()
    };
    options.extra.insert("cacheRetention".into(), json!("long"));
    done(&run(&model, conversation("anthropic-messages"), options).await);
    let request = mock.requests().remove(0);
    assert_eq!(request.body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(request.body["output_config"], json!({"effort": "low"}));
    assert!(
        request.body.get("temperature").is_none(),
        "no temperature while thinking"
    );
    assert!(
        !request
            .header("anthropic-beta")
            .unwrap_or_default()
            .contains("interleaved")
    );
    assert_eq!(
        request.body["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
    // Thinking off on a reasoning model: explicitly disabled, temperature allowed.
    let options = StreamOptions {
        temperature: Some(0.2),
        ..StreamOptions::default()
    };
    done(&run(&model, user_context("x"), options).await);
    let body = mock.requests().remove(1).body;
    assert_eq!(body["thinking"], json!({"type": "disabled"}));
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[tokio::test]
async fn eager_tool_streaming_and_session_affinity_follow_compat() {
    let mock = mock(r#"{"responses": [{"text": "ok"}, {"text": "ok"}]}"#).await;
    let mut model = model_for("anthropic-messages", &mock);
    model.compat = json!({"supportsEagerToolInputStreaming": true})
        .as_object()
        .cloned();
    done(
        &run(
            &model,
            conversation("anthropic-messages"),
            StreamOptions::default(),
        )
        .await,
    );
    let request = mock.requests().remove(0);
    assert_eq!(request.body["tools"][0]["eager_input_streaming"], true);
    assert!(
        !request
            .header("anthropic-beta")
            .unwrap_or_default()
            .contains("fine-grained")
    );

    let mut model = model_for("openai-completions", &mock);
    model.compat =
        json!({"sendSessionAffinityHeaders": true, "sessionAffinityFormat": "openrouter"})
            .as_object()
            .cloned();
    let options = StreamOptions {
        session_id: Some("sess-42".into()),
        ..StreamOptions::default()
    };
    done(&run(&model, user_context("x"), options).await);
    let request = mock.requests().remove(1);
    assert_eq!(request.header("x-session-id"), Some("sess-42"));
    assert_eq!(request.header("session_id"), None);
}

#[tokio::test]
async fn openrouter_encrypted_reasoning_is_kept_and_replayed() {
    let mock = mock(
        r#"{"responses": [{"encryptedReasoning": true, "toolCalls": [
            {"id": "call_a", "name": "read", "arguments": {"path": "a"}},
            {"id": "call_b", "name": "read", "arguments": {"path": "b"}}]}, {"text": "done"}]}"#,
    )
    .await;
    let model = model_for("openai-completions", &mock);
    let events = run(&model, user_context("go"), StreamOptions::default()).await;
    let (_, message) = done(&events);
    let signatures: Vec<Value> = message
        .tool_calls()
        .map(|c| serde_json::from_str(c.thought_signature.as_deref().unwrap()).unwrap())
        .collect();
    assert_eq!(
        signatures[0],
        json!({"type": "reasoning.encrypted", "id": "call_a", "data": "enc-call_a"})
    );
    assert_eq!(signatures[1]["data"], "enc-call_b");
    let results = message.tool_calls().map(|c| {
        AgentMessage::from(ToolResultMessage {
            tool_call_id: c.id.clone(),
            tool_name: c.name.clone(),
            content: vec![ContentBlock::text("ok")],
            ..ToolResultMessage::default()
        })
    });
    let mut messages = vec![
        AgentMessage::user_text("go"),
        AgentMessage::from(message.clone()),
    ];
    messages.extend(results);
    done(&run(&model, LlmContext::new(messages), StreamOptions::default()).await);
    let body = mock.requests().remove(1).body;
    let replayed = &body["messages"][1]["reasoning_details"];
    assert_eq!(replayed.as_array().map(Vec::len), Some(2));
    assert_eq!(replayed[1]["id"], "call_b");
}

#[tokio::test]
async fn anthropic_redacted_thinking_is_kept_and_replayed_to_the_same_model() {
    let mock = mock(r#"{"responses": [{"thinking": "visible", "redactedThinking": "opaque-blob", "text": "hi"}, {"text": "again"}]}"#).await;
    let model = model_for("anthropic-messages", &mock);
    let (_, message) = done(&run(&model, user_context("q"), StreamOptions::default()).await);
    let ContentBlock::Thinking(redacted) = &message.content[1] else {
        panic!("{message:?}")
    };
    assert_eq!(redacted.thinking, "[Reasoning redacted]");
    assert_eq!(
        (redacted.redacted, redacted.thinking_signature.as_deref()),
        (Some(true), Some("opaque-blob"))
    );
    let messages = vec![
        AgentMessage::user_text("q"),
        message.into(),
        AgentMessage::user_text("more"),
    ];
    done(&run(&model, LlmContext::new(messages), StreamOptions::default()).await);
    let body = mock.requests().remove(1).body;
    let replayed = &body["messages"][1]["content"];
    assert_eq!(
        replayed[0],
        json!({"type": "thinking", "thinking": "visible", "signature": "sig-mock"})
    );
    assert_eq!(
        replayed[1],
        json!({"type": "redacted_thinking", "data": "opaque-blob"})
    );
    assert_eq!(replayed[2]["text"], "hi");
}
