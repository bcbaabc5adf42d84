//! The OpenAI Responses API against the mock over loopback HTTP: reasoning summaries as
//! thinking with the reasoning item kept for replay, text, streamed function calls, usage with
//! cached and reasoning tokens, stop statuses, stream errors, HTTP errors and aborts.

use agent_lsp::agent::message::{AgentMessage, ContentBlock, StopReason, ThinkingLevel};
use agent_lsp::agent::stream_contract::{
    AssistantMessageEvent, LlmContext, StreamFn, StreamOptions, StreamRequest,
};
use agent_lsp::provider::ProviderRouter;
use serde_json::{Value, json};

use super::common::*;

const API: &str = "openai-responses";

fn thinking_deltas(events: &[AssistantMessageEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::ThinkingDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn reasoning_text_and_usage_stream_as_pi_stores_them() {
    let mock = mock(
        r#"{"responses": [{"thinking": "let me think", "text": "Answer", "chunkSize": 3,
            "usage": {"input": 10, "output": 5, "cacheRead": 30, "reasoning": 2}}]}"#,
    )
    .await;
    let options = StreamOptions {
        reasoning: Some(ThinkingLevel::High),
        ..StreamOptions::default()
    };
    let events = run(&model_for(API, &mock), user_context("q"), options).await;
    // pi's deltas: the summary, then a blank line when its part ends.
    assert_eq!(thinking_deltas(&events), "let me think\n\n");
    assert_eq!(text_deltas(&events), "Answer");
    let (reason, message) = done(&events);
    assert_eq!(reason, StopReason::Stop);
    assert_eq!(message.raw_stop_reason.as_deref(), Some("completed"));
    assert_eq!(message.response_id.as_deref(), Some("mock-0"));
    let ContentBlock::Thinking(thinking) = &message.content[0] else {
        panic!("{message:?}")
    };
    assert_eq!(thinking.thinking, "let me think");
    let item: Value =
        serde_json::from_str(thinking.thinking_signature.as_deref().unwrap()).unwrap();
    assert_eq!(
        item,
        json!({"id": "rs_mock-0", "type": "reasoning",
               "summary": [{"type": "summary_text", "text": "let me think"}],
               "encrypted_content": "enc-mock-0"})
    );
    let ContentBlock::Text(text) = &message.content[1] else {
        panic!("{message:?}")
    };
    assert_eq!(
        text.text_signature.as_deref(),
        Some(r#"{"v":1,"id":"msg_mock-0"}"#)
    );
    let usage = &message.usage;
    assert_eq!((usage.input, usage.cache_read, usage.output), (10, 30, 5));
    assert_eq!(usage.reasoning, Some(2));
    assert_eq!(usage.total_tokens, 45);
    // $1 input, $2 output, $0.5 cache read per million.
    assert!((usage.cost.total - (10.0 + 10.0 + 15.0) / 1e6).abs() < 1e-12);
    let request = &mock.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.body["store"], false);
    assert_eq!(
        request.body["include"],
        json!(["reasoning.encrypted_content"])
    );
    assert_eq!(
        request.body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(
        request.body["input"],
        json!([{"role": "user", "content": [{"type": "input_text", "text": "q"}]}])
    );
}

#[tokio::test]
async fn function_calls_stream_their_arguments_and_end_in_tool_use() {
    let mock = mock(
        r#"{"responses": [{"toolCalls": [
            {"id": "call_1", "name": "read", "arguments": {"path": "src/main.rs"}},
            {"id": "call_2", "name": "ls", "arguments": {}}], "chunkSize": 4}]}"#,
    )
    .await;
    let events = run(&model_for(API, &mock), user_context("q"), no_retries()).await;
    let deltas = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                AssistantMessageEvent::ToolCallDelta {
                    content_index: 0,
                    ..
                }
            )
        })
        .count();
    assert_eq!(deltas, 6, "22 bytes of arguments in 4-byte deltas");
    let (reason, message) = done(&events);
    assert_eq!(reason, StopReason::ToolUse);
    let calls: Vec<(String, String, Value)> = message
        .tool_calls()
        .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            (
                "call_1|fc_call_1".into(),
                "read".into(),
                json!({"path": "src/main.rs"})
            ),
            ("call_2|fc_call_2".into(), "ls".into(), json!({})),
        ]
    );
}

/// A tool turn, then the next request: the reasoning item goes back whole, before its call.
#[tokio::test]
async fn the_next_request_replays_the_reasoning_item_with_the_call() {
    let mock = mock(
        r#"{"responses": [
            {"thinking": "read it", "toolCalls": [{"id": "call_1", "name": "read", "arguments": {"path": "a"}}]},
            {"text": "done"}]}"#,
    )
    .await;
    let model = model_for(API, &mock);
    let options = || StreamOptions {
        reasoning: Some(ThinkingLevel::Medium),
        ..StreamOptions::default()
    };
    let events = run(&model, user_context("q"), options()).await;
    let (_, first) = done(&events);
    let result = agent_lsp::agent::message::ToolResultMessage {
        tool_call_id: first.tool_calls().next().unwrap().id.clone(),
        tool_name: "read".into(),
        content: vec![ContentBlock::text("contents")],
        ..Default::default()
    };
    let history = vec![
        AgentMessage::user_text("q"),
        AgentMessage::from(first),
        AgentMessage::from(result),
    ];
    let events = run(&model, LlmContext::new(history), options()).await;
    assert_eq!(done(&events).1.text(), "done");
    let second = &mock.requests()[1];
    assert_eq!(second.status, 200, "{:?}", second.violation);
    assert_eq!(
        second.body["input"],
        json!([
            {"role": "user", "content": [{"type": "input_text", "text": "q"}]},
            {"id": "rs_mock-0", "type": "reasoning",
             "summary": [{"type": "summary_text", "text": "read it"}],
             "encrypted_content": "enc-mock-0"},
            {"type": "function_call", "id": "fc_call_1", "call_id": "call_1", "name": "read",
             "arguments": "{\"path\":\"a\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "contents"}
        ])
    );
}

#[tokio::test]
async fn statuses_and_stream_errors_end_as_pi_ends_them() {
    let mock = mock(
        r#"{"responses": [
            {"text": "cut", "stopReason": "incomplete"},
            {"text": "x", "stopReason": "failed"},
            {"text": "x", "streamError": "The server had an error"},
            {"text": "x", "omitDone": true}]}"#,
    )
    .await;
    let model = model_for(API, &mock);
    let events = run(&model, user_context("q"), no_retries()).await;
    let (reason, message) = done(&events);
    assert_eq!(reason, StopReason::Length);
    assert_eq!(
        message.raw_stop_reason.as_deref(),
        Some("incomplete.max_output_tokens")
    );
    let expected = [
        "server_error: scripted failure",
        "Error Code server_error: The server had an error",
        "OpenAI Responses stream ended before a terminal response event",
    ];
    for expected in expected {
        let events = run(&model, user_context("q"), no_retries()).await;
        let (reason, message) = failed(&events);
        assert_eq!(reason, StopReason::Error);
        assert_eq!(message.error_message.as_deref(), Some(expected));
        assert_eq!(message.text(), "x", "partial content is kept");
    }
}

#[tokio::test]
async fn http_errors_and_aborts_end_as_for_the_other_apis() {
    let mock = mock(
        r#"{"responses": [
            {"status": 400, "body": "{\"error\": {\"message\": \"Unsupported parameter: 'reasoning.effort'\"}}"},
            {"text": "a long slow answer that keeps going", "chunkSize": 1, "delayMs": 20}]}"#,
    )
    .await;
    let model = model_for(API, &mock);
    let events = run(&model, user_context("q"), no_retries()).await;
    assert_eq!(
        error_text(&events),
        "400 Bad Request: Unsupported parameter: 'reasoning.effort'"
    );
    let options = StreamOptions::default();
    let signal = options.signal.clone();
    let mut stream = ProviderRouter::with_defaults().stream(StreamRequest {
        options,
        ..StreamRequest::new(model, user_context("x"))
    });
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::TextDelta { .. }) {
            signal.cancel();
        }
        events.push(event);
    }
    check_contract(&events);
    let (reason, message) = failed(&events);
    assert_eq!(reason, StopReason::Aborted);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Request was aborted")
    );
}
