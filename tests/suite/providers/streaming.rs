//! Successful streams from the mock, for every API: text, thinking, tool calls, usage, UTF-8.

use agent_lsp::agent::message::{ContentBlock, StopReason};
use agent_lsp::agent::stream_contract::{AssistantMessageEvent, StreamOptions};
use serde_json::json;

use super::common::*;

#[tokio::test]
async fn text_streams_as_deltas_and_ends_done() {
    for api in APIS {
        let mock = mock(r#"{"responses": [{"text": "Hello, world", "chunkSize": 2}]}"#).await;
        let model = model_for(api, &mock);
        let events = run(&model, user_context("hi"), StreamOptions::default()).await;
        assert_eq!(text_deltas(&events), "Hello, world", "{api}");
        let deltas = events
            .iter()
            .filter(|e| matches!(e, AssistantMessageEvent::TextDelta { .. }))
            .count();
        assert_eq!(deltas, 6, "{api}: 2-byte deltas");
        assert!(events.iter().any(|e| matches!(e,
            AssistantMessageEvent::TextEnd { content, .. } if content == "Hello, world")));
        let (reason, message) = done(&events);
        assert_eq!(reason, StopReason::Stop);
        assert_eq!(message.text(), "Hello, world");
        assert_eq!(message.response_id.as_deref(), Some("mock-0"));
        let raw = match api {
            "openai-completions" => "stop",
            "openai-responses" => "completed",
            _ => "end_turn",
        };
        assert_eq!(message.raw_stop_reason.as_deref(), Some(raw));
        assert_eq!(
            (message.api.as_str(), message.model.as_str()),
            (api, "mock-model")
        );
    }
}

#[tokio::test]
async fn thinking_then_text_with_cached_usage() {
    for api in APIS {
        let mock = mock(
            r#"{"responses": [{"thinking": "let me think", "text": "Answer", "chunkSize": 3,
                "usage": {"input": 10, "output": 5, "cacheRead": 3, "reasoning": 2}}]}"#,
        )
        .await;
        let model = model_for(api, &mock);
        let events = run(&model, user_context("q"), StreamOptions::default()).await;
        let thinking: String = events
            .iter()
            .filter_map(|e| match e {
                AssistantMessageEvent::ThinkingDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        // Responses: pi ends each summary part with a blank line.
        let streamed = if api == "openai-responses" {
            "let me think\n\n"
        } else {
            "let me think"
        };
        assert_eq!(thinking, streamed, "{api}");
        assert_eq!(
            events.iter().find_map(|e| match e {
                AssistantMessageEvent::ThinkingEnd { content, .. } => Some(content.as_str()),
                _ => None,
            }),
            Some("let me think"),
            "{api}"
        );
        let (_, message) = done(&events);
        let ContentBlock::Thinking(block) = &message.content[0] else {
            panic!("{api}: {message:?}")
        };
        let signature = match api {
            "openai-completions" => "reasoning_content",
            // The whole reasoning item, for replay.
            "openai-responses" => {
                r#"{"id":"rs_mock-0","type":"reasoning","summary":[{"type":"summary_text","text":"let me think"}],"encrypted_content":"enc-mock-0"}"#
            }
            _ => "sig-mock",
        };
        assert_eq!(
            block.thinking_signature.as_deref(),
            Some(signature),
            "{api}"
        );
        assert_eq!(message.content[1].as_text(), Some("Answer"));
        let usage = &message.usage;
        assert_eq!(
            (usage.input, usage.output, usage.cache_read),
            (10, 5, 3),
            "{api}"
        );
        assert_eq!(usage.total_tokens, 18);
        assert_eq!(usage.reasoning, Some(2), "{api}");
        // $1/M input, $2/M output, $0.5/M cache read.
        let expected = (10.0 * 1.0 + 5.0 * 2.0 + 3.0 * 0.5) / 1e6;
        assert!(
            (usage.cost.total - expected).abs() < 1e-12,
            "{api}: {}",
            usage.cost.total
        );
    }
}

#[tokio::test]
async fn multiple_tool_calls_parse_incrementally() {
    for api in APIS {
        let mock = mock(
            r#"{"responses": [{"text": "Reading both.", "interleave": true, "chunkSize": 5, "toolCalls": [
                {"id": "call_1", "name": "read", "arguments": {"path": "a.txt", "limit": 10}},
                {"id": "call_2", "name": "write", "arguments": {"path": "b.txt", "content": "x\ny"}}]}]}"#,
        )
        .await;
        let model = model_for(api, &mock);
        let events = run(&model, user_context("go"), StreamOptions::default()).await;
        let ends: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                AssistantMessageEvent::ToolCallEnd { tool_call, .. } => Some(tool_call.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(ends.len(), 2, "{api}");
        let (reason, message) = done(&events);
        assert_eq!(reason, StopReason::ToolUse);
        let calls: Vec<_> = message.tool_calls().cloned().collect();
        let id = if api == "openai-responses" {
            "call_1|fc_call_1"
        } else {
            "call_1"
        };
        assert_eq!(calls[0].id, id, "{api}");
        assert_eq!(calls[0].arguments, json!({"path": "a.txt", "limit": 10}));
        assert_eq!(calls[1].name, "write");
        assert_eq!(
            calls[1].arguments,
            json!({"path": "b.txt", "content": "x\ny"})
        );
        assert!(calls.iter().all(|c| c.arguments_error.is_none()));
        assert_eq!(message.text(), "Reading both.");
    }
}

#[tokio::test]
async fn interleaved_openai_deltas_route_by_stream_index() {
    let mock = mock(
        r#"{"responses": [{"interleave": true, "chunkSize": 2, "toolCalls": [
            {"id": "a", "name": "read", "arguments": {"path": "first"}},
            {"id": "b", "name": "read", "arguments": {"path": "second"}}]}]}"#,
    )
    .await;
    let model = model_for("openai-completions", &mock);
    let events = run(&model, user_context("go"), StreamOptions::default()).await;
    let indexes: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::ToolCallDelta { content_index, .. } => Some(*content_index),
            _ => None,
        })
        .collect();
    assert!(
        indexes.windows(2).any(|w| w[0] != w[1]),
        "deltas alternate: {indexes:?}"
    );
    let (_, message) = done(&events);
    let paths: Vec<_> = message
        .tool_calls()
        .map(|c| c.arguments["path"].clone())
        .collect();
    assert_eq!(paths, [json!("first"), json!("second")]);
}

#[tokio::test]
async fn utf8_split_across_http_chunks_survives() {
    let text = "héllo wörld 😀 ünïcödé — ✓";
    for api in APIS {
        let script = json!({"responses": [{"text": text, "writeBytes": 3,
            "toolCalls": [{"id": "t", "name": "write", "arguments": {"content": "日本語 😀"}}]}]});
        let mock = mock(&script.to_string()).await;
        let model = model_for(api, &mock);
        let events = run(&model, user_context("x"), StreamOptions::default()).await;
        let (_, message) = done(&events);
        assert_eq!(message.text(), text, "{api}");
        assert_eq!(
            message.tool_calls().next().unwrap().arguments,
            json!({"content": "日本語 😀"})
        );
    }
}

#[tokio::test]
async fn openai_stream_without_done_marker_but_with_finish_reason_succeeds() {
    let mock = mock(r#"{"responses": [{"text": "ok", "omitDone": true}]}"#).await;
    let events = run(
        &model_for("openai-completions", &mock),
        user_context("x"),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(done(&events).1.text(), "ok");
}

#[tokio::test]
async fn tool_calls_without_ids_get_generated_ones() {
    let mock = mock(r#"{"responses": [{"toolCalls": [{"id": "", "name": "read", "arguments": {"path": "a"}}]}]}"#).await;
    let events = run(
        &model_for("openai-completions", &mock),
        user_context("x"),
        StreamOptions::default(),
    )
    .await;
    let (_, message) = done(&events);
    let call = message.tool_calls().next().unwrap();
    assert!(
        call.id.starts_with("call_") && call.id.len() == 29,
        "{}",
        call.id
    );
    assert_eq!(call.arguments, json!({"path": "a"}));
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Whatever the delta size and however the bytes are cut into HTTP chunks, every API
        /// reassembles exactly the scripted text and tool arguments.
        #[test]
        fn any_chunking_reassembles_text_and_arguments(
            text in "[a-zé😀 \"\\\\\n]{1,60}",
            value in "[a-z😀\"\\\\]{0,30}",
            chunk_size in 1usize..9,
            write_bytes in prop::option::of(1usize..12),
            api in prop::sample::select(APIS.to_vec()),
        ) {
            let script = json!({"responses": [{"text": text, "chunkSize": chunk_size, "writeBytes": write_bytes,
                "toolCalls": [{"id": "c", "name": "write", "arguments": {"content": value}}]}]});
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let message = runtime.block_on(async {
                let mock = mock(&script.to_string()).await;
                let events = run(&model_for(api, &mock), user_context("x"), StreamOptions::default()).await;
                done(&events).1
            });
            prop_assert_eq!(message.text(), text);
            prop_assert_eq!(message.tool_calls().next().unwrap().arguments.clone(), json!({"content": value}));
        }
    }
}
