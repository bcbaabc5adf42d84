//! L15–L20: `finishTurn` and the context-only request rule.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_lsp::agent::config::Emit;
use agent_lsp::agent::event::AgentEvent;
use agent_lsp::agent::hooks::{QueuePollHook, TurnDecision};
use agent_lsp::agent::message::{AgentMessage, StopReason};
use agent_lsp::agent::run_loop::run_agent_loop;
use agent_lsp::agent::tool::{AgentTool, AgentToolResult};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{config, context, run};
use crate::suite::support::mock_stream::*;

pub(super) fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

pub(super) fn count(c: &AtomicUsize) -> usize {
    c.load(Ordering::SeqCst)
}

/// A poll that counts its calls and answers with `answer(call number starting at 1)`.
pub(super) fn poll(
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
pub(super) fn finish(
    calls: Arc<AtomicUsize>,
    decide: impl Fn(usize) -> Option<TurnDecision> + Send + Sync + 'static,
) -> agent_lsp::agent::hooks::FinishTurnHook {
    Arc::new(move |_, _| {
        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
        let d = decide(n);
        Box::pin(async move { Ok(d) })
    })
}

pub(super) fn noop_tool() -> Arc<dyn AgentTool> {
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

pub(super) fn numbered_replies() -> Arc<MockStream> {
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
