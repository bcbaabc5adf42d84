//! L21–L25: `prepareRequest`, `prepareNextTurn` and the steering poll points.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use agent_lsp::agent::config::AgentLoopConfig;
use agent_lsp::agent::hooks::{AgentLoopTurnUpdate, AgentRequestUpdate, TurnDecision};
use agent_lsp::agent::message::{AgentMessage, SystemMessage, ThinkingLevel};
use agent_lsp::agent::model::Model;
use agent_lsp::agent::run_loop::run_agent_loop;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::hooks::{count, counter, noop_tool, poll};
use super::{config, context, run};
use crate::suite::support::mock_stream::*;
#[tokio::test]
async fn l21_prepares_the_initial_request_after_pending_messages_and_can_replace_request_state() {
    let replacement = Model {
        id: "replacement".into(),
        name: "replacement".into(),
        ..create_model()
    };
    let canonical = user("canonical projection");
    let steering = user("steering");
    let prepares = counter();
    let seen: Arc<Mutex<Vec<(String, ThinkingLevel)>>> = Arc::default();
    let mut cfg = config();
    let s = steering.clone();
    cfg.get_steering_messages = Some(poll(counter(), move |n| {
        if n == 1 { vec![s.clone()] } else { vec![] }
    }));
    let (p, sn, st, can, rep) = (
        prepares.clone(),
        seen.clone(),
        steering.clone(),
        canonical.clone(),
        replacement.clone(),
    );
    cfg.hooks.prepare_request = Some(Arc::new(move |req, _| {
        p.fetch_add(1, Ordering::SeqCst);
        assert!(req.context.messages.contains(&st));
        sn.lock()
            .unwrap()
            .push((req.model.id.clone(), req.thinking_level));
        let mut ctx = req.context;
        ctx.messages = vec![can.clone()].into();
        let update = AgentRequestUpdate {
            context: Some(ctx),
            model: Some(rep.clone()),
            thinking_level: Some(ThinkingLevel::High),
        };
        Box::pin(async move { Ok(Some(update)) })
    }));
    let stream = MockStream::responses(vec![text_reply("done")]);
    let rec = Recorder::default();
    // The steering message's message_end precedes prepareRequest.
    let outcome = run_agent_loop(
        vec![user("prompt")],
        context(vec![], vec![]),
        cfg,
        rec.emit(),
        CancellationToken::new(),
        stream.clone(),
    )
    .await;
    assert_eq!(count(&prepares), 1);
    let call = &stream.calls()[0];
    assert_eq!(call.model, replacement);
    assert_eq!(*call.context.messages, vec![canonical]);
    assert_eq!(call.options.reasoning, Some(ThinkingLevel::High));
    assert_eq!(
        *seen.lock().unwrap(),
        [("mock".to_string(), ThinkingLevel::Off)]
    );
    assert_eq!(outcome.new_messages.len(), 3);
    assert_eq!(
        rec.trace(),
        t(&[
            "agent_start",
            "turn_start",
            "ms:user(prompt)",
            "me:user(prompt)",
            "ms:user(steering)",
            "me:user(steering)",
            "ms:assistant",
            "me:assistant",
            "turn_end[]",
            "agent_end(3)"
        ])
    );
}

#[tokio::test]
async fn l22_does_not_poll_steering_after_prepare_request() {
    let queued: Arc<Mutex<Vec<AgentMessage>>> = Arc::default();
    let (steer, prepares) = (counter(), counter());
    let late = user("late steering");
    let mut cfg = config();
    let q = queued.clone();
    cfg.get_steering_messages = Some(poll(steer.clone(), move |_| {
        q.lock().unwrap().drain(..).collect()
    }));
    let (q, p, l) = (queued.clone(), prepares.clone(), late.clone());
    cfg.hooks.prepare_request = Some(Arc::new(move |_, _| {
        if p.fetch_add(1, Ordering::SeqCst) == 0 {
            q.lock().unwrap().push(l.clone());
        }
        Box::pin(async { Ok(None) })
    }));
    let stream = MockStream::responses(vec![text_reply("done")]);
    let (_, rec) = run(
        vec![user("run")],
        context(vec![], vec![]),
        cfg,
        stream.clone(),
    )
    .await;
    let included: Vec<bool> = stream
        .calls()
        .iter()
        .map(|c| c.context.messages.contains(&late))
        .collect();
    assert_eq!(included, [false, true]);
    assert_eq!(count(&prepares), 2);
    assert_eq!(count(&steer), 3);
    let tail = rec.trace()[6..].to_vec();
    assert_eq!(
        tail,
        t(&[
            "turn_end[]",
            "turn_start",
            "ms:user(late steering)",
            "me:user(late steering)",
            "ms:assistant",
            "me:assistant",
            "turn_end[]",
            "agent_end(4)"
        ])
    );
}

#[tokio::test]
async fn l23_should_use_prepare_next_turn_snapshot_before_continuing() {
    let prepares = counter();
    let mut cfg = config();
    let p = prepares.clone();
    cfg.hooks.prepare_next_turn = Some(Arc::new(move |turn, _| {
        let first = p.fetch_add(1, Ordering::SeqCst) == 0;
        let update = first.then(|| AgentLoopTurnUpdate {
            context: Some(turn.context.clone()),
            messages: Some(vec![AgentMessage::from(SystemMessage {
                content: "updated guidance".into(),
                timestamp: 1,
                ..Default::default()
            })]),
            ..Default::default()
        });
        Box::pin(async move { Ok(update) })
    }));
    let stream = MockStream::responses(vec![
        tool_use(vec![tool_call("tool-1", "echo", json!({"value": "hello"}))]),
        text_reply("done"),
    ]);
    let (_, rec) = run(
        vec![user("run")],
        context(vec![], vec![echo_tool(Arc::default())]),
        cfg,
        stream.clone(),
    )
    .await;
    assert_eq!(stream.count(), 2);
    assert_eq!(count(&prepares), 1);
    let second = &stream.calls()[1].context.messages;
    let labels: Vec<String> = second
        .iter()
        .map(|m| match m {
            AgentMessage::System(s) => format!("system({})", s.content.to_text()),
            other => other.role().to_string(),
        })
        .collect();
    assert_eq!(
        labels,
        [
            "system()",
            "user",
            "assistant",
            "toolResult",
            "system(updated guidance)"
        ]
    );
    let trace = rec.trace();
    let at = trace.iter().position(|l| l == "turn_end[tool-1]").unwrap();
    assert_eq!(
        trace[at..at + 5].to_vec(),
        t(&[
            "turn_end[tool-1]",
            "turn_start",
            "ms:system",
            "me:system",
            "ms:assistant"
        ])
    );
}

#[tokio::test]
async fn l24_picks_up_steering_queued_during_prepare_next_turn_before_the_next_request() {
    let queued: Arc<Mutex<Vec<AgentMessage>>> = Arc::default();
    let late = user("late steering");
    let mut cfg = config();
    let q = queued.clone();
    cfg.get_steering_messages = Some(poll(counter(), move |_| {
        q.lock().unwrap().drain(..).collect()
    }));
    let (q, l) = (queued.clone(), late.clone());
    cfg.hooks.prepare_next_turn = Some(Arc::new(move |_, _| {
        q.lock().unwrap().push(l.clone());
        Box::pin(async { Ok(None) })
    }));
    let stream = MockStream::responses(vec![
        tool_use(vec![tool_call("tool-1", "noop", json!({}))]),
        text_reply("done"),
    ]);
    run(
        vec![user("run")],
        context(vec![], vec![noop_tool()]),
        cfg,
        stream.clone(),
    )
    .await;
    assert_eq!(stream.count(), 2);
    assert!(stream.calls()[1].context.messages.contains(&late));
}

#[tokio::test]
async fn l25_action_end_receives_finalized_turn_context_and_stops_before_queue_polling() {
    let executed: Arc<Mutex<Vec<serde_json::Value>>> = Arc::default();
    let (steer, follow) = (counter(), counter());
    let seen: Arc<Mutex<(Vec<String>, Vec<String>)>> = Arc::default();
    let mut cfg: AgentLoopConfig = config();
    let s = seen.clone();
    cfg.hooks.finish_turn = Some(Arc::new(move |turn, _| {
        let s = s.clone();
        Box::pin(async move {
            let ids = turn
                .tool_results
                .iter()
                .map(|r| r.tool_call_id.clone())
                .collect();
            *s.lock().unwrap() = (ids, roles(&turn.context.messages));
            Ok(Some(TurnDecision::End))
        })
    }));
    cfg.get_steering_messages = Some(poll(steer.clone(), |_| vec![]));
    cfg.get_follow_up_messages = Some(poll(follow.clone(), |_| {
        vec![user("follow up should stay queued")]
    }));
    let stream = MockStream::responses(vec![
        tool_use(vec![tool_call("tool-1", "echo", json!({"value": "hello"}))]),
        text_reply("should not run"),
    ]);
    let (outcome, rec) = run(
        vec![user("run")],
        context(vec![], vec![echo_tool(executed.clone())]),
        cfg,
        stream.clone(),
    )
    .await;
    assert_eq!(stream.count(), 1);
    assert_eq!(*executed.lock().unwrap(), [json!("hello")]);
    assert_eq!(count(&steer), 1);
    assert_eq!(count(&follow), 0);
    let (ids, seen_roles) = seen.lock().unwrap().clone();
    assert_eq!(ids, ["tool-1"]);
    assert_eq!(seen_roles, ["system", "user", "assistant", "toolResult"]);
    assert_eq!(
        roles(&outcome.new_messages),
        ["system", "user", "assistant", "toolResult"]
    );
    assert_eq!(
        rec.kinds(),
        t(&[
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "tool_execution_start",
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ])
    );
}
