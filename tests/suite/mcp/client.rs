//! The MCP client against the fault server: calls, faults, timeouts, aborts, list changes.

use std::sync::Arc;
use std::time::Duration;

use agent_lsp::agent::tool::{AgentTool, ToolInput, ToolUpdater};
use agent_lsp::mcp::McpHub;
use agent_lsp::mcp::server::State;
use agent_lsp::mcp::tool::McpTool;
use tokio_util::sync::CancellationToken;

use super::*;

fn tool(session: &agent_lsp::mcp::McpSession, name: &str) -> Arc<McpTool> {
    session
        .tools()
        .into_iter()
        .find(|t| t.declaration().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

async fn run(tool: &McpTool, args: Value) -> Result<String, String> {
    let result = tool
        .execute(ToolInput::new("c1", args))
        .await
        .map_err(|e| e.message)?;
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok(text)
}

async fn started(servers: Value) -> (McpHub, agent_lsp::mcp::McpSession) {
    let hub = McpHub::new();
    let cwd = std::env::temp_dir();
    let session = hub.attach(&cwd, &config(servers), true);
    session.ready().await;
    (hub, session)
}

#[tokio::test]
async fn a_server_starts_lists_its_tools_and_answers_calls() {
    let (_hub, session) = started(json!({"fault": fault_entry(json!({}))})).await;
    let status = &session.status()[0];
    assert_eq!(status.state, State::Ready, "{status:?}");
    assert!(status.tools.contains(&"echo".to_owned()));
    let echo = tool(&session, "fault__echo");
    assert_eq!(echo.info().kind, "other");
    assert_eq!(tool(&session, "fault__read_only").info().kind, "read");
    assert_eq!(run(&echo, json!({"text": "hi"})).await.unwrap(), "echo: hi");
    let fail = tool(&session, "fault__fail");
    let result = fail.execute(ToolInput::new("c", json!({}))).await.unwrap();
    assert_eq!(result.is_error, Some(true));
}

#[tokio::test]
async fn a_server_that_exits_mid_call_is_an_error_and_restarts_on_next_use() {
    let (_hub, session) = started(json!({"fault": fault_entry(json!({}))})).await;
    let exit = tool(&session, "fault__exit_now");
    let error = run(&exit, json!({})).await.unwrap_err();
    assert!(error.contains("exited"), "{error}");
    // Its state follows; the next use starts it again (after the backoff).
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(session.status()[0].state, State::Failed);
    session.ready().await;
    assert_eq!(
        session.status()[0].state,
        State::Ready,
        "{:?}",
        session.status()
    );
    let echo = tool(&session, "fault__echo");
    assert_eq!(
        run(&echo, json!({"text": "back"})).await.unwrap(),
        "echo: back"
    );
}

#[tokio::test]
async fn garbage_on_stdout_does_not_break_the_connection() {
    let (_hub, session) =
        started(json!({"fault": fault_entry(json!({"toolTimeoutMs": 5000}))})).await;
    let garbage = tool(&session, "fault__garbage");
    let outcome = run(&garbage, json!({})).await;
    // Either the answer after the garbage arrives or the call fails clearly; never a hang.
    match outcome {
        Ok(text) => assert_eq!(text, "after the garbage"),
        Err(e) => assert!(!e.is_empty()),
    }
    let echo = tool(&session, "fault__echo");
    if session.status()[0].state != State::Ready {
        session.ready().await;
    }
    assert_eq!(run(&echo, json!({"text": "x"})).await.unwrap(), "echo: x");
}

#[tokio::test]
async fn a_hanging_call_times_out_and_an_abort_cancels_it() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let entry = fault_entry(
        json!({"toolTimeoutMs": 300, "env": {"FAULT_LOG": log.path().display().to_string()}}),
    );
    let (_hub, session) = started(json!({"fault": entry})).await;
    let hang = tool(&session, "fault__hang");
    let error = run(&hang, json!({})).await.unwrap_err();
    assert!(error.contains("toolTimeoutMs"), "{error}");
    let cancel = CancellationToken::new();
    let call = hang.execute(ToolInput {
        cancel: cancel.clone(),
        ..ToolInput::new("c2", json!({}))
    });
    let aborting = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(call, aborting);
    assert_eq!(result.unwrap_err().message, "Operation aborted");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let seen = std::fs::read_to_string(log.path()).unwrap();
    assert!(
        seen.matches("notifications/cancelled").count() >= 2,
        "the server heard of both: {seen}"
    );
}

#[tokio::test]
async fn a_changed_tool_list_is_listed_again() {
    let (_hub, session) = started(json!({"fault": fault_entry(json!({}))})).await;
    let mut watch = session.watch();
    run(&tool(&session, "fault__change_tools"), json!({}))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !session
            .tools()
            .iter()
            .any(|t| t.declaration().name == "fault__added")
        {
            watch.changed().await;
        }
    })
    .await
    .expect("the new tool appears");
    run(&tool(&session, "fault__remove_tools"), json!({}))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while session
            .tools()
            .iter()
            .any(|t| t.declaration().name == "fault__added")
        {
            watch.changed().await;
        }
    })
    .await
    .expect("and goes again");
}

#[tokio::test]
async fn big_results_are_truncated_and_progress_is_reported() {
    let (_hub, session) = started(json!({"fault": fault_entry(json!({}))})).await;
    let big = run(&tool(&session, "fault__big"), json!({})).await.unwrap();
    assert!(big.len() < 60_000, "{}", big.len());
    assert!(
        big.contains("[Showing lines"),
        "{}",
        &big[big.len() - 100..]
    );
    let (updater, mut updates) = ToolUpdater::channel();
    let progress = tool(&session, "fault__progress");
    let result = progress
        .execute(ToolInput {
            on_update: updater,
            ..ToolInput::new("p", json!({}))
        })
        .await
        .unwrap();
    assert!(
        matches!(&result.content[0], agent_lsp::agent::message::ContentBlock::Text(t) if t.text == "done")
    );
    let mut seen = Vec::new();
    while let Ok(update) = updates.try_recv() {
        seen.push(update.details.unwrap()["progress"].as_f64().unwrap());
    }
    assert_eq!(seen, [1.0, 2.0, 3.0]);
}

#[tokio::test]
async fn unsupported_server_requests_are_answered_with_an_error() {
    let (_hub, session) = started(json!({"fault": fault_entry(json!({}))})).await;
    let answer = run(&tool(&session, "fault__sampling"), json!({}))
        .await
        .unwrap();
    assert!(answer.contains("\"code\""), "an error came back: {answer}");
}

#[tokio::test]
async fn servers_that_fail_to_start_say_why_and_the_others_work() {
    let (_hub, session) = started(json!({
        "crash": fault_entry(json!({"env": {"FAULT_CRASH_ON_START": "1"}})),
        "slow": fault_entry(json!({"startupTimeoutMs": 300, "env": {"FAULT_START_DELAY_MS": "3000"}})),
        "missing": {"command": "/definitely/not/a/program"},
        "off": fault_entry(json!({"enabled": false})),
        "fine": fault_entry(json!({}))
    }))
    .await;
    let by_name = |name: &str| {
        session
            .status()
            .into_iter()
            .find(|s| s.name == name)
            .unwrap()
    };
    assert_eq!(by_name("crash").state, State::Failed);
    let slow = by_name("slow");
    assert!(slow.error.unwrap().contains("did not start within 300 ms"));
    let missing = by_name("missing");
    assert!(missing.error.unwrap().contains("/definitely/not/a/program"));
    assert_eq!(by_name("off").state, State::Disabled);
    assert_eq!(by_name("fine").state, State::Ready);
    assert!(session.tools().iter().all(|t| t.info().server == "fine"));
}

#[tokio::test]
async fn sessions_in_one_directory_share_a_server() {
    let hub = McpHub::new();
    let cwd = std::env::temp_dir();
    let servers = config(json!({"fault": fault_entry(json!({}))}));
    let a = hub.attach(&cwd, &servers, true);
    let b = hub.attach(&cwd, &servers, true);
    a.ready().await;
    b.ready().await;
    // One process: a change made through one session is seen by the other.
    run(&tool(&a, "fault__change_tools"), json!({}))
        .await
        .unwrap();
    let mut watch = b.watch();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !b
            .tools()
            .iter()
            .any(|t| t.declaration().name == "fault__added")
        {
            watch.changed().await;
        }
    })
    .await
    .expect("shared");
}
