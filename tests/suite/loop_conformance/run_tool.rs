//! L34–L35: `runToolCall`, the event-free single-call pipeline.

use std::sync::{Arc, Mutex};

use agent_lsp::agent::hooks::{AfterToolCallResult, BeforeToolCallResult};
use agent_lsp::agent::message::{ContentBlock, ToolCall};
use agent_lsp::agent::tool::{AgentTool, AgentToolResult};
use agent_lsp::agent::tool_exec::{RunToolCallOptions, run_tool_call};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::suite::support::mock_stream::*;

/// `echo` with `outputSchema {value}`: one "partial" update, then structured content.
fn echo() -> Arc<dyn AgentTool> {
    FnTool::new("echo", value_schema(), |_, args, _, updater| {
        Box::pin(async move {
            updater.update(AgentToolResult {
                content: vec![ContentBlock::text("partial")],
                details: Some(json!({})),
                ..Default::default()
            });
            let value = args["value"].clone();
            Ok(AgentToolResult {
                content: vec![ContentBlock::text(value.as_str().unwrap_or_default())],
                details: Some(json!({})),
                structured_content: Some(json!({"value": value})),
                ..Default::default()
            })
        })
    })
    .arc()
}

fn failing() -> Arc<dyn AgentTool> {
    FnTool::new("failing", json!({}), |_, _, _, _| {
        Box::pin(async {
            Ok(AgentToolResult {
                content: vec![ContentBlock::text("bad")],
                details: Some(json!({"partial": true})),
                is_error: Some(true),
                ..Default::default()
            })
        })
    })
    .arc()
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
        ..Default::default()
    }
}

#[tokio::test]
async fn l34_validates_runs_the_hooks_and_reports_failures_as_error_outcomes() {
    let hook_calls: Arc<Mutex<Vec<String>>> = Arc::default();
    let updates: Arc<Mutex<Vec<AgentToolResult>>> = Arc::default();
    let (h1, h2, u) = (hook_calls.clone(), hook_calls.clone(), updates.clone());
    let options = RunToolCallOptions {
        tools: vec![echo(), failing()],
        assistant_message: assistant(vec![], Default::default()),
        before_tool_call: Some(Arc::new(move |ctx, _| {
            h1.lock()
                .unwrap()
                .push(format!("before {}", ctx.tool_call.id));
            let blocked = ctx.args["value"] == "blocked";
            Box::pin(async move {
                Ok(blocked.then(|| BeforeToolCallResult {
                    block: true,
                    reason: Some("nope".into()),
                    ..Default::default()
                }))
            })
        })),
        after_tool_call: Some(Arc::new(move |ctx, _| {
            h2.lock()
                .unwrap()
                .push(format!("after {}", ctx.tool_call.id));
            Box::pin(async { Ok(None) })
        })),
        on_update: Some(Arc::new(move |p| u.lock().unwrap().push(p))),
        ..Default::default()
    };
    let a = run_tool_call(&call("a", "echo", json!({"value": "a"})), options.clone()).await;
    assert_eq!(a.tool_call.id, "a");
    assert_eq!(a.result.structured_content, Some(json!({"value": "a"})));
    assert!(!a.is_error);
    assert!(a.duration_ms.is_some());

    let b = run_tool_call(
        &call("b", "echo", json!({"value": {"nested": true}})),
        options.clone(),
    )
    .await;
    assert!(b.is_error);
    assert_eq!(b.duration_ms, None);
    assert_eq!(
        b.result.content[0].as_text().unwrap(),
        "Validation failed for tool \"echo\":\n  - value: expected string, got object\n\nReceived arguments:\n{\n  \"value\": {\n    \"nested\": true\n  }\n}"
    );

    let c = run_tool_call(
        &call("c", "echo", json!({"value": "blocked"})),
        options.clone(),
    )
    .await;
    assert_eq!(c.result.content, vec![ContentBlock::text("nope")]);
    assert!(c.is_error);
    assert_eq!(c.duration_ms, None);

    let d = run_tool_call(&call("d", "missing", json!({})), options.clone()).await;
    assert_eq!(
        d.result.content,
        vec![ContentBlock::text("Tool missing not found")]
    );
    assert!(d.is_error);

    let e = run_tool_call(&call("e", "failing", json!({})), options.clone()).await;
    assert_eq!(e.result.details, Some(json!({"partial": true})));
    assert!(e.is_error);
    assert!(e.duration_ms.is_some());

    assert_eq!(
        *updates.lock().unwrap(),
        [AgentToolResult {
            content: vec![ContentBlock::text("partial")],
            details: Some(json!({})),
            ..Default::default()
        }]
    );
    assert_eq!(
        *hook_calls.lock().unwrap(),
        ["before a", "after a", "before c", "before e", "after e"]
    );

    // With an aborted signal: `Operation aborted` before any hook.
    hook_calls.lock().unwrap().clear();
    let signal = CancellationToken::new();
    signal.cancel();
    let aborted = run_tool_call(
        &call("f", "echo", json!({"value": "a"})),
        RunToolCallOptions { signal, ..options },
    )
    .await;
    assert!(aborted.is_error);
    assert_eq!(aborted.result, AgentToolResult::text("Operation aborted"));
    assert!(hook_calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn l35_lets_after_tool_call_replace_structured_content_and_drops_it_when_only_content_is_replaced()
 {
    let redacted = vec![ContentBlock::text("redacted")];
    let overrides = [
        AfterToolCallResult {
            content: Some(redacted.clone()),
            ..Default::default()
        },
        AfterToolCallResult {
            structured_content: Some(json!({"value": "replaced"})),
            ..Default::default()
        },
        AfterToolCallResult {
            content: Some(redacted),
            structured_content: Some(json!({"value": "both"})),
            ..Default::default()
        },
        AfterToolCallResult {
            details: Some(json!({"note": "kept"})),
            ..Default::default()
        },
    ];
    let mut seen = Vec::new();
    for over in overrides {
        let options = RunToolCallOptions {
            tools: vec![echo()],
            after_tool_call: Some(Arc::new(move |_, _| {
                let over = over.clone();
                Box::pin(async move { Ok(Some(over)) })
            })),
            ..Default::default()
        };
        let outcome =
            run_tool_call(&call("a", "echo", json!({"value": "original"})), options).await;
        seen.push(outcome.result.structured_content);
    }
    assert_eq!(
        seen,
        [
            None,
            Some(json!({"value": "replaced"})),
            Some(json!({"value": "both"})),
            Some(json!({"value": "original"}))
        ]
    );
}
