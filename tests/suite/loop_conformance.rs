//! Integration tests: loop_conformance. pi-agent-core 1.6.0's `agent-loop.test.ts` (spec §5.1,
//! L1…L35), ported case by case with their assertions, plus the pinned "Observed" traces.
//! Upstream's 20 ms timers are replaced by explicit notifications.

mod hooks;
mod modes;
mod requests;
mod run_tool;
mod terminate;
mod tools;

use std::sync::{Arc, Mutex};

use agent_lsp::agent::config::{AgentLoopConfig, LoopError, LoopOutcome};
use agent_lsp::agent::hooks::AgentContext;
use agent_lsp::agent::message::{
    AgentMessage, CustomMessage, MessageContent, StopReason, SystemMessage, UserMessage,
};
use agent_lsp::agent::run_loop::{run_agent_loop, run_agent_loop_continue};
use agent_lsp::agent::tool::ToolRef;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::suite::support::mock_stream::*;

pub(crate) fn config() -> AgentLoopConfig {
    let mut c = AgentLoopConfig::new(create_model());
    c.hooks.convert_to_llm = Some(identity_converter());
    c
}

pub(crate) fn context(messages: Vec<AgentMessage>, tools: Vec<ToolRef>) -> AgentContext {
    AgentContext::new(messages, tools)
}

pub(crate) async fn run(
    prompts: Vec<AgentMessage>,
    ctx: AgentContext,
    config: AgentLoopConfig,
    stream: Arc<MockStream>,
) -> (LoopOutcome, Recorder) {
    let rec = Recorder::default();
    let outcome = run_agent_loop(
        prompts,
        ctx,
        config,
        rec.emit(),
        CancellationToken::new(),
        stream,
    )
    .await;
    (outcome, rec)
}

#[tokio::test]
async fn l1_uses_the_configured_stream_fn() {
    // Rust has no global default stream function: the StreamFn is a required argument, so the
    // legacy-caller case reduces to "the given function is the one called, exactly once".
    let stream = MockStream::responses(vec![text_reply("fallback")]);
    let (outcome, _) = run(
        vec![user("Hello")],
        context(vec![], vec![]),
        config(),
        stream.clone(),
    )
    .await;
    assert_eq!(stream.count(), 1);
    assert_eq!(roles(&outcome.new_messages), ["user", "assistant"]);
}

#[tokio::test]
async fn l2_should_emit_events_with_agent_message_types() {
    let stream = MockStream::responses(vec![text_reply("Hi there!")]);
    let (outcome, rec) = run(
        vec![user("Hello")],
        context(vec![], vec![]),
        config(),
        stream,
    )
    .await;
    assert_eq!(outcome.new_messages.len(), 2);
    assert_eq!(roles(&outcome.new_messages), ["user", "assistant"]);
    let kinds = rec.kinds();
    for k in [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ] {
        assert!(kinds.contains(&k.to_string()), "missing {k}");
    }
    assert_eq!(
        rec.trace(),
        t(&[
            "agent_start",
            "turn_start",
            "ms:user(Hello)",
            "me:user(Hello)",
            "ms:assistant",
            "me:assistant",
            "turn_end[]",
            "agent_end(2)"
        ])
    );
}

#[tokio::test]
async fn l3_should_build_provider_context_exclusively_from_transcript_messages() {
    let system = AgentMessage::from(SystemMessage {
        content: "Transcript prompt".into(),
        tools_added: Some(vec![]),
        timestamp: 1,
        ..Default::default()
    });
    let stream = MockStream::responses(vec![text_reply("done")]);
    let (_, rec) = run(
        vec![system.clone(), user("Hello")],
        context(vec![], vec![]),
        config(),
        stream.clone(),
    )
    .await;
    // LlmContext has the single field `messages`; the first is the transcript's system prompt.
    assert_eq!(stream.calls()[0].context.messages[0], system);
    assert_eq!(
        rec.trace(),
        t(&[
            "agent_start",
            "turn_start",
            "ms:system",
            "me:system",
            "ms:user(Hello)",
            "me:user(Hello)",
            "ms:assistant",
            "me:assistant",
            "turn_end[]",
            "agent_end(3)"
        ])
    );
}

fn notification() -> AgentMessage {
    let raw = json!({"role": "notification", "text": "This is a notification", "timestamp": 1});
    serde_json::from_value(raw).unwrap()
}

#[tokio::test]
async fn l4_should_handle_custom_message_types_via_convert_to_llm() {
    let converted: Arc<Mutex<Vec<AgentMessage>>> = Arc::default();
    let mut cfg = config();
    let seen = converted.clone();
    cfg.hooks.convert_to_llm = Some(Arc::new(move |messages: Vec<AgentMessage>, _| {
        let out: Vec<AgentMessage> = messages
            .into_iter()
            .filter(|m| matches!(m.role(), "user" | "assistant" | "toolResult"))
            .collect();
        *seen.lock().unwrap() = out.clone();
        Box::pin(async move { Ok(out) })
    }));
    let stream = MockStream::responses(vec![text_reply("Response")]);
    run(
        vec![user("Hello")],
        context(vec![notification()], vec![]),
        cfg,
        stream,
    )
    .await;
    let converted = converted.lock().unwrap().clone();
    assert_eq!(converted.len(), 1);
    assert_eq!(converted[0].role(), "user");
}

#[tokio::test]
async fn l5_should_apply_transform_context_before_convert_to_llm() {
    let transformed: Arc<Mutex<Vec<AgentMessage>>> = Arc::default();
    let converted: Arc<Mutex<Vec<AgentMessage>>> = Arc::default();
    let mut cfg = config();
    let (t2, c2) = (transformed.clone(), converted.clone());
    cfg.hooks.transform_context = Some(Arc::new(move |messages: Vec<AgentMessage>, _| {
        let pruned = messages[messages.len().saturating_sub(2)..].to_vec();
        *t2.lock().unwrap() = pruned.clone();
        Box::pin(async move { Ok(pruned) })
    }));
    cfg.hooks.convert_to_llm = Some(Arc::new(move |messages: Vec<AgentMessage>, _| {
        let out: Vec<AgentMessage> = messages
            .into_iter()
            .filter(|m| matches!(m.role(), "user" | "assistant" | "toolResult"))
            .collect();
        *c2.lock().unwrap() = out.clone();
        Box::pin(async move { Ok(out) })
    }));
    let history = vec![
        user("old message 1"),
        AgentMessage::from(text_reply("old response 1")),
        user("old message 2"),
        AgentMessage::from(text_reply("old response 2")),
    ];
    let stream = MockStream::responses(vec![text_reply("done")]);
    run(
        vec![user("new message")],
        context(history, vec![]),
        cfg,
        stream,
    )
    .await;
    assert_eq!(transformed.lock().unwrap().len(), 2);
    assert_eq!(converted.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn l31_should_throw_when_context_has_no_messages() {
    let stream = MockStream::new(|_, _| panic!("Unexpected stream call"));
    let rec = Recorder::default();
    let err = run_agent_loop_continue(
        context(vec![], vec![]),
        config(),
        rec.emit(),
        CancellationToken::new(),
        stream.clone(),
    )
    .await
    .unwrap_err();
    assert_eq!(err, LoopError::NoMessages);
    assert_eq!(err.to_string(), "Cannot continue: no messages in context");
    let err = run_agent_loop_continue(
        context(vec![AgentMessage::from(text_reply("x"))], vec![]),
        config(),
        rec.emit(),
        CancellationToken::new(),
        stream,
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Cannot continue from message role: assistant"
    );
    assert!(rec.events().is_empty(), "no event before the refusal");
}

#[tokio::test]
async fn l32_should_continue_from_existing_context_without_emitting_user_message_events() {
    let stream = MockStream::responses(vec![text_reply("Response")]);
    let rec = Recorder::default();
    let outcome = run_agent_loop_continue(
        context(vec![user("Hello")], vec![]),
        config(),
        rec.emit(),
        CancellationToken::new(),
        stream,
    )
    .await
    .unwrap();
    assert_eq!(roles(&outcome.new_messages), ["assistant"]);
    let ends: Vec<String> = rec
        .trace()
        .into_iter()
        .filter(|l| l.starts_with("me:"))
        .collect();
    assert_eq!(ends, ["me:assistant"]);
    assert_eq!(
        rec.trace(),
        t(&[
            "agent_start",
            "turn_start",
            "ms:assistant",
            "me:assistant",
            "turn_end[]",
            "agent_end(1)"
        ])
    );
}

#[tokio::test]
async fn l33_should_allow_custom_message_types_as_last_message() {
    let custom = AgentMessage::from(CustomMessage {
        role: "custom".into(),
        fields: json!({"text": "Hook content", "timestamp": 1})
            .as_object()
            .cloned()
            .unwrap(),
    });
    let mut cfg = config();
    cfg.hooks.convert_to_llm = Some(Arc::new(|messages: Vec<AgentMessage>, _| {
        let out = messages
            .into_iter()
            .filter_map(|m| match m {
                AgentMessage::Custom(c) if c.role == "custom" => {
                    Some(AgentMessage::from(UserMessage {
                        content: MessageContent::Text(c.fields["text"].as_str()?.into()),
                        timestamp: 1,
                    }))
                }
                AgentMessage::Custom(_) | AgentMessage::System(_) => None,
                other => Some(other),
            })
            .collect();
        Box::pin(async move { Ok(out) })
    }));
    let stream = MockStream::responses(vec![text_reply("Response")]);
    let rec = Recorder::default();
    let outcome = run_agent_loop_continue(
        context(vec![custom], vec![]),
        cfg,
        rec.emit(),
        CancellationToken::new(),
        stream.clone(),
    )
    .await
    .unwrap();
    assert_eq!(roles(&outcome.new_messages), ["assistant"]);
    assert_eq!(
        user_text(&stream.calls()[0].context.messages[0]).unwrap(),
        "Hook content"
    );
    assert_eq!(
        outcome.new_messages[0].as_assistant().unwrap().stop_reason,
        StopReason::Stop
    );
}
