//! L6–L14 and L26–L30: tool calls, validation, ordering, execution modes and `terminate`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_lsp::agent::event::AgentEvent;
use agent_lsp::agent::hooks::{AfterToolCallResult, BeforeToolCallResult};
use agent_lsp::agent::message::{AgentMessage, ContentBlock, Cost, StopReason, Usage};
use agent_lsp::agent::tool::{AgentTool, AgentToolResult, ExecutionMode};
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::{config, context, run};
use crate::suite::support::mock_stream::*;

fn usage(n: [u64; 4], total: u64, cost: [f64; 5]) -> Usage {
    Usage {
        input: n[0],
        output: n[1],
        cache_read: n[2],
        cache_write: n[3],
        total_tokens: total,
        cost: Cost {
            input: cost[0],
            output: cost[1],
            cache_read: cost[2],
            cache_write: cost[3],
            total: cost[4],
            total_from_provider: None,
        },
        ..Default::default()
    }
}

fn tool_results(events: &[AgentEvent]) -> Vec<(String, bool, Option<u64>)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                is_error,
                duration_ms,
                ..
            } => Some((tool_call_id.clone(), *is_error, *duration_ms)),
            _ => None,
        })
        .collect()
}

fn result_message_ids(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd {
                message: AgentMessage::ToolResult(r),
            } => Some(r.tool_call_id.clone()),
            _ => None,
        })
        .collect()
}

fn turn_end_ids(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TurnEnd { tool_results, .. } => Some(tool_results.clone()),
            _ => None,
        })
        .flatten()
        .map(|r| r.tool_call_id)
        .collect()
}

#[tokio::test]
async fn l6_should_handle_tool_calls_and_results() {
    let tool_usage = usage([1, 2, 3, 4], 10, [0.1, 0.2, 0.3, 0.4, 1.0]);
    let patched = usage([5, 6, 7, 8], 26, [0.5, 0.6, 0.7, 0.8, 2.6]);
    let executed: Arc<Mutex<Vec<Value>>> = Arc::default();
    let ex = executed.clone();
    let tu = tool_usage.clone();
    let echo = FnTool::new("echo", value_schema(), move |_, args, _, _| {
        let (ex, tu) = (ex.clone(), tu.clone());
        Box::pin(async move {
            let value = args["value"].clone();
            ex.lock().unwrap().push(value.clone());
            Ok(AgentToolResult {
                content: vec![ContentBlock::text(format!(
                    "echoed: {}",
                    value.as_str().unwrap()
                ))],
                details: Some(json!({"value": value})),
                usage: Some(tu),
                ..Default::default()
            })
        })
    })
    .arc();
    let observed: Arc<Mutex<Option<Usage>>> = Arc::default();
    let mut cfg = config();
    let (obs, p) = (observed.clone(), patched.clone());
    cfg.hooks.after_tool_call = Some(Arc::new(move |ctx, _| {
        *obs.lock().unwrap() = ctx.result.usage.clone();
        let p = p.clone();
        Box::pin(async move {
            Ok(Some(AfterToolCallResult {
                usage: Some(p),
                ..Default::default()
            }))
        })
    }));
    let stream = MockStream::responses(vec![
        tool_use(vec![tool_call("tool-1", "echo", json!({"value": "hello"}))]),
        text_reply("done"),
    ]);
    let (outcome, rec) = run(vec![user("Hi")], context(vec![], vec![echo]), cfg, stream).await;
    assert_eq!(*executed.lock().unwrap(), [json!("hello")]);
    let ends = tool_results(&rec.events());
    assert_eq!(ends.len(), 1);
    assert!(!ends[0].1);
    assert!(ends[0].2.is_some(), "durationMs present when execute ran");
    assert_eq!(observed.lock().unwrap().clone(), Some(tool_usage));
    let result = outcome
        .new_messages
        .iter()
        .find_map(AgentMessage::as_tool_result)
        .unwrap();
    assert_eq!(result.usage, Some(patched));
    assert_eq!(result.details, Some(json!({"value": "hello"})));
    assert_eq!(
        roles(&outcome.new_messages),
        ["system", "user", "assistant", "toolResult", "assistant"]
    );
    let system = outcome.new_messages[0].as_system().unwrap();
    assert_eq!(system.tools_added.as_ref().unwrap()[0].name, "echo");
    assert_eq!(
        rec.trace(),
        t(&[
            "agent_start",
            "turn_start",
            "ms:system",
            "me:system",
            "ms:user(Hi)",
            "me:user(Hi)",
            "ms:assistant(toolUse)",
            "me:assistant(toolUse)",
            "tes:tool-1",
            "tee:tool-1",
            "ms:toolResult(tool-1)",
            "me:toolResult(tool-1)",
            "turn_end[tool-1]",
            "turn_start",
            "ms:assistant",
            "me:assistant",
            "turn_end[]",
            "agent_end(5)"
        ])
    );
}

#[tokio::test]
async fn l7_should_not_execute_tool_calls_from_a_length_truncated_assistant_message() {
    let executed: Arc<Mutex<Vec<Value>>> = Arc::default();
    let truncated = assistant(
        vec![tool_call("tool-1", "echo", json!({"value": "hel"}))],
        StopReason::Length,
    );
    let stream = MockStream::responses(vec![truncated, text_reply("done")]);
    let (outcome, rec) = run(
        vec![user("Hi")],
        context(vec![], vec![echo_tool(executed.clone())]),
        config(),
        stream.clone(),
    )
    .await;
    assert!(executed.lock().unwrap().is_empty());
    let first_end = rec
        .events()
        .into_iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                result,
                is_error,
                duration_ms,
                ..
            } => Some((result, is_error, duration_ms)),
            _ => None,
        })
        .unwrap();
    assert!(first_end.1);
    assert_eq!(first_end.2, None);
    assert_eq!(
        first_end.0.content[0].as_text().unwrap(),
        "Tool call \"echo\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments."
    );
    assert_eq!(stream.count(), 2);
    assert_eq!(outcome.new_messages.last().unwrap().role(), "assistant");
    let tail: Vec<String> = rec.trace()[6..].to_vec();
    assert_eq!(
        tail,
        t(&[
            "ms:assistant(length)",
            "me:assistant(length)",
            "tes:tool-1",
            "tee:tool-1(err)",
            "ms:toolResult(tool-1,err)",
            "me:toolResult(tool-1,err)",
            "turn_end[tool-1]",
            "turn_start",
            "ms:assistant",
            "me:assistant",
            "turn_end[]",
            "agent_end(5)"
        ])
    );
}

#[tokio::test]
async fn l8_should_execute_mutated_before_tool_call_args_without_revalidation() {
    let executed: Arc<Mutex<Vec<Value>>> = Arc::default();
    let mut cfg = config();
    cfg.hooks.before_tool_call = Some(Arc::new(|ctx, _| {
        let mut args = ctx.args;
        args["value"] = json!(123);
        Box::pin(async move {
            Ok(Some(BeforeToolCallResult {
                args: Some(args),
                ..Default::default()
            }))
        })
    }));
    let stream = MockStream::responses(vec![
        tool_use(vec![tool_call("tool-1", "echo", json!({"value": "hello"}))]),
        text_reply("done"),
    ]);
    run(
        vec![user("Hi")],
        context(vec![], vec![echo_tool(executed.clone())]),
        cfg,
        stream,
    )
    .await;
    assert_eq!(*executed.lock().unwrap(), [json!(123)]);
}

#[tokio::test]
async fn l9_should_prepare_tool_arguments_for_validation() {
    let executed: Arc<Mutex<Vec<Value>>> = Arc::default();
    let ex = executed.clone();
    let schema = json!({"type": "object", "properties": {"edits": {"type": "array", "items": {
        "type": "object", "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
        "required": ["oldText", "newText"]}}}, "required": ["edits"]});
    let mut edit = FnTool::new("edit", schema, move |_, args, _, _| {
        ex.lock().unwrap().push(args["edits"].clone());
        Box::pin(async { Ok(AgentToolResult::text("ok")) })
    });
    edit.prepare = Some(Box::new(|args: Value| {
        let Some(obj) = args.as_object() else {
            return args;
        };
        match (obj.get("oldText"), obj.get("newText")) {
            (Some(Value::String(o)), Some(Value::String(n))) => {
                let mut edits = obj
                    .get("edits")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                edits.push(json!({"oldText": o, "newText": n}));
                json!({"edits": edits})
            }
            _ => args,
        }
    }));
    let stream = MockStream::responses(vec![
        tool_use(vec![tool_call(
            "tool-1",
            "edit",
            json!({"oldText": "before", "newText": "after"}),
        )]),
        text_reply("done"),
    ]);
    run(
        vec![user("Hi")],
        context(vec![], vec![edit.arc()]),
        config(),
        stream,
    )
    .await;
    assert_eq!(
        *executed.lock().unwrap(),
        [json!([{"oldText": "before", "newText": "after"}])]
    );
}

/// Upstream's first/second fixture: "first" waits until released (by "second", or after a
/// fallback so a sequential batch cannot deadlock); "second" records whether "first" was
/// still running. The observation never depends on the fallback's length.
struct FirstSecond {
    release: Arc<Notify>,
    first_resolved: Arc<AtomicBool>,
    parallel_observed: Arc<AtomicBool>,
    order: Arc<Mutex<Vec<String>>>,
}

impl FirstSecond {
    fn new() -> Self {
        FirstSecond {
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
                    let _ =
                        tokio::time::timeout(Duration::from_millis(300), release.notified()).await;
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

fn two_calls(name1: &str, v1: &str, name2: &str, v2: &str) -> Arc<MockStream> {
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
    let fx = FirstSecond::new();
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
    let fx = FirstSecond::new();
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
    let fx = FirstSecond::new();
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
    let fx = FirstSecond::new();
    run(
        vec![user("Hi")],
        context(vec![], vec![fx.tool("echo", Some(ExecutionMode::Parallel))]),
        config(),
        two_calls("echo", "first", "echo", "second"),
    )
    .await;
    assert!(fx.parallel_observed.load(Ordering::SeqCst));
}

fn terminating_echo(
    terminate_on: fn(&str) -> bool,
    executed: Arc<Mutex<Vec<String>>>,
) -> Arc<dyn AgentTool> {
    FnTool::new("echo", value_schema(), move |_, args, _, _| {
        let executed = executed.clone();
        Box::pin(async move {
            let value = args["value"].as_str().unwrap().to_string();
            executed.lock().unwrap().push(value.clone());
            Ok(AgentToolResult {
                terminate: Some(terminate_on(&value)),
                ..AgentToolResult::text(value)
            })
        })
    })
    .arc()
}

fn always_tool_use() -> Arc<MockStream> {
    MockStream::responses(vec![tool_use(vec![tool_call(
        "tool-1",
        "echo",
        json!({"value": "hello"}),
    )])])
}

#[tokio::test]
async fn l26_should_stop_after_a_tool_batch_when_every_tool_result_sets_terminate() {
    let stream = always_tool_use();
    let (outcome, rec) = run(
        vec![user("Hi")],
        context(vec![], vec![terminating_echo(|_| true, Arc::default())]),
        config(),
        stream.clone(),
    )
    .await;
    assert_eq!(stream.count(), 1);
    assert_eq!(
        roles(&outcome.new_messages),
        ["system", "user", "assistant", "toolResult"]
    );
    assert_eq!(rec.kinds().iter().filter(|k| *k == "turn_end").count(), 1);
}

#[tokio::test]
async fn l27_should_stop_after_a_blocked_tool_call_when_before_tool_call_sets_terminate() {
    let executed: Arc<Mutex<Vec<Value>>> = Arc::default();
    let mut cfg = config();
    cfg.hooks.before_tool_call = Some(Arc::new(|_, _| {
        Box::pin(async {
            Ok(Some(BeforeToolCallResult {
                block: true,
                reason: Some("Blocked by policy".into()),
                terminate: true,
                args: None,
            }))
        })
    }));
    let stream = MockStream::responses(vec![
        tool_use(vec![tool_call("tool-1", "echo", json!({"value": "hello"}))]),
        text_reply("done"),
    ]);
    let (outcome, rec) = run(
        vec![user("Hi")],
        context(vec![], vec![echo_tool(executed.clone())]),
        cfg,
        stream.clone(),
    )
    .await;
    assert!(executed.lock().unwrap().is_empty());
    assert_eq!(stream.count(), 1);
    let result = outcome
        .new_messages
        .iter()
        .find_map(AgentMessage::as_tool_result)
        .unwrap();
    assert!(result.is_error);
    assert_eq!(
        result.content,
        vec![ContentBlock::text("Blocked by policy")]
    );
    assert_eq!(result.details, Some(json!({})));
    assert_eq!(result.duration_ms, None);
    let ends = tool_results(&rec.events());
    assert_eq!(ends, [("tool-1".to_string(), true, None)]);
}

#[tokio::test]
async fn l28_should_continue_after_a_mixed_batch_with_one_terminating_blocked_call() {
    let executed: Arc<Mutex<Vec<Value>>> = Arc::default();
    let mut cfg = config();
    cfg.tool_execution = ExecutionMode::Parallel;
    cfg.hooks.before_tool_call = Some(Arc::new(|ctx, _| {
        let block = ctx.args["value"] == "first";
        Box::pin(async move {
            Ok(block.then(|| BeforeToolCallResult {
                block: true,
                reason: Some("Blocked first".into()),
                terminate: true,
                args: None,
            }))
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
    assert_eq!(*executed.lock().unwrap(), [json!("second")]);
    assert_eq!(stream.count(), 2);
    assert_eq!(
        rec.trace()[8..16].to_vec(),
        t(&[
            "tes:tool-1",
            "tee:tool-1(err)",
            "tes:tool-2",
            "tee:tool-2",
            "ms:toolResult(tool-1,err)",
            "me:toolResult(tool-1,err)",
            "ms:toolResult(tool-2)",
            "me:toolResult(tool-2)",
        ])
    );
    assert_eq!(
        rec.trace()[16..18].to_vec(),
        t(&["turn_end[tool-1,tool-2]", "turn_start"])
    );
}

#[tokio::test]
async fn l29_should_continue_after_parallel_tool_calls_when_not_all_tool_results_terminate() {
    let mut cfg = config();
    cfg.tool_execution = ExecutionMode::Parallel;
    let stream = two_calls("echo", "first", "echo", "second");
    let (outcome, _) = run(
        vec![user("Hi")],
        context(
            vec![],
            vec![terminating_echo(|v| v == "first", Arc::default())],
        ),
        cfg,
        stream.clone(),
    )
    .await;
    assert_eq!(stream.count(), 2);
    assert_eq!(
        roles(&outcome.new_messages),
        [
            "system",
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "assistant"
        ]
    );
}

#[tokio::test]
async fn l30_should_allow_after_tool_call_to_mark_a_tool_batch_as_terminating() {
    let mut cfg = config();
    cfg.hooks.after_tool_call = Some(Arc::new(|_, _| {
        Box::pin(async {
            Ok(Some(AfterToolCallResult {
                terminate: Some(true),
                ..Default::default()
            }))
        })
    }));
    let stream = always_tool_use();
    run(
        vec![user("Hi")],
        context(vec![], vec![echo_tool(Arc::default())]),
        cfg,
        stream.clone(),
    )
    .await;
    assert_eq!(stream.count(), 1);
}
