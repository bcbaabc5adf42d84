//! L15–L25: `finishTurn`, the context-only request rule, `prepareRequest`, `prepareNextTurn`
//! and the queue poll points.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_lsp::agent::config::{AgentLoopConfig, Emit};
use agent_lsp::agent::event::AgentEvent;
use agent_lsp::agent::hooks::{
    AgentLoopTurnUpdate, AgentRequestUpdate, QueuePollHook, TurnDecision,
};
use agent_lsp::agent::loop_::run_agent_loop;
use agent_lsp::agent::message::{AgentMessage, StopReason, SystemMessage, ThinkingLevel};
use agent_lsp::agent::tool::{AgentTool, AgentToolResult};
use agent_lsp::provider::Model;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{config, context, run};
use crate::suite::support::mock_stream::*;

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

fn count(c: &AtomicUsize) -> usize {
    c.load(Ordering::SeqCst)
}

/// A poll that counts its calls and answers with `answer(call number starting at 1)`.
fn poll(
    calls: Arc<AtomicUsize>,
    answer: impl Fn(usize) -> Vec<AgentMessage> + Send + Sync + 'static,
) -> QueuePollHook {
    Arc::new(move || {
        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
        let out = answer(n);
        Box::pin(async move { Ok(out) })
    })
}

/// `finishTurn` that counts and answers `decide(call number)`.
fn finish(
    calls: Arc<AtomicUsize>,
    decide: impl Fn(usize) -> Option<TurnDecision> + Send + Sync + 'static,
) -> agent_lsp::agent::hooks::FinishTurnHook {
    Arc::new(move |_, _| {
        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
        let d = decide(n);
        Box::pin(async move { Ok(d) })
    })
}

fn noop_tool() -> Arc<dyn AgentTool> {
    FnTool::new("noop", json!({}), |_, _, _, _| {
        Box::pin(async {
            Ok(AgentToolResult {
                details: None,
                ..AgentToolResult::text("done")
            })
        })
    })
    .arc()
}

fn ordering_emit(order: Arc<Mutex<Vec<String>>>) -> Emit {
    Arc::new(move |e: AgentEvent| {
        match &e {
            AgentEvent::MessageEnd { message } => order
                .lock()
                .unwrap()
                .push(format!("message_end:{}", message.role())),
            AgentEvent::TurnEnd { .. } => order.lock().unwrap().push("turn_end".into()),
            _ => {}
        }
        Box::pin(async { Ok(()) })
    })
}

#[tokio::test]
async fn l15_runs_finish_turn_after_tool_result_messages_and_before_turn_end() {
    let order: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut cfg = config();
    let o = order.clone();
    cfg.hooks.finish_turn = Some(Arc::new(move |turn, _| {
        o.lock().unwrap().push("finishTurn".into());
        assert_eq!(turn.tool_results.len(), 1);
        assert_eq!(turn.context.messages.last().unwrap().role(), "toolResult");
        Box::pin(async { Ok(None) })
    }));
    let echo = FnTool::new("echo", value_schema(), |_, _, _, _| {
        Box::pin(async {
            Ok(AgentToolResult {
                terminate: Some(true),
                ..AgentToolResult::text("ok")
            })
        })
    })
    .arc();
    let stream = MockStream::responses(vec![tool_use(vec![tool_call(
        "tool-1",
        "echo",
        json!({"value": "hello"}),
    )])]);
    run_agent_loop(
        vec![user("run")],
        context(vec![], vec![echo]),
        cfg,
        ordering_emit(order.clone()),
        CancellationToken::new(),
        stream.clone(),
    )
    .await;
    assert_eq!(stream.count(), 1);
    assert_eq!(
        *order.lock().unwrap(),
        t(&[
            "message_end:system",
            "message_end:user",
            "message_end:assistant",
            "message_end:toolResult",
            "finishTurn",
            "turn_end"
        ])
    );
}

async fn finish_turn_on_failure(reason: StopReason) {
    let order: Arc<Mutex<Vec<String>>> = Arc::default();
    let (steer, follow) = (counter(), counter());
    let mut cfg = config();
    let o = order.clone();
    cfg.hooks.finish_turn = Some(Arc::new(move |turn, _| {
        assert_eq!(turn.message.stop_reason, reason);
        o.lock().unwrap().push("finishTurn".into());
        Box::pin(async { Ok(Some(TurnDecision::Continue)) })
    }));
    cfg.get_steering_messages = Some(poll(steer.clone(), |_| vec![]));
    cfg.get_follow_up_messages = Some(poll(follow.clone(), |_| vec![user("queued")]));
    let mut failed = assistant(vec![], reason);
    failed.error_message = Some(format!("{reason:?}"));
    let stream = MockStream::responses(vec![failed]);
    let rec = Recorder::default();
    let emit_order = ordering_emit(order.clone());
    let rec_emit = rec.emit();
    let emit: Emit = Arc::new(move |e: AgentEvent| {
        let a = emit_order(e.clone());
        let b = rec_emit(e);
        Box::pin(async move {
            a.await?;
            b.await
        })
    });
    run_agent_loop(
        vec![user("run")],
        context(vec![], vec![]),
        cfg,
        emit,
        CancellationToken::new(),
        stream.clone(),
    )
    .await;
    let order: Vec<String> = order
        .lock()
        .unwrap()
        .iter()
        .filter(|s| !s.starts_with("message_end"))
        .cloned()
        .collect();
    assert_eq!(order, ["finishTurn", "turn_end"]);
    assert_eq!(stream.count(), 1);
    assert_eq!(count(&steer), 1);
    assert_eq!(count(&follow), 0);
    let r = if reason == StopReason::Error {
        "error"
    } else {
        "aborted"
    };
    assert_eq!(
        rec.trace(),
        vec![
            "agent_start".to_string(),
            "turn_start".into(),
            "ms:user(run)".into(),
            "me:user(run)".into(),
            format!("ms:assistant({r})"),
            format!("me:assistant({r})"),
            "turn_end[]".into(),
            "agent_end(2)".into(),
        ]
    );
}

#[tokio::test]
async fn l16_runs_finish_turn_for_an_error_assistant_before_turn_end_without_changing_the_hard_exit()
 {
    finish_turn_on_failure(StopReason::Error).await;
}

#[tokio::test]
async fn l16_runs_finish_turn_for_an_aborted_assistant_before_turn_end_without_changing_the_hard_exit()
 {
    finish_turn_on_failure(StopReason::Aborted).await;
}

#[tokio::test]
async fn l17_action_end_skips_queue_polling_and_next_turn_preparation() {
    let (steer, follow, finishes, prepares) = (counter(), counter(), counter(), counter());
    let mut cfg = config();
    cfg.hooks.finish_turn = Some(finish(finishes, |_| Some(TurnDecision::End)));
    let p = prepares.clone();
    cfg.hooks.prepare_next_turn = Some(Arc::new(move |_, _| {
        p.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(None) })
    }));
    cfg.get_steering_messages = Some(poll(steer.clone(), |_| vec![]));
    cfg.get_follow_up_messages = Some(poll(follow.clone(), |_| vec![user("queued")]));
    let stream =
        MockStream::responses(vec![tool_use(vec![tool_call("tool-1", "noop", json!({}))])]);
    run(
        vec![user("run")],
        context(vec![], vec![noop_tool()]),
        cfg,
        stream.clone(),
    )
    .await;
    assert_eq!(stream.count(), 1);
    assert_eq!(count(&steer), 1);
    assert_eq!(count(&follow), 0);
    assert_eq!(count(&prepares), 0);
}

fn numbered_replies() -> Arc<MockStream> {
    MockStream::new(|i, _| terminal(text_reply(&format!("response {}", i + 1))))
}

#[tokio::test]
async fn l18_makes_exactly_one_context_only_request_when_no_natural_request_satisfies_continuation()
{
    let finishes = counter();
    let mut cfg = config();
    cfg.hooks.finish_turn = Some(finish(finishes.clone(), |n| {
        (n == 1).then_some(TurnDecision::Continue)
    }));
    let stream = numbered_replies();
    let (_, rec) = run(
        vec![user("run")],
        context(vec![], vec![]),
        cfg,
        stream.clone(),
    )
    .await;
    assert_eq!(stream.count(), 2);
    assert_eq!(count(&finishes), 2);
    assert_eq!(
        roles(&stream.calls()[1].context.messages),
        ["user", "assistant"]
    );
    assert_eq!(
        rec.trace(),
        t(&[
            "agent_start",
            "turn_start",
            "ms:user(run)",
            "me:user(run)",
            "ms:assistant",
            "me:assistant",
            "turn_end[]",
            "turn_start",
            "ms:assistant",
            "me:assistant",
            "turn_end[]",
            "agent_end(3)"
        ])
    );
}

#[tokio::test]
async fn l18_returning_continue_twice_gives_three_requests() {
    let mut cfg = config();
    cfg.hooks.finish_turn = Some(finish(counter(), |n| {
        (n <= 2).then_some(TurnDecision::Continue)
    }));
    let stream = numbered_replies();
    run(
        vec![user("run")],
        context(vec![], vec![]),
        cfg,
        stream.clone(),
    )
    .await;
    assert_eq!(stream.count(), 3);
}

#[tokio::test]
async fn l19_lets_a_natural_tool_result_request_satisfy_continuation() {
    let finishes = counter();
    let mut cfg = config();
    cfg.hooks.finish_turn = Some(finish(finishes.clone(), |n| {
        (n == 1).then_some(TurnDecision::Continue)
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
    assert_eq!(count(&finishes), 2);
}

async fn natural_queue_request(kind: &'static str) {
    let finishes = counter();
    let mut cfg = config();
    cfg.hooks.finish_turn = Some(finish(finishes.clone(), |n| {
        (n == 1).then_some(TurnDecision::Continue)
    }));
    cfg.get_steering_messages = Some(poll(counter(), move |n| {
        if kind == "steering" && n == 2 {
            vec![user(kind)]
        } else {
            vec![]
        }
    }));
    cfg.get_follow_up_messages = Some(poll(counter(), move |n| {
        if kind == "follow-up" && n == 1 {
            vec![user(kind)]
        } else {
            vec![]
        }
    }));
    let stream = numbered_replies();
    run(
        vec![user("run")],
        context(vec![], vec![]),
        cfg,
        stream.clone(),
    )
    .await;
    assert_eq!(stream.count(), 2);
    assert_eq!(count(&finishes), 2);
    let texts: Vec<String> = stream.calls()[1]
        .context
        .messages
        .iter()
        .filter_map(user_text)
        .collect();
    assert!(texts.contains(&kind.to_string()), "{texts:?}");
}

#[tokio::test]
async fn l20_lets_a_natural_steering_request_satisfy_continuation() {
    natural_queue_request("steering").await;
}

#[tokio::test]
async fn l20_lets_a_natural_follow_up_request_satisfy_continuation() {
    natural_queue_request("follow-up").await;
}

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
        ctx.messages = vec![can.clone()];
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
    assert_eq!(call.context.messages, vec![canonical]);
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
            messages: Some(vec![AgentMessage::System(SystemMessage {
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
