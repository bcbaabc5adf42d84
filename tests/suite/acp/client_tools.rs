//! The client's file system and terminals: reads see its buffers, edits arrive as
//! `fs/write_text_file`, `bash` runs in its terminal (and cancel kills it).

use serde_json::{Value, json};

use super::support::{AcpEnv, steps};

#[tokio::test]
async fn reads_see_the_clients_buffer_and_edits_go_to_the_client() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"toolCalls": [{"id": "r1", "name": "read", "arguments": {"path": "a.txt"}}]},
        {"toolCalls": [{"id": "e1", "name": "edit", "arguments": {"path": "a.txt",
            "edits": [{"oldText": "unsaved", "newText": "reviewed"}]}}]},
        {"text": "done"}
    ]}))
    .await;
    env.write("a.txt", "on disk\n");
    let path = env.file("a.txt");
    let t = env
        .run(json!({
            "client": {"fs": true, "buffers": {path.clone(): "unsaved text\n"}, "permissions": ["allow_once"]},
            "steps": steps(&env, vec![json!({"op": "prompt", "text": "go", "as": "p"})]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    let read = t.tool_call("r1");
    let text = read.last().unwrap()["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("unsaved text"), "{text}");
    // The read; the question's diff; the edit after the answer (its journal, check and diff
    // after it see the same view).
    assert_eq!(
        t.0["reads"].as_array().unwrap().len(),
        3,
        "{}",
        t.0["reads"]
    );
    let writes = t.0["writes"].as_array().unwrap();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0]["path"], path);
    assert_eq!(writes[0]["content"], "reviewed text\n");
    assert_eq!(
        env.read("a.txt"),
        "on disk\n",
        "the disk is the client's business"
    );
    let done = t.tool_call("e1");
    let diff = &done.last().unwrap()["content"][0];
    assert_eq!(diff["oldText"], "unsaved text\n");
    assert_eq!(diff["newText"], "reviewed text\n");
    let note = env.mock.as_ref().unwrap().requests()[0].body.to_string();
    assert!(
        note.contains("grep, find and ls search the files on disk"),
        "{note}"
    );
}

/// Over a remote link each `fs/*` request is a round trip: an edit the client allowed costs one
/// read and one write (before, 7 reads), plus the read of the question's diff when it asks.
#[tokio::test]
async fn an_allowed_edit_costs_one_read_and_one_write() {
    let edit = |id: &str, from: &str, to: &str| {
        json!({"toolCalls": [{"id": id, "name": "edit", "arguments": {"path": "a.txt",
            "edits": [{"oldText": from, "newText": to}]}}]})
    };
    let env = AcpEnv::with_script(json!({"responses": [
        edit("e1", "one", "uno"),
        edit("e2", "two", "dos"),
        {"text": "done"}
    ]}))
    .await;
    env.write("a.txt", "one two\n");
    let path = env.file("a.txt");
    let t = env
        .run(json!({
            "client": {"fs": true, "permissions": ["allow_always"]},
            "steps": steps(&env, vec![json!({"op": "prompt", "text": "go", "as": "p"})]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    let writes = t.0["writes"].as_array().unwrap();
    assert_eq!(writes.len(), 2, "{writes:?}");
    assert_eq!(writes[1]["content"], "uno dos\n");
    // e1: the question's diff, then the edit; e2 (allowed always): the edit only.
    let reads = t.0["reads"].as_array().unwrap();
    assert_eq!(reads.len(), 3, "{reads:?}");
    assert!(reads.iter().all(|r| r["path"] == path));
    // Each call's diff after it is still right.
    let diff = &t.tool_call("e2").last().unwrap()["content"][0];
    assert_eq!(diff["oldText"], "uno two\n");
    assert_eq!(diff["newText"], "uno dos\n");
}

#[tokio::test]
async fn bash_runs_in_the_clients_terminal_and_cancel_kills_it() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"toolCalls": [{"id": "b1", "name": "bash", "arguments": {"command": "echo from-terminal; exit 3"}}]},
        {"toolCalls": [{"id": "b2", "name": "bash", "arguments": {"command": "sleep 30"}}]},
        {"text": "unused"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"terminal": true, "permissions": ["allow_once", "allow_once"]},
            "steps": steps(&env, vec![
                json!({"op": "prompt", "text": "go", "as": "p", "wait": false}),
                json!({"op": "until", "update": "tool_call_update", "count": 5}),
                json!({"op": "sleep", "ms": 200}),
                json!({"op": "cancel"}),
                json!({"op": "await", "name": "p"}),
            ]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "cancelled");
    let terminals = t.0["terminals"].as_array().unwrap();
    assert_eq!(terminals.len(), 2, "{terminals:?}");
    assert_eq!(
        terminals[0]["args"],
        json!(["-c", "echo from-terminal; exit 3"])
    );
    assert_eq!(terminals[0]["cwd"], env.project().display().to_string());
    assert!(terminals.iter().all(|t| t["released"] == true));
    assert_eq!(terminals[1]["killed"], true);
    let first = t.tool_call("b1");
    let last = first.last().unwrap();
    assert_eq!(last["status"], "failed");
    assert_eq!(last["content"][0]["type"], "terminal");
    let text = last["content"][1]["content"]["text"].as_str().unwrap();
    assert!(
        text.contains("from-terminal") && text.contains("exited with code 3"),
        "{text}"
    );
    assert_eq!(t.final_status("b2"), "failed");
}

#[tokio::test]
async fn mcp_servers_from_session_new_lend_their_tools() {
    let everything = crate::suite::mcp::npm_servers()
        .join("@modelcontextprotocol/server-everything/dist/index.js");
    let env = AcpEnv::with_script(json!({"responses": [
        {"toolCalls": [{"id": "m1", "name": "everything__echo", "arguments": {"message": "from the model"}}]},
        {"text": "echoed"}
    ]}))
    .await;
    let server = json!({"name": "everything", "command": "node",
                        "args": [everything.display().to_string()], "env": []});
    let t = env
        .run(json!({
            "client": {"permissions": ["allow_once"]},
            "steps": [
                {"op": "initialize"},
                {"op": "new", "cwd": env.project(), "mcpServers": [server]},
                {"op": "prompt", "text": "echo it", "as": "p"},
            ],
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    let asks = t.agent_requests("session/request_permission");
    assert_eq!(asks.len(), 1, "MCP tools ask");
    assert_eq!(t.final_status("m1"), "completed");
    let call = t.tool_call("m1");
    let text = call.last().unwrap()["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("from the model"), "{text}");
    let declared = env.mock.as_ref().unwrap().requests()[0].body.to_string();
    assert!(
        declared.contains("everything__echo"),
        "the model was offered the tool"
    );
}

#[tokio::test]
async fn a_projects_mcp_servers_are_asked_about_in_the_first_turn_and_the_answer_is_kept() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"toolCalls": [{"id": "e1", "name": "proj__echo", "arguments": {"text": "trusted"}}]},
        {"text": "echoed"},
        {"text": "second turn"},
        {"text": "another process"}
    ]}))
    .await;
    let entry = crate::suite::mcp::fault_entry(json!({}));
    env.write(
        ".mcp.json",
        &json!({"mcpServers": {"proj": entry}}).to_string(),
    );
    let t = env
        .run(json!({
            "client": {"permissions": ["allow_always", "allow_once"]},
            "steps": steps(&env, vec![
                json!({"op": "prompt", "text": "echo it", "as": "p"}),
                json!({"op": "prompt", "text": "again", "as": "q"}),
            ]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    let asks = t.agent_requests("session/request_permission");
    assert_eq!(
        asks.len(),
        2,
        "the project's servers, then their tool: {asks:?}"
    );
    let trust = &asks[0]["toolCall"];
    let id = trust["toolCallId"].as_str().unwrap();
    assert!(id.starts_with("mcp-trust-"), "{trust}");
    assert!(
        trust["title"].as_str().unwrap().ends_with("/.mcp.json?"),
        "{trust}"
    );
    let listing = trust["content"][0]["content"]["text"].as_str().unwrap();
    assert!(listing.contains("proj: python3"), "{listing}");
    let options: Vec<&str> = (asks[0]["options"].as_array().unwrap().iter())
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["allow_always", "reject_always"]);
    // Shown as a tool call of its own, announced before it asks.
    assert_eq!(t.tool_call(id)[0]["sessionUpdate"], "tool_call");
    assert_eq!(t.final_status(id), "completed");
    // Allowed before the turn's first request: the model is offered the server's tool at once.
    let requests = env.mock.as_ref().unwrap().requests();
    assert!(requests[0].body.to_string().contains("proj__echo"));
    assert_eq!(t.final_status("e1"), "completed");
    assert_eq!(t.stop_reason("q"), "end_turn");

    // Remembered: another process does not ask and starts the server.
    let t = env
        .run(json!({
            "client": {"permissions": []},
            "steps": steps(&env, vec![json!({"op": "prompt", "text": "later", "as": "p"})]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    assert!(t.agent_requests("session/request_permission").is_empty());
    let requests = env.mock.as_ref().unwrap().requests();
    assert!(
        requests
            .last()
            .unwrap()
            .body
            .to_string()
            .contains("proj__echo")
    );
}

#[tokio::test]
async fn a_no_to_the_projects_servers_starts_nothing_and_is_kept() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"text": "without them"},
        {"text": "still without"},
        {"text": "another process"},
        {"text": "with them"}
    ]}))
    .await;
    let entry = crate::suite::mcp::fault_entry(json!({}));
    env.write(
        ".mcp.json",
        &json!({"mcpServers": {"proj": entry}}).to_string(),
    );
    let t = env
        .run(json!({
            "client": {"permissions": ["reject_always"]},
            "steps": steps(&env, vec![
                json!({"op": "prompt", "text": "go", "as": "p"}),
                json!({"op": "prompt", "text": "again", "as": "q"}),
            ]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    assert_eq!(t.stop_reason("q"), "end_turn");
    let asks = t.agent_requests("session/request_permission");
    assert_eq!(asks.len(), 1, "asked once: {asks:?}");
    let id = asks[0]["toolCall"]["toolCallId"].as_str().unwrap();
    assert_eq!(t.final_status(id), "failed");
    for request in env.mock.as_ref().unwrap().requests() {
        assert!(
            !request.body.to_string().contains("proj__echo"),
            "a refused server's tool offered"
        );
    }
    let t = env
        .run(json!({
            "client": {"permissions": []},
            "steps": steps(&env, vec![json!({"op": "prompt", "text": "later", "as": "p"})]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    assert!(
        t.agent_requests("session/request_permission").is_empty(),
        "the no is kept"
    );
    let offered = (t.updates().into_iter())
        .filter(|u| u["sessionUpdate"] == "available_commands_update")
        .any(|u| u.to_string().contains("\"mcp-trust\""));
    assert!(offered, "/mcp-trust is offered while the servers wait");

    // The user changes their mind: /mcp-trust asks again, and the next turn has the tool.
    let t = env
        .run(json!({
            "client": {"permissions": ["allow_always"]},
            "steps": steps(&env, vec![
                json!({"op": "prompt", "text": "/mcp-trust", "as": "t"}),
                json!({"op": "prompt", "text": "now with them", "as": "p"}),
            ]),
        }))
        .await;
    assert_eq!(t.stop_reason("t"), "end_turn");
    let asks = t.agent_requests("session/request_permission");
    assert_eq!(asks.len(), 1, "{asks:?}");
    let id = asks[0]["toolCall"]["toolCallId"].as_str().unwrap();
    assert_eq!(t.final_status(id), "completed");
    assert_eq!(t.stop_reason("p"), "end_turn");
    let requests = env.mock.as_ref().unwrap().requests();
    assert!(
        requests
            .last()
            .unwrap()
            .body
            .to_string()
            .contains("proj__echo")
    );
}

#[tokio::test]
async fn a_trusted_entry_whose_cwd_changed_is_asked_about_again_naming_it() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"text": "with them"},
        {"text": "after the change"},
        {"text": "the same file"}
    ]}))
    .await;
    let project_file = |extra: Value| {
        let entry = crate::suite::mcp::fault_entry(extra);
        env.write(
            ".mcp.json",
            &json!({"mcpServers": {"proj": entry}}).to_string(),
        );
    };
    let turn = |permissions: Vec<&str>| {
        json!({
            "client": {"permissions": permissions},
            "steps": steps(&env, vec![json!({"op": "prompt", "text": "go", "as": "p"})]),
        })
    };
    project_file(json!({}));
    let t = env.run(turn(vec!["allow_always"])).await;
    assert_eq!(t.agent_requests("session/request_permission").len(), 1);

    // The entry gains a cwd: asked again, the change named in the title, text and input.
    let elsewhere = env.home.path().display().to_string();
    project_file(json!({"cwd": elsewhere}));
    let t = env.run(turn(vec!["reject_always"])).await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    let asks = t.agent_requests("session/request_permission");
    assert_eq!(asks.len(), 1, "{asks:?}");
    let call = &asks[0]["toolCall"];
    let title = call["title"].as_str().unwrap();
    assert!(
        title.ends_with("Changed since your last answer: proj: cwd added"),
        "{call}"
    );
    let text = call["content"][0]["content"]["text"].as_str().unwrap();
    assert!(
        text.contains("Changed since your last answer:\n  proj: cwd added"),
        "{text}"
    );
    assert_eq!(
        call["rawInput"]["changes"],
        json!(["proj: cwd added"]),
        "{call}"
    );
    let last = env
        .mock
        .as_ref()
        .unwrap()
        .requests()
        .last()
        .unwrap()
        .body
        .to_string();
    assert!(!last.contains("proj__echo"), "the changed server started");

    // The same file again: the answer holds, nothing is asked.
    let t = env.run(turn(vec![])).await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    assert!(t.agent_requests("session/request_permission").is_empty());
}
