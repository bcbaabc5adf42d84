//! MCP servers through the real `agent-lsp run`: the scripted model calls their tools and the
//! results reach it; faults end in clear tool errors with the run still ending once; the project
//! file's trust rule.

use agent_lsp::testing::{MockProvider, MockResponse, MockScript};

use super::*;
use crate::suite::support::cli_run::{CliEnv, json_lines, stderr, types};

/// The text of the tool result for `call_id` in the model's later requests.
fn tool_result_seen(mock: &MockProvider, call_id: &str) -> String {
    let requests = mock.requests();
    let last = requests.last().expect("a request");
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_else(|| panic!("no result for {call_id}: {}", last.body))
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn write_config(env: &CliEnv, servers: Value) -> String {
    let path = env.home.path().join("mcp-test.json");
    std::fs::write(&path, json!({"mcpServers": servers}).to_string()).unwrap();
    path.display().to_string()
}

async fn mock(responses: Vec<MockResponse>) -> MockProvider {
    MockProvider::start(MockScript { responses }).await.unwrap()
}

#[tokio::test]
async fn server_everything_tools_reach_the_model_through_run() {
    let everything = npm_servers().join("@modelcontextprotocol/server-everything/dist/index.js");
    let mock = mock(vec![
        MockResponse::tool_call(
            "c1",
            "everything__echo",
            json!({"message": "from the model"}),
        ),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let config = write_config(
        &env,
        json!({"everything": {"command": "node", "args": [everything.display().to_string()]}}),
    );
    let out = env
        .run(&[
            "run",
            "--json",
            "--approve",
            "all",
            "--mcp-config",
            &config,
            "echo it",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("MCP server everything: started with"),
        "{}",
        stderr(&out)
    );
    assert_eq!(tool_result_seen(&mock, "c1"), "Echo: from the model");
    let first = &mock.requests()[0].body;
    assert!(
        tool_names(first).contains(&"everything__echo".to_owned()),
        "declared before the first request"
    );
    let events = json_lines(&out);
    assert_eq!(
        types(&events).iter().filter(|t| *t == "agent_end").count(),
        1
    );
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

#[tokio::test]
async fn server_filesystem_reads_a_project_file_through_run() {
    let fs = npm_servers().join("@modelcontextprotocol/server-filesystem/dist/index.js");
    let env_probe = CliEnv::new();
    let root = env_probe.project();
    std::fs::write(root.join("notes.txt"), "kept by the filesystem server\n").unwrap();
    let path = root.join("notes.txt").display().to_string();
    let mock = mock(vec![
        MockResponse::tool_call("c1", "fs__read_text_file", json!({"path": path})),
        MockResponse::text("done"),
    ])
    .await;
    let mut env = env_probe;
    env.set("OPENAI_BASE_URL", &mock.openai_base_url());
    env.set("OPENAI_API_KEY", "test-key");
    let config = write_config(
        &env,
        json!({"fs": {"command": "node", "args": [fs.display().to_string(), root.display().to_string()],
                      "approval": "allow"}}),
    );
    // `approval: allow` lets it run even where other tools need --approve all.
    let out = env
        .run(&["run", "--json", "--mcp-config", &config, "read notes"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        tool_result_seen(&mock, "c1"),
        "kept by the filesystem server\n"
    );
}

#[tokio::test]
async fn faults_become_tool_errors_and_every_run_ends_once() {
    let mock = mock(vec![
        MockResponse::tool_call("c1", "exits__exit_now", json!({})),
        MockResponse::tool_call("c2", "hangs__hang", json!({})),
        MockResponse::tool_call("c3", "big__big", json!({})),
        MockResponse::tool_call("c4", "garbage__garbage", json!({})),
        MockResponse::tool_call("c5", "other__echo", json!({"text": "still here"})),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let config = write_config(
        &env,
        json!({"exits": fault_entry(json!({})), "hangs": fault_entry(json!({"toolTimeoutMs": 500})),
               "big": fault_entry(json!({})), "garbage": fault_entry(json!({"toolTimeoutMs": 3000})),
               "other": fault_entry(json!({}))}),
    );
    let out = env
        .run(&[
            "run",
            "--json",
            "--approve",
            "all",
            "--mcp-config",
            &config,
            "go",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let exited = tool_result_seen(&mock, "c1");
    assert!(exited.contains("exited during the call"), "{exited}");
    let hung = tool_result_seen(&mock, "c2");
    assert!(
        hung.contains("no answer within 500 ms (toolTimeoutMs)"),
        "{hung}"
    );
    let big = tool_result_seen(&mock, "c3");
    assert!(
        big.len() < 60_000 && big.contains("[Showing lines"),
        "{}",
        big.len()
    );
    let garbage = tool_result_seen(&mock, "c4");
    assert!(!garbage.is_empty(), "an answer or a clear error: {garbage}");
    assert_eq!(
        tool_result_seen(&mock, "c5"),
        "echo: still here",
        "the other servers kept working"
    );
    let events = json_lines(&out);
    assert_eq!(
        types(&events).iter().filter(|t| *t == "agent_end").count(),
        1
    );
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

#[tokio::test]
async fn a_changed_tool_list_is_declared_through_the_transcript_and_resumes_the_same() {
    let mock = mock(vec![
        MockResponse::tool_call("c1", "fault__change_tools", json!({})),
        MockResponse::tool_call("c2", "fault__added", json!({})),
        MockResponse::text("done"),
        MockResponse::text("resumed"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let config = write_config(&env, json!({"fault": fault_entry(json!({}))}));
    let out = env
        .run(&[
            "run",
            "--json",
            "--approve",
            "all",
            "--mcp-config",
            &config,
            "go",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = mock.requests();
    assert!(!tool_names(&requests[0].body).contains(&"fault__added".to_owned()));
    assert!(
        tool_names(&requests[1].body).contains(&"fault__added".to_owned()),
        "declared after the change"
    );
    let events = json_lines(&out);
    let declared = events.iter().any(|e| {
        e["type"] == "message_end"
            && e["message"]["role"] == "system"
            && e["message"]["toolsAdded"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["name"] == "fault__added"))
    });
    assert!(declared, "a system message declares the new tool");
    // The stored session replays to the tools it had: resuming declares only what differs now
    // (the new server process starts without `added`), and keeps the system prompt.
    let file = env.session_files().pop().unwrap();
    let out = env
        .run(&[
            "run",
            "--json",
            "--approve",
            "all",
            "--mcp-config",
            &config,
            "--session",
            &file.display().to_string(),
            "again",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let resumed = json_lines(&out);
    let declarations: Vec<&Value> = resumed
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "system")
        .map(|e| &e["message"])
        .collect();
    assert_eq!(declarations.len(), 1, "{declarations:?}");
    assert!(
        declarations[0].get("toolsAdded").is_none(),
        "{}",
        declarations[0]
    );
    assert_eq!(
        declarations[0]["toolsRemoved"],
        json!([{"name": "fault__added"}])
    );
    let requests = mock.requests();
    let last = &requests.last().unwrap().body;
    let names = tool_names(last);
    assert!(names.contains(&"read".to_owned()) && names.contains(&"fault__echo".to_owned()));
    assert!(!names.contains(&"fault__added".to_owned()));
    let system = &last["messages"][0];
    assert!(
        system["content"]
            .as_str()
            .unwrap_or("")
            .starts_with("You are an expert coding assistant"),
        "the system prompt is still first: {system}"
    );
}

#[tokio::test]
async fn a_project_file_starts_nothing_until_trusted() {
    let mock = mock(vec![
        MockResponse::text("one"),
        MockResponse::text("two"),
        MockResponse::text("three"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let marker = env.home.path().join("started.log");
    let entry = fault_entry(json!({"env": {"FAULT_LOG": marker.display().to_string()}}));
    std::fs::write(
        env.project().join(".mcp.json"),
        json!({"mcpServers": {"proj": entry}}).to_string(),
    )
    .unwrap();
    let out = env.run(&["run", "--json", "hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("MCP server proj: not started"),
        "{}",
        stderr(&out)
    );
    assert!(!marker.exists(), "nothing was started");
    assert!(
        !tool_names(&mock.requests()[0].body)
            .iter()
            .any(|n| n.starts_with("proj__"))
    );
    let out = env
        .run(&["run", "--json", "--trust-project-mcp", "hi"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(marker.exists(), "started once trusted");
    assert!(tool_names(&mock.requests()[1].body).contains(&"proj__echo".to_owned()));
}

#[tokio::test]
async fn a_broken_config_file_is_reported_and_the_run_goes_on() {
    let mock = mock(vec![MockResponse::text("fine")]).await;
    let env = CliEnv::with_mock(&mock);
    let config = write_config(
        &env,
        json!({"bad": {"command": 5}, "good": fault_entry(json!({}))}),
    );
    let out = env
        .run(&["run", "--json", "--mcp-config", &config, "hi"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("mcp-test.json: mcpServers.bad.command: expected a string"),
        "{err}"
    );
    assert!(err.contains("MCP server good: started"), "{err}");
}
