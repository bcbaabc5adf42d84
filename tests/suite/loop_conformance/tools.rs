//! L6–L9: tool calls and results, length truncation, hook-mutated and prepared arguments.

use std::sync::{Arc, Mutex};

use agent_lsp::agent::event::AgentEvent;
use agent_lsp::agent::hooks::{AfterToolCallResult, BeforeToolCallResult};
use agent_lsp::agent::message::{AgentMessage, ContentBlock, Cost, StopReason, Usage};
use agent_lsp::agent::tool::AgentToolResult;
use serde_json::{Value, json};

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

pub(super) fn tool_results(events: &[AgentEvent]) -> Vec<(String, bool, Option<u64>)> {
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

pub(super) fn result_message_ids(events: &[AgentEvent]) -> Vec<String> {
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

pub(super) fn turn_end_ids(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TurnEnd { tool_results, .. } => Some(tool_results.clone()),
            _ => None,
        })
        .flatten()
        .map(|r| r.tool_call_id.clone())
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
