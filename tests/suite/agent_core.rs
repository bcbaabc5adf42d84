//! Integration tests: agent_core. The `Agent` handle (spec §4: busy texts, queues, continue
//! rules, reset, abort, idle, barriers, §3.10's failure examples) and, in `improvements`, the
//! deliberate improvements over pi 1.6.

mod improvements;
mod sharing;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_lsp::agent::event::AgentEvent;
use agent_lsp::agent::handle::{
    BUSY_CONTINUE, BUSY_PROMPT, BUSY_RESET, CONTINUE_FROM_ASSISTANT, NO_MESSAGES,
};
use agent_lsp::agent::message::{AgentMessage, StopReason, SystemMessage};
use agent_lsp::agent::stream_contract::{
    AssistantEventSink, AssistantEventStream, StreamFn, event_channel,
};
use agent_lsp::agent::{Agent, AgentError, AgentListener, AgentOptions, QueueMode};
use serde_json::json;

use crate::suite::support::mock_stream::*;

pub(crate) fn agent_with(stream: Arc<dyn StreamFn>) -> (Agent, Recorder) {
    let mut options = AgentOptions::new(stream);
    options.model = create_model();
    let agent = Agent::new(options);
    let rec = record(&agent);
    (agent, rec)
}

/// Subscribes a recorder to every event.
pub(crate) fn record(agent: &Agent) -> Recorder {
    let rec = Recorder::default();
    let events = rec.events.clone();
    let listener: AgentListener = Arc::new(move |e: Arc<AgentEvent>, _| {
        events.lock().unwrap().push((*e).clone());
        Box::pin(async { Ok(()) })
    });
    agent.subscribe(listener);
    rec
}

/// A provider whose first response waits for the test (through the returned sink); later
/// calls answer `stop` "done".
pub(crate) fn gated() -> (AssistantEventSink, Arc<MockStream>) {
    let (sink, stream) = event_channel();
    let first: Mutex<Option<AssistantEventStream>> = Mutex::new(Some(stream));
    let mock = MockStream::new(move |_, _| {
        first
            .lock()
            .unwrap()
            .take()
            .unwrap_or_else(|| terminal(text_reply("done")))
    });
    (sink, mock)
}

pub(crate) async fn finish_gate(sink: &AssistantEventSink) {
    let message = text_reply("released");
    assert!(
        sink.send(
            agent_lsp::agent::stream_contract::AssistantMessageEvent::Done {
                reason: StopReason::Stop,
                message: Box::new(message),
            }
        )
        .await
    );
}

#[tokio::test]
async fn prompt_runs_to_idle_and_appends_to_state() {
    let (agent, rec) = agent_with(MockStream::responses(vec![text_reply("Hi")]));
    let outcome = agent.prompt_text("Hello").unwrap().wait().await;
    assert_eq!(outcome.error, None);
    assert_eq!(roles(&outcome.new_messages), ["user", "assistant"]);
    let state = agent.state();
    assert!(!state.is_streaming);
    assert_eq!(roles(&state.messages), ["user", "assistant"]);
    assert_eq!(
        state.messages[1].as_assistant().unwrap().thinking_level,
        Some(agent_lsp::agent::message::ThinkingLevel::Off)
    );
    assert_eq!(rec.kinds().last().unwrap(), "agent_end");
}

#[tokio::test]
async fn provider_exploded_closes_the_run_with_a_synthetic_failure() {
    let stream = MockStream::new(|_, _| panic!("provider exploded"));
    let (agent, rec) = agent_with(stream);
    let outcome = agent.prompt_text("Hello").unwrap().wait().await;
    assert_eq!(
        rec.kinds(),
        t(&[
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ])
    );
    assert_eq!(outcome.error.as_deref(), Some("provider exploded"));
    assert_eq!(outcome.new_messages.len(), 1);
    let fail = outcome.new_messages[0].as_assistant().unwrap();
    assert_eq!(fail.stop_reason, StopReason::Error);
    assert_eq!(fail.error_message.as_deref(), Some("provider exploded"));
    assert_eq!(
        fail.content,
        vec![agent_lsp::agent::message::ContentBlock::text("")]
    );
    assert_eq!(
        (fail.api.as_str(), fail.model.as_str()),
        ("openai-responses", "mock")
    );
    let state = agent.state();
    assert_eq!(state.error_message.as_deref(), Some("provider exploded"));
    assert!(!state.is_streaming);
}

#[tokio::test]
async fn convert_to_llm_throwing_gives_the_same_closed_shape() {
    let mut options = AgentOptions::new(MockStream::responses(vec![text_reply("x")]));
    options.hooks.convert_to_llm = Some(Arc::new(|_, _| {
        Box::pin(async { Err("convert failed".into()) })
    }));
    let agent = Agent::new(options);
    let rec = record(&agent);
    let outcome = agent.prompt_text("Hello").unwrap().wait().await;
    assert_eq!(
        rec.trace(),
        t(&[
            "agent_start",
            "turn_start",
            "ms:user(Hello)",
            "me:user(Hello)",
            "ms:assistant(error)",
            "me:assistant(error)",
            "turn_end[]",
            "agent_end(1)"
        ])
    );
    assert_eq!(outcome.error.as_deref(), Some("convert failed"));
    assert_eq!(
        agent.state().error_message.as_deref(),
        Some("convert failed")
    );
}

#[tokio::test]
async fn busy_agent_refuses_prompt_continue_and_reset_with_pi_texts() {
    let (sink, stream) = gated();
    let (agent, _) = agent_with(stream);
    let run = agent.prompt_text("first").unwrap();
    assert!(agent.state().is_streaming);
    assert_eq!(
        agent.prompt_text("second").err(),
        Some(AgentError::Busy(BUSY_PROMPT.into()))
    );
    assert_eq!(
        agent.continue_run().err(),
        Some(AgentError::Busy(BUSY_CONTINUE.into()))
    );
    assert_eq!(agent.reset(), Err(AgentError::Busy(BUSY_RESET.into())));
    assert_eq!(
        BUSY_PROMPT,
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    );
    finish_gate(&sink).await;
    let outcome = run.wait().await;
    assert_eq!(outcome.error, None);
    assert!(!agent.state().is_streaming);
    assert!(agent.prompt_text("again").is_ok());
    agent.wait_for_idle().await;
}

async fn steering_requests(mode: QueueMode) -> Vec<Vec<String>> {
    let stream = MockStream::responses(vec![text_reply("ok")]);
    let mut options = AgentOptions::new(stream.clone());
    options.steering_mode = mode;
    let agent = Agent::new(options);
    agent.steer(user("a"));
    agent.steer(user("b"));
    assert_eq!(agent.queued().0.len(), 2);
    agent.prompt_text("go").unwrap().wait().await;
    assert!(!agent.has_queued_messages());
    stream
        .calls()
        .iter()
        .map(|c| c.context.messages.iter().filter_map(user_text).collect())
        .collect()
}

#[tokio::test]
async fn steering_one_at_a_time_delivers_one_message_per_poll() {
    let requests = steering_requests(QueueMode::OneAtATime).await;
    assert_eq!(requests, [vec!["go", "a"], vec!["go", "a", "b"]]);
}

#[tokio::test]
async fn steering_all_delivers_every_queued_message_in_one_poll() {
    let requests = steering_requests(QueueMode::All).await;
    assert_eq!(requests, [vec!["go", "a", "b"]]);
}

/// pi's agent test "continue() should keep one-at-a-time steering semantics from assistant
/// tail": two steering messages queued after an assistant reply, then `continue()`.
async fn continued_steering(mode: QueueMode) -> (Vec<Vec<String>>, Vec<String>) {
    let stream = MockStream::responses(vec![text_reply("Processed")]);
    let mut options = AgentOptions::new(stream.clone());
    options.steering_mode = mode;
    options.messages = vec![
        user("Initial"),
        AgentMessage::from(text_reply("Initial response")),
    ];
    let agent = Agent::new(options);
    agent.steer(user("Steering 1"));
    agent.steer(user("Steering 2"));
    agent.continue_run().unwrap().wait().await;
    assert!(!agent.has_queued_messages());
    let requests = (stream.calls().iter())
        .map(|c| c.context.messages.iter().filter_map(user_text).collect())
        .collect();
    let roles = (agent.state().messages.iter().skip(2))
        .map(|m| m.role().to_string())
        .collect();
    (requests, roles)
}

#[tokio::test]
async fn continue_from_an_assistant_tail_delivers_steering_by_queue_mode() {
    let (requests, roles) = continued_steering(QueueMode::OneAtATime).await;
    assert_eq!(
        requests,
        [
            vec!["Initial", "Steering 1"],
            vec!["Initial", "Steering 1", "Steering 2"]
        ]
    );
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    let (requests, roles) = continued_steering(QueueMode::All).await;
    assert_eq!(requests, [vec!["Initial", "Steering 1", "Steering 2"]]);
    assert_eq!(roles, ["user", "user", "assistant"]);
}

#[tokio::test]
async fn follow_ups_wait_until_the_agent_would_stop() {
    let stream = MockStream::responses(vec![text_reply("ok")]);
    let (agent, rec) = agent_with(stream.clone());
    agent.follow_up(user("later"));
    assert_eq!(agent.peek_queued(), vec![agent.queued().1[0].clone()]);
    agent.prompt_text("go").unwrap().wait().await;
    assert_eq!(stream.count(), 2);
    let first: Vec<String> = stream.calls()[0]
        .context
        .messages
        .iter()
        .filter_map(user_text)
        .collect();
    assert_eq!(first, ["go"]);
    assert!(rec.trace().contains(&"ms:user(later)".to_string()));
}

#[tokio::test]
async fn continue_rules() {
    let stream = MockStream::responses(vec![text_reply("ok")]);
    let (agent, rec) = agent_with(stream.clone());
    assert_eq!(
        agent.continue_run().err(),
        Some(AgentError::NothingToContinue(NO_MESSAGES.into()))
    );
    agent.set_messages(vec![AgentMessage::from(SystemMessage {
        content: "sys".into(),
        ..Default::default()
    })]);
    assert_eq!(
        agent.continue_run().err(),
        Some(AgentError::NothingToContinue(NO_MESSAGES.into()))
    );
    assert!(
        !agent.state().is_streaming,
        "a refused continue leaves the agent idle"
    );

    // A user tail continues the transcript without user message events.
    agent.set_messages(vec![user("Hello")]);
    agent.continue_run().unwrap().wait().await;
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

    // An assistant tail with empty queues is refused.
    assert_eq!(
        agent.continue_run().err(),
        Some(AgentError::NothingToContinue(
            CONTINUE_FROM_ASSISTANT.into()
        ))
    );

    // With queued steering: one batch, and the first in-loop poll is skipped.
    agent.steer(user("s1"));
    agent.steer(user("s2"));
    agent.continue_run().unwrap().wait().await;
    let calls = stream.calls();
    let texts = |i: usize| -> Vec<String> {
        calls[i]
            .context
            .messages
            .iter()
            .filter_map(user_text)
            .collect()
    };
    assert_eq!(texts(1), ["Hello", "s1"]);
    assert_eq!(texts(2), ["Hello", "s1", "s2"]);

    // With a queued follow-up.
    agent.follow_up(user("f1"));
    agent.continue_run().unwrap().wait().await;
    assert_eq!(
        stream.calls()[3]
            .context
            .messages
            .iter()
            .rev()
            .find_map(user_text),
        Some("f1".to_string())
    );
}

#[tokio::test]
async fn reset_keeps_the_replayed_system_head_and_clears_queues_and_errors() {
    let mut options = AgentOptions::new(MockStream::responses(vec![text_reply("ok")]));
    options.system_prompt = Some("You are helpful.".into());
    options.tools = vec![echo_tool(Arc::default())];
    let agent = Agent::new(options);
    let state = agent.state();
    let head = state.messages[0].as_system().unwrap();
    assert_eq!(head.timestamp, 0);
    assert_eq!(head.tools_added.as_ref().unwrap()[0].name, "echo");
    assert_eq!(state.system_prompt(), "You are helpful.");
    agent.prompt_text("go").unwrap().wait().await;
    agent.steer(user("queued"));
    agent.follow_up(user("queued"));
    agent.reset().unwrap();
    let state = agent.state();
    assert_eq!(roles(&state.messages), ["system"]);
    assert_eq!(state.system_prompt(), "You are helpful.");
    assert_eq!(state.error_message, None);
    assert!(!agent.has_queued_messages());
}

#[tokio::test]
async fn abort_ends_an_in_flight_stream_as_aborted() {
    let (_sink, stream) = gated();
    let (agent, rec) = agent_with(stream);
    assert!(!agent.abort(), "idle agent: nothing to abort");
    let run = agent.prompt_text("go").unwrap();
    assert!(agent.abort());
    let outcome = run.wait().await;
    assert!(outcome.aborted);
    let last = outcome.new_messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.error_message.as_deref(), Some("Operation aborted"));
    assert_eq!(rec.kinds().iter().filter(|k| *k == "agent_end").count(), 1);
    assert!(!agent.state().is_streaming);
}

#[tokio::test]
async fn wait_for_idle_resolves_after_agent_end_listeners() {
    let (sink, stream) = gated();
    let (agent, _) = agent_with(stream);
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    agent.subscribe(Arc::new(move |e: Arc<AgentEvent>, _| {
        let d = d.clone();
        Box::pin(async move {
            if matches!(*e, AgentEvent::AgentEnd { .. }) {
                tokio::task::yield_now().await;
                d.store(true, Ordering::SeqCst);
            }
            Ok(())
        })
    }));
    agent.wait_for_idle().await; // idle: resolves at once
    let _run = agent.prompt_text("go").unwrap();
    finish_gate(&sink).await;
    agent.wait_for_idle().await;
    assert!(done.load(Ordering::SeqCst));
    assert!(!agent.state().is_streaming);
}

#[tokio::test]
async fn assistant_message_end_is_a_barrier_before_tool_preflight() {
    let stream = MockStream::responses(vec![
        tool_use(vec![tool_call("tool-1", "echo", json!({"value": "x"}))]),
        text_reply("done"),
    ]);
    let mut options = AgentOptions::new(stream);
    options.tools = vec![echo_tool(Arc::default())];
    let agent = Agent::new(options);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (a, s) = (agent.clone(), seen.clone());
    agent.set_hooks(agent_lsp::agent::AgentHooks {
        before_tool_call: Some(Arc::new(move |_, _| {
            *s.lock().unwrap() = roles(&a.state().messages);
            Box::pin(async { Ok(None) })
        })),
        ..Default::default()
    });
    agent.prompt_text("go").unwrap().wait().await;
    assert_eq!(*seen.lock().unwrap(), ["system", "user", "assistant"]);
    assert!(agent.state().pending_tool_calls.is_empty());
}

#[tokio::test]
async fn tool_updates_settle_before_tool_execution_end() {
    let tool = FnTool::new("progress", json!({}), |_, _, _, updater| {
        Box::pin(async move {
            updater.update(agent_lsp::agent::tool::AgentToolResult::text("half"));
            Ok(agent_lsp::agent::tool::AgentToolResult::text("whole"))
        })
    })
    .arc();
    let stream = MockStream::responses(vec![
        tool_use(vec![tool_call("tool-1", "progress", json!({}))]),
        text_reply("done"),
    ]);
    let mut options = AgentOptions::new(stream);
    options.tools = vec![tool];
    let agent = Agent::new(options);
    let rec = record(&agent);
    agent.prompt_text("go").unwrap().wait().await;
    let tools: Vec<String> = rec
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionStart { .. } => Some("start".to_string()),
            AgentEvent::ToolExecutionUpdate { partial_result, .. } => Some(format!(
                "update:{}",
                partial_result.content[0].as_text().unwrap()
            )),
            AgentEvent::ToolExecutionEnd { result, .. } => {
                Some(format!("end:{}", result.content[0].as_text().unwrap()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(tools, ["start", "update:half", "end:whole"]);
}

#[tokio::test]
async fn requests_carry_identity_reasoning_and_the_hooked_api_key() {
    let stream = MockStream::responses(vec![text_reply("ok")]);
    let mut options = AgentOptions::new(stream.clone());
    options.model = create_model();
    options.thinking_level = agent_lsp::agent::message::ThinkingLevel::High;
    options.stream_options.api_key = Some("configured".into());
    options.stream_options.session_id = Some("s1".into());
    options.hooks.get_api_key = Some(Arc::new(|provider: String, _| {
        Box::pin(async move { Ok((provider == "openai").then(|| "hooked".to_string())) })
    }));
    let agent = Agent::new(options);
    let outcome = agent.prompt_text("go").unwrap().wait().await;
    let call = &stream.calls()[0];
    assert_eq!(call.options.api_key.as_deref(), Some("hooked"));
    assert_eq!(call.options.session_id.as_deref(), Some("s1"));
    assert_eq!(
        call.options.reasoning,
        Some(agent_lsp::agent::message::ThinkingLevel::High)
    );
    assert_eq!(
        call.options.identity,
        Some(
            json!({"attribution": {"name": "pi", "url": "https://pi.dev", "categories": ["cli-agent"]}})
        )
    );
    let last = outcome.new_messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(
        last.thinking_level,
        Some(agent_lsp::agent::message::ThinkingLevel::High)
    );

    // An empty hooked key falls back to the configured one.
    agent.set_hooks(agent_lsp::agent::AgentHooks {
        get_api_key: Some(Arc::new(|_, _| Box::pin(async { Ok(Some(String::new())) }))),
        ..Default::default()
    });
    agent.prompt_text("again").unwrap().wait().await;
    assert_eq!(
        stream.calls()[1].options.api_key.as_deref(),
        Some("configured")
    );
}
