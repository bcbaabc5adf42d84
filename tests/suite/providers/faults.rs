//! Failures become one clear error terminal, for every API: HTTP statuses, retries, refused and
//! cut connections, malformed SSE, missing terminal events, odd stop reasons, aborts.

use agent_lsp::agent::message::StopReason;
use agent_lsp::agent::model::Model;
use agent_lsp::agent::stream_contract::{
    AssistantMessageEvent, LlmContext, StreamFn, StreamOptions, StreamRequest,
};
use agent_lsp::provider::ProviderRouter;

use super::common::*;

fn retries(events: &[AssistantMessageEvent]) -> Vec<(u32, u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::Retry {
                attempt,
                delay_ms,
                error_message,
                ..
            } => Some((*attempt, *delay_ms, error_message.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn http_500_is_an_error_with_the_body_text() {
    for api in APIS {
        let mock = mock(r#"{"responses": [{"status": 500, "body": "{\"error\": {\"message\": \"boom inside\"}}"}]}"#).await;
        let events = run(&model_for(api, &mock), user_context("x"), no_retries()).await;
        let (reason, message) = failed(&events);
        assert_eq!(reason, StopReason::Error);
        assert_eq!(
            message.error_message.as_deref(),
            Some("500 Internal Server Error: boom inside"),
            "{api}"
        );
        assert_eq!(mock.requests().len(), 1, "no retry with max_retries 0");
    }
}

/// A 404 from a base URL without its `/v1` (a common OPENAI_BASE_URL mistake) says so; a 404
/// from a versioned URL does not guess.
#[tokio::test]
async fn http_404_from_a_base_url_without_v1_says_it_probably_lacks_v1() {
    let mock = mock(r#"{"responses": [{"status": 404, "body": "not found"}, {"status": 404, "body": "not found"}]}"#).await;
    let bare = format!("http://127.0.0.1:{}", mock.port());
    let events = run(
        &model_at("openai-completions", &bare),
        user_context("x"),
        no_retries(),
    )
    .await;
    let (_, message) = failed(&events);
    let text = message.error_message.unwrap();
    assert!(text.starts_with("404 Not Found: not found ("), "{text}");
    assert!(
        text.contains("usually ends in /v1, e.g. OPENAI_BASE_URL=http://127.0.0.1:8080/v1"),
        "{text}"
    );
    let events = run(
        &model_for("openai-completions", &mock),
        user_context("x"),
        no_retries(),
    )
    .await;
    let (_, message) = failed(&events);
    assert_eq!(
        message.error_message.as_deref(),
        Some("404 Not Found: not found")
    );
}

#[tokio::test]
async fn http_429_with_retry_after_is_retried_after_the_delay() {
    for api in APIS {
        let mock = mock(r#"{"responses": [{"status": 429, "retryAfter": 1, "body": "slow down"}, {"text": "finally"}]}"#).await;
        let events = run(
            &model_for(api, &mock),
            user_context("x"),
            StreamOptions::default(),
        )
        .await;
        assert_eq!(done(&events).1.text(), "finally", "{api}");
        let seen = retries(&events);
        assert_eq!(seen.len(), 1, "{api}");
        assert_eq!((seen[0].0, seen[0].1), (1, 1000));
        assert!(
            seen[0].2.contains("429") && seen[0].2.contains("slow down"),
            "{}",
            seen[0].2
        );
        let requests = mock.requests();
        assert_eq!(requests.len(), 2);
        let waited = requests[1].elapsed_ms - requests[0].elapsed_ms;
        assert!(
            waited >= 1000,
            "{api}: second request only {waited} ms after the first"
        );
        assert!(
            matches!(events[0], AssistantMessageEvent::Retry { .. }),
            "retry precedes start"
        );
    }
}

#[tokio::test]
async fn retries_are_bounded() {
    let mock = mock(
        r#"{"responses": [{"status": 503, "retryAfter": 0}, {"status": 503, "retryAfter": 0},
        {"status": 503, "retryAfter": 0, "body": "still down"}]}"#,
    )
    .await;
    let options = StreamOptions {
        max_retries: Some(2),
        ..StreamOptions::default()
    };
    let events = run(
        &model_for("openai-completions", &mock),
        user_context("x"),
        options,
    )
    .await;
    assert_eq!(retries(&events).len(), 2);
    assert!(error_text(&events).contains("still down"));
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn retry_after_beyond_the_cap_fails_fast() {
    let mock = mock(r#"{"responses": [{"status": 429, "retryAfter": 120}]}"#).await;
    let options = StreamOptions {
        max_retry_delay_ms: Some(5_000),
        ..StreamOptions::default()
    };
    let events = run(
        &model_for("anthropic-messages", &mock),
        user_context("x"),
        options,
    )
    .await;
    let text = error_text(&events);
    assert!(
        text.contains("429") && text.contains("maximum retry delay"),
        "{text}"
    );
    assert!(retries(&events).is_empty());
}

#[tokio::test]
async fn abort_during_retry_wait_ends_aborted() {
    let mock = mock(r#"{"responses": [{"status": 429, "retryAfter": 30}]}"#).await;
    let options = StreamOptions::default();
    let signal = options.signal.clone();
    let model = model_for("openai-completions", &mock);
    let router = ProviderRouter::with_defaults();
    let mut stream = router.stream(StreamRequest {
        options,
        ..StreamRequest::new(model, user_context("x"))
    });
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::Retry { .. }) {
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

#[tokio::test]
async fn anthropic_overloaded_event_before_content_is_retried() {
    let mock =
        mock(r#"{"responses": [{"streamError": "Overloaded"}, {"text": "after overload"}]}"#).await;
    let options = StreamOptions {
        max_retry_delay_ms: Some(10),
        ..StreamOptions::default()
    };
    let events = run(
        &model_for("anthropic-messages", &mock),
        user_context("x"),
        options,
    )
    .await;
    assert_eq!(done(&events).1.text(), "after overload");
    let seen = retries(&events);
    assert_eq!(
        (seen.len(), seen[0].1),
        (1, 10),
        "backoff capped at max_retry_delay_ms"
    );
    assert_eq!(seen[0].2, "overloaded_error: Overloaded");
    // Once content streamed, the same error is final.
    let mock2 =
        super::common::mock(r#"{"responses": [{"text": "some", "streamError": "Overloaded"}]}"#)
            .await;
    let events = run(
        &model_for("anthropic-messages", &mock2),
        user_context("x"),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(error_text(&events), "overloaded_error: Overloaded");
    assert_eq!(mock2.requests().len(), 1);
}

#[tokio::test]
async fn refused_connections_are_connection_errors() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    for api in APIS {
        let model = Model {
            base_url: format!("http://127.0.0.1:{port}"),
            ..model_for(api, &mock(r#"{"responses": []}"#).await)
        };
        let events = run(&model, user_context("x"), StreamOptions::default()).await;
        let text = error_text(&events);
        assert!(
            text.starts_with("Connection error:") && text.contains("onnection refused"),
            "{api}: {text}"
        );
        // The mock closing a connection without answering is an error too.
        let mock = mock(r#"{"responses": [{"refuse": true}]}"#).await;
        let events = run(
            &model_for(api, &mock),
            user_context("x"),
            StreamOptions::default(),
        )
        .await;
        assert!(
            error_text(&events).starts_with("Connection error:"),
            "{api}"
        );
    }
}

#[tokio::test]
async fn disconnect_mid_stream_keeps_partial_content() {
    for api in APIS {
        let mock = mock(r#"{"responses": [{"text": "partial answer here", "chunkSize": 3, "disconnectAfterChunks": 5}]}"#).await;
        let events = run(
            &model_for(api, &mock),
            user_context("x"),
            StreamOptions::default(),
        )
        .await;
        let (reason, message) = failed(&events);
        assert_eq!(reason, StopReason::Error);
        let text = message.error_message.clone().unwrap_or_default();
        assert!(
            text.starts_with("Connection lost mid-stream"),
            "{api}: {text}"
        );
        assert!(!message.text().is_empty(), "{api}: partial text kept");
        assert_eq!(mock.requests().len(), 1, "no retry after tokens arrived");
    }
}

#[tokio::test]
async fn malformed_data_line_is_an_error() {
    for (api, expected) in [
        ("openai-completions", "Could not parse OpenAI stream chunk"),
        (
            "anthropic-messages",
            "Could not parse Anthropic SSE event content_block_delta",
        ),
    ] {
        let mock = mock(r#"{"responses": [{"text": "abc", "malformedAfterChunks": 3}]}"#).await;
        let events = run(
            &model_for(api, &mock),
            user_context("x"),
            StreamOptions::default(),
        )
        .await;
        assert!(
            error_text(&events).starts_with(expected),
            "{api}: {}",
            error_text(&events)
        );
    }
}

#[tokio::test]
async fn missing_terminal_events_are_errors() {
    for (api, expected) in [
        ("openai-completions", "Stream ended without finish_reason"),
        (
            "anthropic-messages",
            "Anthropic stream ended before message_stop",
        ),
    ] {
        let mock = mock(
            r#"{"responses": [{"text": "cut short", "omitDone": true, "omitStopReason": true}]}"#,
        )
        .await;
        let events = run(
            &model_for(api, &mock),
            user_context("x"),
            StreamOptions::default(),
        )
        .await;
        let (reason, message) = failed(&events);
        assert_eq!(
            (reason, message.error_message.as_deref()),
            (StopReason::Error, Some(expected))
        );
        assert_eq!(message.text(), "cut short");
    }
    let mock = mock(r#"{"responses": [{"text": "no stop event", "omitDone": true}]}"#).await;
    let events = run(
        &model_for("anthropic-messages", &mock),
        user_context("x"),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(
        error_text(&events),
        "Anthropic stream ended before message_stop"
    );
}

#[tokio::test]
async fn length_stop_with_truncated_tool_json() {
    for (api, raw) in [
        ("openai-completions", "length"),
        ("anthropic-messages", "max_tokens"),
    ] {
        let script = serde_json::json!({"responses": [{"stopReason": raw, "chunkSize": 4,
            "toolCalls": [{"id": "w1", "name": "write", "rawArguments": "{\"path\": \"a.txt\", \"content\": \"unfini"}]}]});
        let mock = mock(&script.to_string()).await;
        let events = run(
            &model_for(api, &mock),
            user_context("x"),
            StreamOptions::default(),
        )
        .await;
        let (reason, message) = done(&events);
        assert_eq!(reason, StopReason::Length, "{api}");
        assert_eq!(message.raw_stop_reason.as_deref(), Some(raw));
        let call = message.tool_calls().next().unwrap();
        assert_eq!(call.arguments, serde_json::json!({}));
        let error = call.arguments_error.as_deref().unwrap_or_default();
        assert!(
            error.contains("invalid tool arguments JSON"),
            "{api}: {error}"
        );
    }
}

#[tokio::test]
async fn unknown_stop_reasons_are_errors_kept_raw() {
    for (api, expected) in [
        ("openai-completions", "Provider finish_reason: weird_reason"),
        ("anthropic-messages", "Unhandled stop reason: weird_reason"),
    ] {
        let mock = mock(r#"{"responses": [{"text": "odd", "stopReason": "weird_reason"}]}"#).await;
        let events = run(
            &model_for(api, &mock),
            user_context("x"),
            StreamOptions::default(),
        )
        .await;
        let (reason, message) = failed(&events);
        assert_eq!(reason, StopReason::Error);
        assert_eq!(message.error_message.as_deref(), Some(expected));
        assert_eq!(message.raw_stop_reason.as_deref(), Some("weird_reason"));
    }
}

#[tokio::test]
async fn content_filter_and_refusal_map_to_errors() {
    let first = mock(r#"{"responses": [{"text": "x", "stopReason": "content_filter"}]}"#).await;
    let events = run(
        &model_for("openai-completions", &first),
        user_context("x"),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(
        error_text(&events),
        "Provider finish_reason: content_filter"
    );
    let mock = mock(r#"{"responses": [{"text": "x", "stopReason": "refusal"}]}"#).await;
    let events = run(
        &model_for("anthropic-messages", &mock),
        user_context("x"),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(
        error_text(&events),
        "The model refused to complete the request"
    );
}

#[tokio::test]
async fn abort_mid_stream_ends_aborted() {
    for api in APIS {
        let mock = mock(r#"{"responses": [{"text": "a long slow answer that keeps going", "chunkSize": 1, "delayMs": 20}]}"#).await;
        let options = StreamOptions::default();
        let signal = options.signal.clone();
        let router = ProviderRouter::with_defaults();
        let mut stream = router.stream(StreamRequest {
            options,
            ..StreamRequest::new(model_for(api, &mock), user_context("x"))
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
        assert_eq!(reason, StopReason::Aborted, "{api}");
        assert_eq!(
            message.error_message.as_deref(),
            Some("Request was aborted")
        );
        assert!(message.text().len() < 10, "{api}: stopped early");
    }
}

#[tokio::test]
async fn exhausted_script_and_unknown_api() {
    let mock = mock(r#"{"responses": []}"#).await;
    let events = run(
        &model_for("openai-completions", &mock),
        user_context("x"),
        no_retries(),
    )
    .await;
    assert!(error_text(&events).contains("no more scripted responses"));
    let model = Model {
        api: "martian-api".into(),
        ..Model::default()
    };
    let events = run(&model, LlmContext::default(), StreamOptions::default()).await;
    assert_eq!(
        error_text(&events),
        "No provider registered for api: martian-api"
    );
}

#[tokio::test]
async fn a_non_streaming_json_answer_is_a_clear_error() {
    for api in APIS {
        let mock = mock(r#"{"responses": [{"status": 200, "body": "{\"choices\": []}"}]}"#).await;
        let events = run(
            &model_for(api, &mock),
            user_context("x"),
            StreamOptions::default(),
        )
        .await;
        let text = error_text(&events);
        assert!(
            text.starts_with("Expected an event stream but the server answered application/json"),
            "{api}: {text}"
        );
        assert!(text.ends_with(r#"{"choices": []}"#));
    }
}

#[tokio::test]
async fn a_silent_server_times_out_after_the_idle_limit() {
    // The server sends its headers at once, then nothing for ten minutes. The limit is long
    // enough that a loaded machine still gets the headers in time (a 100 ms limit once timed
    // out waiting for them: "no response from …"), so the silence after them is what times
    // out; the three APIs wait side by side.
    let silent = |api: &'static str| async move {
        let mock =
            mock(r#"{"responses": [{"text": "slow", "chunkSize": 1, "delayMs": 600000}]}"#).await;
        let mut options = StreamOptions::default();
        options
            .extra
            .insert("timeoutMs".into(), serde_json::json!(3000));
        let events = run(&model_for(api, &mock), user_context("x"), options).await;
        (api, failed(&events))
    };
    for (api, (reason, message)) in futures_util::future::join_all(APIS.map(silent)).await {
        assert_eq!(reason, StopReason::Error);
        assert_eq!(
            message.error_message.as_deref(),
            Some("Request timed out: no event for 3000 ms"),
            "{api}"
        );
    }
}
