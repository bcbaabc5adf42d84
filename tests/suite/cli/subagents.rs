//! `agent-lsp run` with subagents: `--json` nests the child's events under the `task` call, and
//! the child's session file lies beside the run's, pi-valid.

use agent_lsp::testing::MockResponse;
use serde_json::json;

use super::super::support::cli_run::{CliEnv, json_lines, stderr, stdout};
use super::super::support::pi_session::assert_valid_pi_v3;
use super::{MODEL, mock};

#[tokio::test]
async fn json_output_nests_the_childs_events_under_the_task_call() {
    let mock = mock(vec![
        MockResponse::tool_call(
            "t1",
            "task",
            json!({"description": "list", "prompt": "List the files", "agent": "explore"}),
        ),
        MockResponse::tool_call("c1", "ls", json!({})),
        MockResponse::text("One file: a.txt"),
        MockResponse::text("There is one file."),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("a.txt"), "a").unwrap();
    let out = env.run(&["run", "--json", "--model", MODEL, "list"]).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let events = json_lines(&out);
    let nested: Vec<&serde_json::Value> = (events.iter())
        .filter(|e| e["type"] == "subagent_event")
        .collect();
    let kinds: Vec<&str> = (nested.iter())
        .map(|e| e["event"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"agent_start"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"agent_end"), "{kinds:?}");
    assert!(kinds.contains(&"tool_execution_start"), "{kinds:?}");
    for e in &nested {
        assert_eq!(e["parentToolCallId"], "t1");
        assert_eq!(e["agent"], "explore");
    }
    // Only the run's own `agent_end` is top-level.
    let top_ends = events.iter().filter(|e| e["type"] == "agent_end").count();
    assert_eq!(top_ends, 1);
    let end = (events.iter())
        .find(|e| e["type"] == "tool_execution_end" && e["toolCallId"] == "t1")
        .unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "One file: a.txt");
    let child_file = end["result"]["details"]["sessionFile"].as_str().unwrap();
    assert_valid_pi_v3(std::path::Path::new(child_file));
    let parent = env.session_files();
    assert_eq!(
        parent.len(),
        1,
        "the child is not a session of the folder: {parent:?}"
    );
    let parent = parent[0].display().to_string();
    assert!(child_file.starts_with(parent.trim_end_matches(".jsonl")));
}

#[tokio::test]
async fn human_output_shows_the_childs_calls_under_its_agents_name() {
    let mock = mock(vec![
        MockResponse::tool_call(
            "t1",
            "task",
            json!({"description": "list", "prompt": "List the files", "agent": "explore"}),
        ),
        MockResponse::tool_call("c1", "ls", json!({})),
        MockResponse::text("One file: a.txt"),
        MockResponse::text("There is one file."),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("a.txt"), "a").unwrap();
    let out = env.run(&["run", "--model", MODEL, "list"]).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let child = text.find("[explore › ls").expect(&text);
    let task = text.find("[task").expect(&text);
    assert!(
        child < task,
        "the child's call ends before its task: {text}"
    );
    assert!(text.contains("There is one file."), "{text}");
    // The child's words are the task's result, not the run's text.
    assert!(!text.contains("One file: a.txt"), "{text}");
}
