//! L10–L14: parallel and sequential execution, event and message order, steering after a batch.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_lsp::agent::event::AgentEvent;
use agent_lsp::agent::message::AgentMessage;
use agent_lsp::agent::tool::{AgentTool, AgentToolResult, ExecutionMode};
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::tools::{result_message_ids, tool_results, turn_end_ids};
use super::{config, context, run};
use crate::suite::support::mock_stream::*;

/// Upstream's first/second fixture: "first" waits until released (by "second", or after a
/// fallback so a sequential batch cannot deadlock); "second" records whether "first" was
/// still running. A sequential batch never observes overlap whatever the fallback; a parallel
/// one needs "second" to start before the fallback fires, so tests that expect parallelism use
/// a fallback long enough to only bound a hang on a loaded machine.
struct FirstSecond {
    fallback: Duration,
    release: Arc<Notify>,
    first_resolved: Arc<AtomicBool>,
    parallel_observed: Arc<AtomicBool>,
    order: Arc<Mutex<Vec<String>>>,
}

impl FirstSecond {
    /// For tests that expect a sequential batch: "first" always waits the whole fallback.
    fn expecting_sequential() -> Self {
        Self::with_fallback(Duration::from_millis(300))
    }

    /// For tests that expect a parallel batch: "second" releases "first" long before this.
    fn expecting_parallel() -> Self {
        Self::with_fallback(Duration::from_secs(30))
    }

    fn with_fallback(fallback: Duration) -> Self {
        FirstSecond {
            fallback,
            release: Arc::new(Notify::new()),
            first_resolved: Arc::default(),
            parallel_observed: Arc::default(),
            order: Arc::default(),
        }
    }

    fn tool(&self, name: &str, mode: Option<ExecutionMode>) -> Arc<dyn AgentTool> {
        let release = self.release.clone();
        let resolved = self.first_resolved.clone();
        let observed = self.parallel_observed.clone();
        let order = self.order.clone();
        let tool_name = name.to_string();
        let fallback = self.fallback;
        let mut tool = FnTool::new(name, value_schema(), move |_, args, _, _| {
            let (release, resolved, observed, order) = (
                release.clone(),
                resolved.clone(),
                observed.clone(),
                order.clone(),
            );
            let name = tool_name.clone();
            Box::pin(async move {
                let value = args["value"].as_str().unwrap().to_string();
                order.lock().unwrap().push(format!("{name}:{value}"));
                if value == "first" || value == "a" {
                    let _ = tokio::time::timeout(fallback, release.notified()).await;
                    resolved.store(true, Ordering::SeqCst);
                } else {
                    if !resolved.load(Ordering::SeqCst) {
                        observed.store(true, Ordering::SeqCst);
                    }
                    release.notify_one();
                }
                Ok(AgentToolResult::text(format!("ok:{value}")))
            })
        });
        tool.mode = mode;
        tool.arc()
    }
}

pub(super) fn two_calls(name1: &str, v1: &str, name2: &str, v2: &str) -> Arc<MockStream> {
    MockStream::responses(vec![
        tool_use(vec![
            tool_call("tool-1", name1, json!({"value": v1})),
            tool_call("tool-2", name2, json!({"value": v2})),
        ]),
        text_reply("done"),
    ])
}

#[tokio::test]
async fn l10_tool_execution_end_in_completion_order_results_in_source_order() {
    let fx = FirstSecond::expecting_parallel();
    let mut cfg = config();
    cfg.tool_execution = ExecutionMode::Parallel;
    let (_, rec) = run(
        vec![user("Hi")],
        context(vec![], vec![fx.tool("echo", None)]),
        cfg,
        two_calls("echo", "first", "echo", "second"),
    )
    .await;
    assert!(fx.parallel_observed.load(Ordering::SeqCst));
    let events = rec.events();
    let ends: Vec<String> = tool_results(&events).into_iter().map(|e| e.0).collect();
    assert_eq!(ends, ["tool-2", "tool-1"]);
    assert_eq!(result_message_ids(&events), ["tool-1", "tool-2"]);
    assert_eq!(turn_end_ids(&events), ["tool-1", "tool-2"]);
    let tail: Vec<String> = rec.trace()[8..15].to_vec();
    assert_eq!(
        tail,
        t(&[
            "tes:tool-1",
            "tes:tool-2",
            "tee:tool-2",
            "tee:tool-1",
            "ms:toolResult(tool-1)",
            "me:toolResult(tool-1)",
            "ms:toolResult(tool-2)",
        ])
    );
}

#[tokio::test]
async fn l11_should_inject_queued_messages_after_all_tool_calls_complete() {
    let executed: Arc<Mutex<Vec<Value>>> = Arc::default();
    let mut cfg = config();
    cfg.tool_execution = ExecutionMode::Sequential;
    let delivered = Arc::new(AtomicBool::new(false));
    let (ex, dl) = (executed.clone(), delivered.clone());
    cfg.get_steering_messages = Some(Arc::new(move || {
        let give = !ex.lock().unwrap().is_empty() && !dl.swap(true, Ordering::SeqCst);
        Box::pin(async move {
            Ok(if give {
                vec![user("interrupt")]
            } else {
                vec![]
            })
        })
    }));
    let stream = two_calls("echo", "first", "echo", "second");
    let (_, rec) = run(
        vec![user("Hi")],
        context(vec![], vec![echo_tool(executed.clone())]),
        cfg,
        stream.clone(),
    )
    .await;
    assert_eq!(*executed.lock().unwrap(), [json!("first"), json!("second")]);
    let ends = tool_results(&rec.events());
    assert_eq!(ends.len(), 2);
    assert!(ends.iter().all(|e| !e.1));
    let labels: Vec<String> = rec
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageStart { message } => match message {
                AgentMessage::ToolResult(r) => Some(format!("tool:{}", r.tool_call_id)),
                other => user_text(other),
            },
            _ => None,
        })
        .collect();
    let pos = |s: &str| labels.iter().position(|l| l == s).unwrap();
    assert!(pos("interrupt") > pos("tool:tool-1"));
    assert!(pos("interrupt") > pos("tool:tool-2"));
    let second = &stream.calls()[1].context.messages;
    assert!(
        second
            .iter()
            .any(|m| user_text(m).as_deref() == Some("interrupt"))
    );
    assert_eq!(
        rec.trace()[8..].to_vec(),
        t(&[
            "tes:tool-1",
            "tee:tool-1",
            "ms:toolResult(tool-1)",
            "me:toolResult(tool-1)",
            "tes:tool-2",
            "tee:tool-2",
            "ms:toolResult(tool-2)",
            "me:toolResult(tool-2)",
            "turn_end[tool-1,tool-2]",
            "turn_start",
            "ms:user(interrupt)",
            "me:user(interrupt)",
            "ms:assistant",
            "me:assistant",
            "turn_end[]",
            "agent_end(7)"
        ])
    );
}

#[tokio::test]
async fn l12_should_force_sequential_execution_when_a_tool_has_execution_mode_sequential() {
    let fx = FirstSecond::expecting_sequential();
    let (_, rec) = run(
        vec![user("Hi")],
        context(
            vec![],
            vec![fx.tool("slow", Some(ExecutionMode::Sequential))],
        ),
        config(),
        two_calls("slow", "first", "slow", "second"),
    )
    .await;
    assert!(!fx.parallel_observed.load(Ordering::SeqCst));
    assert_eq!(result_message_ids(&rec.events()), ["tool-1", "tool-2"]);
}

#[tokio::test]
async fn l13_should_force_sequential_execution_when_one_of_multiple_tools_is_sequential() {
    let fx = FirstSecond::expecting_sequential();
    let tools = vec![
        fx.tool("slow", Some(ExecutionMode::Sequential)),
        fx.tool("fast", None),
    ];
    run(
        vec![user("Hi")],
        context(vec![], tools),
        config(),
        two_calls("slow", "a", "fast", "b"),
    )
    .await;
    let order = fx.order.lock().unwrap().clone();
    assert_eq!(order[0], "slow:a");
    assert!(order.contains(&"fast:b".to_string()));
    assert!(!fx.parallel_observed.load(Ordering::SeqCst));
}

#[tokio::test]
async fn l14_should_allow_parallel_execution_when_all_tools_have_execution_mode_parallel() {
    let fx = FirstSecond::expecting_parallel();
    run(
        vec![user("Hi")],
        context(vec![], vec![fx.tool("echo", Some(ExecutionMode::Parallel))]),
        config(),
        two_calls("echo", "first", "echo", "second"),
    )
    .await;
    assert!(fx.parallel_observed.load(Ordering::SeqCst));
}
