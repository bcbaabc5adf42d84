//! Helpers for provider tests: models pointing at the mock, event collection, contract checks.

use agent_lsp::agent::message::{AssistantMessage, StopReason};
use agent_lsp::agent::model::{Model, ModelCost};
use agent_lsp::agent::stream_contract::{
    AssistantMessageEvent, LlmContext, StreamFn, StreamOptions, StreamRequest,
};
use agent_lsp::provider::default_stream_fn;
use agent_lsp::testing::{MockProvider, MockScript};

/// The wire APIs under test.
pub const APIS: [&str; 3] = [
    "openai-completions",
    "anthropic-messages",
    "openai-responses",
];

pub fn model_for(api: &str, mock: &MockProvider) -> Model {
    let base_url = if api == "anthropic-messages" {
        mock.anthropic_base_url()
    } else {
        mock.openai_base_url()
    };
    model_at(api, &base_url)
}

/// The test model of `api` at `base_url`.
pub fn model_at(api: &str, base_url: &str) -> Model {
    Model {
        id: "mock-model".into(),
        name: "Mock".into(),
        api: api.into(),
        provider: "mock".into(),
        base_url: base_url.into(),
        reasoning: true,
        input: vec!["text".into(), "image".into()],
        cost: ModelCost {
            input: 1.0,
            output: 2.0,
            cache_read: 0.5,
            cache_write: 0.0,
        },
        context_window: 128_000,
        max_tokens: 4096,
        headers: None,
        compat: None,
    }
}

pub async fn mock(script: &str) -> MockProvider {
    MockProvider::start(MockScript::from_json(script).unwrap())
        .await
        .unwrap()
}

pub fn user_context(text: &str) -> LlmContext {
    LlmContext::new(vec![agent_lsp::agent::message::AgentMessage::user_text(
        text,
    )])
}

/// Streams one response and checks the contract: at most one start (first, after retries),
/// exactly one terminal, last.
pub async fn run(
    model: &Model,
    context: LlmContext,
    options: StreamOptions,
) -> Vec<AssistantMessageEvent> {
    let request = StreamRequest {
        model: model.clone(),
        context,
        options,
    };
    run_with(default_stream_fn().as_ref(), request).await
}

pub async fn run_with(
    provider: &dyn StreamFn,
    request: StreamRequest,
) -> Vec<AssistantMessageEvent> {
    let mut stream = provider.stream(request);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    check_contract(&events);
    events
}

pub fn check_contract(events: &[AssistantMessageEvent]) {
    let terminals = events.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(terminals, 1, "exactly one terminal: {events:#?}");
    assert!(
        events
            .last()
            .is_some_and(AssistantMessageEvent::is_terminal),
        "terminal is last"
    );
    let starts: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, AssistantMessageEvent::Start { .. }))
        .map(|(i, _)| i)
        .collect();
    assert!(starts.len() <= 1, "at most one start");
    let first_block = events.iter().position(|e| {
        !matches!(
            e,
            AssistantMessageEvent::Start { .. } | AssistantMessageEvent::Retry { .. }
        ) && !e.is_terminal()
    });
    if let Some(block) = first_block {
        assert!(
            starts.first().is_some_and(|s| *s < block),
            "start precedes block events"
        );
    }
    if matches!(events.last(), Some(AssistantMessageEvent::Done { .. })) {
        assert_eq!(starts.len(), 1, "success emits start");
    }
}

/// The final message of a successful stream.
pub fn done(events: &[AssistantMessageEvent]) -> (StopReason, AssistantMessage) {
    match events.last() {
        Some(AssistantMessageEvent::Done { reason, message }) => (*reason, (**message).clone()),
        other => panic!("expected done, got {other:#?}"),
    }
}

/// The error terminal of a failed stream.
pub fn failed(events: &[AssistantMessageEvent]) -> (StopReason, AssistantMessage) {
    match events.last() {
        Some(AssistantMessageEvent::Error { reason, error }) => (*reason, (**error).clone()),
        other => panic!("expected error, got {other:#?}"),
    }
}

pub fn error_text(events: &[AssistantMessageEvent]) -> String {
    failed(events).1.error_message.unwrap_or_default()
}

pub fn no_retries() -> StreamOptions {
    StreamOptions {
        max_retries: Some(0),
        ..StreamOptions::default()
    }
}

/// Concatenated text deltas.
pub fn text_deltas(events: &[AssistantMessageEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}
