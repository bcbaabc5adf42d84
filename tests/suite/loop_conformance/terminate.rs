//! L26–L30: early termination of a tool batch (`terminate`).

use std::sync::{Arc, Mutex};

use agent_lsp::agent::hooks::{AfterToolCallResult, BeforeToolCallResult};
use agent_lsp::agent::message::{AgentMessage, ContentBlock};
use agent_lsp::agent::tool::{AgentTool, AgentToolResult, ExecutionMode};
use serde_json::{Value, json};

use super::modes::two_calls;
use super::tools::tool_results;
use super::{config, context, run};
use crate::suite::support::mock_stream::*;

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
