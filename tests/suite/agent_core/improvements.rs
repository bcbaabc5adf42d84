//! The deliberate improvements over pi 1.6 (see `agent_lsp::agent` docs, "doc/improvements").

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_lsp::agent::config::{AgentLoopConfig, Emit};
use agent_lsp::agent::event::AgentEvent;
use agent_lsp::agent::hooks::{AgentContext, max_turns};
use agent_lsp::agent::message::{
    AgentMessage, ContentBlock, StopReason, ToolResultMessage, UserMessage,
};
use agent_lsp::agent::run_loop::run_agent_loop;
use agent_lsp::agent::stream::{DISCARD_REASON, PROTOCOL_REPAIR_TEXT, STREAM_ENDED_TEXT};
use agent_lsp::agent::stream_contract::{
    AssistantEventStream, AssistantMessageEvent, event_channel,
};
use agent_lsp::agent::tool::{AgentToolResult, ExecutionMode};
use agent_lsp::agent::transcript::{IncrementalTools, current_tools};
use agent_lsp::agent::{Agent, AgentOptions};
use proptest::prelude::*;
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{agent_with, record};
use crate::suite::support::mock_stream::*;

fn count_agent_ends(events: &[AgentEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, AgentEvent::AgentEnd { .. }))
        .count()
}

fn loop_config() -> AgentLoopConfig {
    AgentLoopConfig::new(create_model())
}

// 1. The core closes every event sequence.

#[tokio::test]
async fn i1_failing_listener_closes_the_sequence_with_exactly_one_agent_end() {
    let (agent, rec) = agent_with(MockStream::responses(vec![text_reply("ok")]));
    agent.subscribe(Arc::new(|e: Arc<AgentEvent>, _| {
        let fail = matches!(
            &*e,
            AgentEvent::MessageEnd { message } if matches!(message, AgentMessage::Assistant(_))
        );
        Box::pin(async move {
            if fail {
                Err("listener broke".into())
            } else {
                Ok(())
            }
        })
    }));
    let outcome = agent.prompt_text("go").unwrap().wait().await;
    assert_eq!(outcome.error.as_deref(), Some("listener broke"));
    let events = rec.events();
    assert_eq!(count_agent_ends(&events), 1);
    assert_eq!(rec.kinds().last().unwrap(), "agent_end");
    assert!(!agent.state().is_streaming);
}

#[tokio::test]
async fn i1_a_listener_failing_on_every_event_still_gets_exactly_one_agent_end() {
    let (agent, rec) = agent_with(MockStream::responses(vec![text_reply("ok")]));
    agent.subscribe(Arc::new(|_, _| Box::pin(async { Err("always".into()) })));
    let outcome = agent.prompt_text("go").unwrap().wait().await;
    assert_eq!(outcome.error.as_deref(), Some("always"));
    assert_eq!(
        rec.kinds(),
        t(&[
            "agent_start",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ])
    );
}

#[tokio::test]
async fn i1_failing_hook_in_a_raw_loop_closes_the_sequence() {
    let mut cfg = loop_config();
    cfg.hooks.prepare_request = Some(Arc::new(|_, _| {
        Box::pin(async { Err("prepare failed".into()) })
    }));
    let rec = Recorder::default();
    let outcome = run_agent_loop(
        vec![user("go")],
        AgentContext::default(),
        cfg,
        rec.emit(),
        CancellationToken::new(),
        MockStream::responses(vec![text_reply("ok")]),
    )
    .await;
    assert_eq!(outcome.error.as_deref(), Some("prepare failed"));
    assert_eq!(
        rec.trace(),
        t(&[
            "agent_start",
            "turn_start",
            "ms:user(go)",
            "me:user(go)",
            "ms:assistant(error)",
            "me:assistant(error)",
            "turn_end[]",
            "agent_end(1)"
        ])
    );
}

#[tokio::test]
async fn i1_stream_without_terminal_event_becomes_an_error_message() {
    let stream = MockStream::new(|_, _| {
        AssistantEventStream::from_events(vec![AssistantMessageEvent::Start {
            partial: Box::new(text_reply("")),
        }])
    });
    let (agent, rec) = agent_with(stream);
    let outcome = agent.prompt_text("go").unwrap().wait().await;
    assert_eq!(outcome.error.as_deref(), Some(STREAM_ENDED_TEXT));
    assert_eq!(
        STREAM_ENDED_TEXT,
        "Provider stream ended without a terminal event"
    );
    let last = outcome.new_messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(count_agent_ends(&rec.events()), 1);
}

#[tokio::test]
async fn i1_a_panicking_tool_becomes_an_error_result() {
    let tool = FnTool::new("explode", json!({}), |_, _, _, _| {
        Box::pin(async { panic!("tool exploded") })
    })
    .arc();
    let stream = MockStream::responses(vec![
        tool_use(vec![tool_call("tool-1", "explode", json!({}))]),
        text_reply("done"),
    ]);
    let mut options = AgentOptions::new(stream);
    options.tools = vec![tool];
    let agent = Agent::new(options);
    let outcome = agent.prompt_text("go").unwrap().wait().await;
    assert_eq!(outcome.error, None);
    let result = outcome
        .new_messages
        .iter()
        .find_map(AgentMessage::as_tool_result)
        .unwrap();
    assert!(result.is_error);
    assert_eq!(result.content, vec![ContentBlock::text("tool exploded")]);
}

#[tokio::test]
async fn i1_a_panicking_listener_fails_the_run_but_closes_it() {
    let (agent, rec) = agent_with(MockStream::responses(vec![text_reply("ok")]));
    agent.subscribe(Arc::new(|e: Arc<AgentEvent>, _| {
        let boom = matches!(*e, AgentEvent::TurnStart);
        Box::pin(async move {
            if boom {
                panic!("listener exploded");
            }
            Ok(())
        })
    }));
    let outcome = agent.prompt_text("go").unwrap().wait().await;
    assert_eq!(outcome.error.as_deref(), Some("listener exploded"));
    assert_eq!(count_agent_ends(&rec.events()), 1);
    assert!(!agent.state().is_streaming);
}

// 2. Abort is final.

#[tokio::test]
async fn i2_no_provider_request_is_started_after_an_abort_during_tools() {
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let aborting = FnTool::new("abort", json!({}), move |_, _, _, _| {
        c.cancel();
        Box::pin(async { Ok(AgentToolResult::text("aborted the run")) })
    })
    .arc();
    let stream = MockStream::responses(vec![
        tool_use(vec![tool_call("tool-1", "abort", json!({}))]),
        text_reply("must not be requested"),
    ]);
    let rec = Recorder::default();
    let outcome = run_agent_loop(
        vec![user("go")],
        AgentContext::new(vec![], vec![aborting]),
        loop_config(),
        rec.emit(),
        cancel,
        stream.clone(),
    )
    .await;
    assert_eq!(stream.count(), 1, "pi 1.6 would make a second request");
    assert!(outcome.aborted);
    let last = outcome.new_messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(count_agent_ends(&rec.events()), 1);
}

#[tokio::test]
async fn i2_an_in_flight_stream_ends_aborted() {
    let (sink, stream) = event_channel();
    let slot = Mutex::new(Some(stream));
    let requested = Arc::new(Notify::new());
    let r = requested.clone();
    let mock = MockStream::new(move |_, _| {
        r.notify_one();
        slot.lock().unwrap().take().unwrap()
    });
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let rec = Recorder::default();
    let run = tokio::spawn(run_agent_loop(
        vec![user("go")],
        AgentContext::default(),
        loop_config(),
        rec.emit(),
        c,
        mock,
    ));
    requested.notified().await;
    assert!(
        sink.send(AssistantMessageEvent::Start {
            partial: Box::new(text_reply(""))
        })
        .await
    );
    cancel.cancel();
    let outcome = run.await.unwrap();
    assert!(outcome.aborted);
    assert_eq!(
        rec.trace()[4..].to_vec(),
        t(&[
            "ms:assistant",
            "me:assistant(aborted)",
            "turn_end[]",
            "agent_end(2)"
        ])
    );
}

#[tokio::test]
async fn i2_running_and_queued_tools_end_with_operation_aborted_and_stubborn_tools_are_abandoned() {
    let cancel = CancellationToken::new();
    let started = Arc::new(Notify::new());
    let s = started.clone();
    // Ignores cancellation and never finishes.
    let stubborn = FnTool::new("stubborn", json!({}), move |_, _, _, _| {
        s.notify_one();
        Box::pin(std::future::pending())
    })
    .arc();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let later = FnTool::new("later", json!({}), move |_, _, _, _| {
        r.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(AgentToolResult::text("ran")) })
    })
    .arc();
    let mut cfg = loop_config();
    cfg.tool_execution = ExecutionMode::Sequential;
    cfg.abort_grace = Duration::from_millis(50);
    let stream = MockStream::responses(vec![tool_use(vec![
        tool_call("tool-1", "stubborn", json!({})),
        tool_call("tool-2", "later", json!({})),
    ])]);
    let rec = Recorder::default();
    let run = tokio::spawn(run_agent_loop(
        vec![user("go")],
        AgentContext::new(vec![], vec![stubborn, later]),
        cfg,
        rec.emit(),
        cancel.clone(),
        stream.clone(),
    ));
    started.notified().await;
    cancel.cancel();
    let outcome = run.await.unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    let results: Vec<&ToolResultMessage> = outcome
        .new_messages
        .iter()
        .filter_map(AgentMessage::as_tool_result)
        .collect();
    assert_eq!(results.len(), 2);
    for r in &results {
        assert!(r.is_error);
        assert_eq!(r.content, vec![ContentBlock::text("Operation aborted")]);
    }
    assert!(
        results[0].duration_ms.is_some(),
        "execute ran for the stubborn tool"
    );
    assert_eq!(results[1].duration_ms, None, "the queued tool never ran");
    assert_eq!(stream.count(), 1);
    assert!(outcome.aborted);
}

// 3. Incremental transcript tool replay.

fn arb_message() -> impl Strategy<Value = AgentMessage> {
    use agent_lsp::agent::message::{SystemMessage, ToolDeclaration, ToolReference};
    let names = prop::sample::select(vec!["a", "b", "c"]);
    let added = prop::collection::vec((names.clone(), 0u8..3), 0..3);
    let removed = prop::collection::vec(names, 0..2);
    prop_oneof![
        (added, removed).prop_map(|(added, removed)| AgentMessage::from(SystemMessage {
            tools_added: Some(
                added
                    .into_iter()
                    .map(|(n, d)| ToolDeclaration {
                        name: n.into(),
                        description: d.to_string(),
                        parameters: json!({"type": "object"}),
                        constrained_sampling: None,
                    })
                    .collect()
            ),
            tools_removed: Some(
                removed
                    .into_iter()
                    .map(|n| ToolReference { name: n.into() })
                    .collect()
            ),
            ..Default::default()
        })),
        Just(AgentMessage::from(UserMessage {
            content: "x".into(),
            timestamp: 1
        })),
    ]
}

proptest! {
    #[test]
    fn i3_incremental_replay_equals_current_tools_at_every_cut(
        messages in prop::collection::vec(arb_message(), 0..30),
    ) {
        let mut cache = IncrementalTools::default();
        for cut in 0..=messages.len() {
            prop_assert_eq!(cache.tools_at(&messages[..cut]).to_vec(), current_tools(&messages[..cut]));
        }
        // A shorter transcript (a replaced context) resets the cache by itself.
        let half = messages.len() / 2;
        prop_assert_eq!(cache.tools_at(&messages[..half]).to_vec(), current_tools(&messages[..half]));
    }
}

// 4. The default convertToLlm projects the tool-call protocol.

#[tokio::test]
async fn i4_default_convert_drops_orphans_and_empty_failures_and_pairs_results() {
    let stream = MockStream::responses(vec![text_reply("ok")]);
    let mut options = AgentOptions::new(stream.clone());
    let orphan = AgentMessage::from(ToolResultMessage {
        tool_call_id: "gone".into(),
        tool_name: "echo".into(),
        ..Default::default()
    });
    let call = AgentMessage::from(tool_use(vec![tool_call("c1", "echo", json!({}))]));
    let result = AgentMessage::from(ToolResultMessage {
        tool_call_id: "c1".into(),
        tool_name: "echo".into(),
        ..Default::default()
    });
    let mut empty_error = assistant(vec![], StopReason::Error);
    empty_error.error_message = Some("boom".into());
    options.messages = vec![
        orphan,
        call,
        user("interjection"),
        result,
        AgentMessage::from(empty_error),
    ];
    let agent = Agent::new(options);
    agent.prompt_text("next").unwrap().wait().await;
    let sent: Vec<String> = stream.calls()[0]
        .context
        .messages
        .iter()
        .map(|m| match m {
            AgentMessage::ToolResult(r) => format!("toolResult:{}", r.tool_call_id),
            other => other.role().to_string(),
        })
        .collect();
    assert_eq!(sent, ["assistant", "toolResult:c1", "user", "user"]);
}

// 5. message_discard.

fn faked_then_real() -> Arc<MockStream> {
    MockStream::new(|i, _| {
        if i == 0 {
            let fake = text_reply(
                "<invoke name=\"echo\"><parameter name=\"value\">x</parameter></invoke>",
            );
            AssistantEventStream::from_events(vec![
                AssistantMessageEvent::Start {
                    partial: Box::new(assistant(vec![], StopReason::Stop)),
                },
                AssistantMessageEvent::TextStart { content_index: 0 },
                AssistantMessageEvent::TextDelta {
                    content_index: 0,
                    delta: fake.text(),
                },
                AssistantMessageEvent::Done {
                    reason: StopReason::Stop,
                    message: Box::new(fake),
                },
            ])
        } else {
            terminal(tool_use(vec![tool_call(
                "tool-1",
                "echo",
                json!({"value": "x"}),
            )]))
        }
    })
}

#[tokio::test]
async fn i5_faked_tool_calls_are_discarded_and_retried_once_with_a_repair_instruction() {
    let stream = faked_then_real();
    let mut options = AgentOptions::new(stream.clone());
    options.tools = vec![echo_tool(Arc::default())];
    options.hooks.finish_turn = Some(max_turns(1));
    let agent = Agent::new(options);
    let rec = record(&agent);
    agent.prompt_text("go").unwrap().wait().await;
    let discards: Vec<String> = rec
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageDiscard { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(discards, [DISCARD_REASON]);
    assert_eq!(stream.count(), 2);
    let retry = &stream.calls()[1].context.messages;
    assert_eq!(
        user_text(retry.last().unwrap()).as_deref(),
        Some(PROTOCOL_REPAIR_TEXT)
    );
    let state = agent.state();
    assert_eq!(
        roles(&state.messages),
        ["system", "user", "assistant", "toolResult"]
    );
    assert!(
        state
            .messages
            .iter()
            .all(|m| user_text(m).as_deref() != Some(PROTOCOL_REPAIR_TEXT))
    );
    assert!(!state.messages.iter().any(|m| {
        m.as_assistant()
            .is_some_and(|a| a.text().contains("<invoke"))
    }));
    let trace = rec.trace();
    assert_eq!(
        trace[4..10].to_vec(),
        t(&[
            "ms:assistant",
            "message_update",
            "message_update",
            "message_discard",
            "ms:assistant(toolUse)",
            "me:assistant(toolUse)"
        ])
    );
}

#[tokio::test]
async fn i5_without_tools_text_markup_is_kept() {
    let stream = faked_then_real();
    let (agent, rec) = agent_with(stream.clone());
    agent.prompt_text("go").unwrap().wait().await;
    assert_eq!(stream.count(), 1);
    assert!(!rec.kinds().contains(&"message_discard".to_string()));
}

// 6. The turn limit is a finishTurn policy.

#[tokio::test]
async fn i6_max_turns_ends_the_run_after_n_responses() {
    let stream = MockStream::responses(vec![tool_use(vec![tool_call(
        "tool-1",
        "echo",
        json!({"value": "x"}),
    )])]);
    let mut options = AgentOptions::new(stream.clone());
    options.tools = vec![echo_tool(Arc::default())];
    options.hooks.finish_turn = Some(max_turns(2));
    let agent = Agent::new(options);
    let outcome = agent.prompt_text("go").unwrap().wait().await;
    assert_eq!(stream.count(), 2);
    assert_eq!(outcome.new_messages.last().unwrap().role(), "toolResult");
    // Reusable across runs: the count is per run.
    agent.prompt_text("again").unwrap().wait().await;
    assert_eq!(stream.count(), 4);
}

// Provider retries are forwarded.

#[tokio::test]
async fn provider_retry_events_are_forwarded() {
    let stream = MockStream::new(|_, _| {
        AssistantEventStream::from_events(vec![
            AssistantMessageEvent::Retry {
                attempt: 1,
                max_attempts: 3,
                delay_ms: 10,
                error_message: "overloaded".into(),
            },
            AssistantMessageEvent::Done {
                reason: StopReason::Stop,
                message: Box::new(text_reply("ok")),
            },
        ])
    });
    let rec = Recorder::default();
    let emit: Emit = rec.emit();
    run_agent_loop(
        vec![user("go")],
        AgentContext::default(),
        loop_config(),
        emit,
        CancellationToken::new(),
        stream,
    )
    .await;
    assert!(rec.events().contains(&AgentEvent::ProviderRetry {
        attempt: 1,
        max_attempts: 3,
        delay_ms: 10,
        error_message: "overloaded".into(),
    }));
}
