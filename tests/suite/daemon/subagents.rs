//! Subagents through the daemon: the `task` tool's child agent, its events nested under the
//! call (`subagent_event`), its own session file, approvals through the parent, abort, and
//! several children in parallel.

use super::*;
use crate::suite::support::pi_session::assert_valid_pi_v3;

fn task(id: &str, prompt: &str, agent: Option<&str>) -> MockResponse {
    let mut args = json!({"description": "look it up", "prompt": prompt});
    if let Some(agent) = agent {
        args["agent"] = json!(agent);
    }
    MockResponse::tool_call(id, "task", args)
}

/// The `subagent_event`s of the `task` call `parent`, their child events' types in order.
fn child_kinds(events: &[Value], parent: &str) -> Vec<String> {
    (events.iter())
        .filter(|e| {
            e["event"]["type"] == "subagent_event" && e["event"]["parentToolCallId"] == parent
        })
        .map(|e| e["event"]["event"]["type"].as_str().unwrap().to_owned())
        .collect()
}

fn task_end<'a>(events: &'a [Value], id: &str) -> &'a Value {
    let end = (events.iter())
        .find(|e| e["event"]["type"] == "tool_execution_end" && e["event"]["toolCallId"] == id);
    &end.unwrap_or_else(|| panic!("no end of {id}: {events:#?}"))["event"]
}

fn declared_tools(request: &Value) -> Vec<String> {
    (request["tools"].as_array().into_iter().flatten())
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn file_entries(path: &str) -> Vec<Value> {
    (std::fs::read_to_string(path).unwrap().lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn an_explore_subagent_answers_the_call_with_nested_events_and_its_own_session_file() {
    let (mock, client) = agent_setup(
        vec![
            task("t1", "Find the answer in notes.txt", Some("explore")),
            MockResponse::tool_call("c1", "read", json!({"path": "notes.txt"})),
            MockResponse::text("The answer is 42 (notes.txt:1)."),
            MockResponse::text("It is 42."),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    std::fs::write(client.workspace.path().join("notes.txt"), "answer: 42\n").unwrap();
    let (session, run, id) = prompt(&client, json!({"message": "what is the answer?"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    // Neither `task` nor the child's `read` asked.
    assert!(requests_of(&client, "agent/beforeToolCall").is_empty());

    let end = task_end(&events, "t1");
    assert_eq!(end["isError"], false, "{end}");
    assert_eq!(
        end["result"]["content"][0]["text"],
        "The answer is 42 (notes.txt:1)."
    );
    let details = &end["result"]["details"];
    assert_eq!(details["agent"], "explore");
    assert_eq!(details["turns"], 2);

    // The child's events, whole, between the call's start and end, in the parent's run.
    let kinds = child_kinds(&events, "t1");
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("agent_start"),
        "{kinds:?}"
    );
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("agent_end"),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"tool_execution_end".to_owned()),
        "{kinds:?}"
    );
    let at = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).unwrap();
    let start =
        at(&|e| e["event"]["type"] == "tool_execution_start" && e["event"]["toolCallId"] == "t1");
    let stop =
        at(&|e| e["event"]["type"] == "tool_execution_end" && e["event"]["toolCallId"] == "t1");
    for (i, e) in events.iter().enumerate() {
        if e["event"]["type"] == "subagent_event" {
            assert!(start < i && i < stop, "{i} outside {start}..{stop}");
            assert_eq!(e["runId"], run.as_str());
            assert_eq!(e["event"]["agent"], "explore");
        }
    }
    let child_read = (events.iter()).find(|e| {
        e["event"]["type"] == "subagent_event"
            && e["event"]["event"]["type"] == "tool_execution_end"
    });
    let child_read = &child_read.unwrap()["event"]["event"];
    assert_eq!(child_read["toolCallId"], "c1");
    assert!((child_read["result"]["content"][0]["text"].as_str().unwrap()).contains("answer: 42"));

    // A fresh context: its own prompt and the read-only tools, nothing of the parent's talk.
    let requests = mock.requests();
    let child = &requests[1].body;
    let text = child.to_string();
    assert!(text.contains("exploration agent"), "{text}");
    assert!(text.contains("Find the answer in notes.txt"), "{text}");
    assert!(!text.contains("what is the answer?"), "{text}");
    let mut tools = declared_tools(child);
    tools.sort();
    assert_eq!(tools, ["find", "grep", "ls", "read"]);
    assert!(declared_tools(&requests[0].body).contains(&"task".to_owned()));
    // The parent reads the answer as the call's result.
    assert!(requests[3].body.to_string().contains("The answer is 42"));

    // The child's transcript: a pi session file whose parent is the session's.
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    let parent_file = state["sessionFile"].as_str().unwrap();
    let child_file = details["sessionFile"].as_str().unwrap();
    assert!(
        child_file.starts_with(parent_file.trim_end_matches(".jsonl")),
        "{child_file} beside {parent_file}"
    );
    assert_valid_pi_v3(std::path::Path::new(child_file));
    let entries = file_entries(child_file);
    assert_eq!(entries[0]["type"], "session");
    assert_eq!(entries[0]["parentSession"], parent_file);
    let roles: Vec<&str> = (entries.iter())
        .filter_map(|e| e["message"]["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    // The parent's file names it in the call's result.
    let linked = file_entries(parent_file).into_iter().any(|e| {
        e["message"]["role"] == "toolResult" && e["message"]["details"]["sessionFile"] == child_file
    });
    assert!(linked);
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

#[tokio::test]
async fn a_subagents_calls_are_approved_through_the_parent_session() {
    let (_mock, client) = agent_setup(
        vec![
            task("t1", "Run the tests", None),
            bash_call("c1", "echo hi"),
            MockResponse::text("I could not run the tests: not now."),
            MockResponse::text("The tests could not run."),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    client.set_approvals(Box::new(|_| {
        Some(json!({"decision": "block", "reason": "not now"}))
    }));
    let (session, run, id) = prompt(&client, json!({"message": "test it"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    let asked = requests_of(&client, "agent/beforeToolCall");
    assert_eq!(asked.len(), 1, "only the child's bash asks: {asked:?}");
    assert_eq!(asked[0]["params"]["toolCallId"], "c1");
    assert_eq!(asked[0]["params"]["toolName"], "bash");
    let child_end = (events.iter()).find(|e| {
        e["event"]["type"] == "subagent_event"
            && e["event"]["event"]["type"] == "tool_execution_end"
    });
    let child_end = &child_end.unwrap()["event"]["event"];
    assert_eq!(child_end["isError"], true);
    assert_eq!(child_end["result"]["content"][0]["text"], "not now");
    let end = task_end(&events, "t1");
    assert_eq!(end["result"]["details"]["agent"], "general");
    assert_eq!(
        end["result"]["content"][0]["text"],
        "I could not run the tests: not now."
    );
}

#[tokio::test]
async fn aborting_the_session_aborts_its_subagent() {
    let (_mock, client) = agent_setup(
        vec![
            task("t1", "Run the tests", None),
            bash_call("c1", "echo hi"),
            MockResponse::text("never read"),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    // The child's approval is never answered: the child waits in it.
    client.set_approvals(Box::new(|_| None));
    let (session, run, id) = prompt(&client, json!({"message": "test it"})).await;
    client
        .wait_for("the child's approval", |m| {
            m["method"] == "agent/beforeToolCall"
        })
        .await;
    let aborted = client
        .request("agent/abort", json!({"sessionId": session}))
        .await;
    assert_eq!(aborted, json!({"aborted": true}));
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    assert!(settled_aborted(&events, &run));
    let kinds = child_kinds(&events, "t1");
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("agent_end"),
        "{kinds:?}"
    );
    let end = task_end(&events, "t1");
    assert_eq!(end["isError"], true);
    assert_eq!(end["result"]["content"][0]["text"], "Operation aborted");
}

#[tokio::test]
async fn two_subagents_run_in_parallel_each_nested_under_its_own_call() {
    let mut both = task("t1", "Look at the parser", Some("explore"));
    both.tool_calls
        .extend(task("t2", "Look at the lexer", Some("explore")).tool_calls);
    // Each child's one request gets the same answer, whichever comes first.
    let (mock, client) = agent_setup(
        vec![
            both,
            MockResponse::text("Looked."),
            MockResponse::text("Looked."),
            MockResponse::text("Both looked."),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let (session, run, id) = prompt(&client, json!({"message": "look at both"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    let mut files = Vec::new();
    for call in ["t1", "t2"] {
        let kinds = child_kinds(&events, call);
        assert_eq!(
            kinds.first().map(String::as_str),
            Some("agent_start"),
            "{kinds:?}"
        );
        assert_eq!(
            kinds.last().map(String::as_str),
            Some("agent_end"),
            "{kinds:?}"
        );
        let end = task_end(&events, call);
        assert_eq!(end["result"]["content"][0]["text"], "Looked.");
        files.push(end["result"]["details"]["sessionFile"].clone());
    }
    assert_ne!(files[0], files[1]);
    // Both children were asked before either call ended: they ran side by side.
    let ends = (events.iter())
        .position(|e| e["event"]["type"] == "tool_execution_end")
        .unwrap();
    let starts = (events.iter().take(ends))
        .filter(|e| {
            e["event"]["type"] == "subagent_event" && e["event"]["event"]["type"] == "agent_start"
        })
        .count();
    assert_eq!(starts, 2);
    let prompts: Vec<String> = (mock.requests()[1..3].iter())
        .map(|r| r.body.to_string())
        .collect();
    assert!(prompts.iter().any(|p| p.contains("Look at the parser")));
    assert!(prompts.iter().any(|p| p.contains("Look at the lexer")));
}

#[tokio::test]
async fn an_unknown_agent_is_a_tool_error_naming_the_agents() {
    let (_mock, client) = agent_setup(
        vec![task("t1", "x", Some("wizard")), MockResponse::text("ok")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    let end = task_end(&events, "t1");
    assert_eq!(end["isError"], true);
    let text = end["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("explore") && text.contains("general"),
        "{text}"
    );
}

#[tokio::test]
async fn a_subagents_changes_are_the_runs_and_a_unit_of_their_own() {
    let mut both = MockResponse::tool_call(
        "p1",
        "write",
        json!({"path": "mine.txt", "content": "parent\n"}),
    );
    both.tool_calls
        .extend(task("t1", "Create made.txt", None).tool_calls);
    let (_mock, client) = agent_setup(
        vec![
            both,
            MockResponse::tool_call("c1", "write", json!({"path": "made.txt", "content": "x\n"})),
            MockResponse::text("Created made.txt."),
            MockResponse::text("Done."),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let root = client.workspace.path().to_path_buf();
    let (session, run, _) = prompt(&client, json!({"message": "make them"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_eq!(
        std::fs::read_to_string(root.join("made.txt")).unwrap(),
        "x\n"
    );
    let update = (events.iter())
        .find(|e| e["event"]["type"] == "changes_update")
        .expect("changes_update after the run");
    assert_eq!(
        update["event"]["files"].as_array().unwrap().len(),
        2,
        "{update}"
    );
    let names = |changes: &Value| -> Vec<String> {
        (changes["files"].as_array().unwrap().iter())
            .map(|f| {
                f["path"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    // The child's changes alone, by its `task` call.
    let child = client
        .request(
            "agent/runChanges",
            json!({"sessionId": session, "taskCallId": "t1"}),
        )
        .await;
    assert_eq!(names(&child), ["made.txt"], "{child}");
    assert_eq!(child["runId"], run.as_str());
    let unknown = client
        .request_raw(
            "agent/runChanges",
            json!({"sessionId": session, "taskCallId": "nope"}),
        )
        .await;
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nope"),
        "{unknown}"
    );
    let reverted = client
        .request(
            "agent/revert",
            json!({"sessionId": session, "taskCallId": "t1"}),
        )
        .await;
    assert_eq!(
        reverted["reverted"].as_array().unwrap().len(),
        1,
        "{reverted}"
    );
    assert!(!root.join("made.txt").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("mine.txt")).unwrap(),
        "parent\n"
    );
    // The run as a whole still holds both.
    let all = client
        .request(
            "agent/runChanges",
            json!({"sessionId": session, "runId": run}),
        )
        .await;
    let mut all = names(&all);
    all.sort();
    assert_eq!(all, ["made.txt", "mine.txt"]);
}

/// Writes an agent file into the daemon's project.
fn agent_file(client: &LspClient, dir: &str, name: &str, text: &str) {
    let dir = client.workspace.path().join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
}

#[tokio::test]
async fn custom_agents_come_from_the_projects_agent_files_with_their_prompt_tools_and_model() {
    let (mock, client) = two_provider_setup(vec![
        task("t1", "Review main.rs", Some("reviewer")),
        MockResponse::text("Looks fine."),
        MockResponse::text("Reviewed."),
    ])
    .await;
    // The project's own folder wins over Claude Code's for one name.
    agent_file(
        &client,
        ".agent-lsp/agents",
        "reviewer.md",
        "---\nname: reviewer\ndescription: Reviews code for bugs\ntools: Read, Grep\n\
         model: anthropic/claude-haiku-4-5\n---\nYou are a strict code reviewer.\n",
    );
    agent_file(
        &client,
        ".claude/agents",
        "reviewer.md",
        "---\nname: reviewer\ndescription: the other one\n---\nIgnored.\n",
    );
    agent_file(
        &client,
        ".claude/agents",
        "tester.md",
        "---\nname: tester\ndescription: Runs the tests\ntools: Bash\ncolor: green\n---\nRun tests.\n",
    );
    let session = client.request("agent/newSession", json!({})).await;
    let session = session["sessionId"].as_str().unwrap().to_owned();
    let (_, run, _) = prompt(
        &client,
        json!({"sessionId": session, "message": "review it"}),
    )
    .await;
    let events = client.wait_settled(&session, &run).await;
    let end = task_end(&events, "t1");
    assert_eq!(end["result"]["content"][0]["text"], "Looks fine.", "{end}");
    assert_eq!(end["result"]["details"]["agent"], "reviewer");

    let requests = mock.requests();
    let declared = requests[0].body.to_string();
    assert!(
        declared.contains("reviewer: Reviews code for bugs"),
        "{declared}"
    );
    assert!(declared.contains("tester: Runs the tests"), "{declared}");
    assert!(!declared.contains("the other one"), "{declared}");
    // The child: its prompt, its tools, its own model and that provider's key.
    let child = &requests[1];
    assert!(child.path.contains("messages"), "{}", child.path);
    assert_eq!(child.header("x-api-key"), Some("anthropic-key"));
    assert_eq!(child.body["model"], "claude-haiku-4-5");
    let text = child.body.to_string();
    assert!(text.contains("You are a strict code reviewer."), "{text}");
    let mut tools: Vec<&str> = (child.body["tools"].as_array().unwrap().iter())
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    tools.sort();
    assert_eq!(tools, ["grep", "read"]);
}
