//! Stored sessions over ACP: load (with replay), resume, list, close; follow-ups and steering.

use serde_json::json;

use super::support::{AcpEnv, steps};

#[tokio::test]
async fn load_replays_what_the_live_session_showed_and_list_resume_close_work() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"thinking": "checking", "toolCalls": [{"id": "r1", "name": "read", "arguments": {"path": "a.txt"}}]},
        {"text": "It says hi."},
        {"text": "resumed answer"}
    ]}))
    .await;
    env.write("a.txt", "hi\n");
    let live = env
        .run(json!({"steps": steps(&env, vec![
            json!({"op": "prompt", "text": "what does a.txt say?", "as": "p"}),
        ])}))
        .await;
    let id = live.result("new")["sessionId"].as_str().unwrap().to_owned();
    let info = (live.updates().into_iter())
        .find(|u| u["sessionUpdate"] == "session_info_update")
        .expect("the title is announced");
    assert_eq!(info["title"], "what does a.txt say?");
    let cwd = env.project();
    let later = env
        .run(json!({"steps": [
            {"op": "initialize"},
            {"op": "request", "method": "session/list", "params": {}, "as": "list"},
            {"op": "load", "sessionId": id, "cwd": cwd, "as": "load"},
            {"op": "request", "method": "session/close", "params": {"sessionId": id}, "as": "close"},
            {"op": "resume", "sessionId": id, "cwd": cwd, "as": "resume"},
            {"op": "prompt", "text": "and now?", "as": "p2"},
            {"op": "request", "method": "session/set_mode", "params": {"sessionId": "nope", "modeId": "plan"}, "as": "missing"},
        ]}))
        .await;
    let listed = &later.result("list")["sessions"];
    assert_eq!(listed[0]["sessionId"], id);
    assert_eq!(listed[0]["title"], "what does a.txt say?");
    assert_eq!(listed[0]["cwd"], cwd.display().to_string());
    // The replay: what the live session showed, before the load's answer (the ordering check).
    let replayed = later.updates();
    let user = replayed
        .iter()
        .find(|u| u["sessionUpdate"] == "user_message_chunk")
        .unwrap();
    assert_eq!(user["content"]["text"], "what does a.txt say?");
    assert_eq!(
        later.chunks("agent_thought_chunk"),
        live.chunks("agent_thought_chunk")
    );
    assert!(
        later.agent_text().starts_with(&live.agent_text()),
        "{}",
        later.agent_text()
    );
    assert_eq!(later.final_status("r1"), "completed");
    let shown = |t: &super::support::Transcript| {
        t.tool_call("r1").last().unwrap()["content"][0]["content"]["text"].clone()
    };
    assert_eq!(shown(&later), shown(&live));
    assert_eq!(
        later.tool_call("r1")[0]["title"],
        live.tool_call("r1")[0]["title"]
    );
    // Resume: no replay (the updates after the load are only the new prompt's).
    assert_eq!(later.stop_reason("p2"), "end_turn");
    assert!(later.agent_text().ends_with("resumed answer"));
    let history = &env.mock.as_ref().unwrap().requests()[2].body;
    assert!(
        history.to_string().contains("It says hi."),
        "the resumed session has its history"
    );
    assert_eq!(later.error("missing")["code"], -32002);
}

#[tokio::test]
async fn a_prompt_while_running_is_a_follow_up_and_steer_reaches_the_run() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"text": "first answer is long enough to wait for", "chunkSize": 2, "delayMs": 10},
        {"text": "second answer"},
        {"toolCalls": [{"id": "b1", "name": "ls", "arguments": {}}], "delayMs": 300},
        {"text": "steered answer"}
    ]}))
    .await;
    let t = env
        .run(json!({"steps": steps(&env, vec![
            json!({"op": "prompt", "text": "one", "as": "p1", "wait": false}),
            json!({"op": "until", "update": "agent_message_chunk"}),
            json!({"op": "prompt", "text": "two", "as": "p2", "wait": false}),
            json!({"op": "await", "name": "p1"}),
            json!({"op": "await", "name": "p2"}),
            json!({"op": "prompt", "text": "three", "as": "p3", "wait": false}),
            json!({"op": "sleep", "ms": 100}),
            json!({"op": "request", "method": "_agent-lsp/steer", "as": "steer",
                   "params": {"sessionId": "$session", "prompt": [{"type": "text", "text": "steer!"}]}}),
            json!({"op": "await", "name": "p3"}),
            json!({"op": "request", "method": "_agent-lsp/steer", "as": "idle",
                   "params": {"sessionId": "$session", "prompt": [{"type": "text", "text": "late"}]}}),
        ])}))
        .await;
    assert_eq!(t.stop_reason("p1"), "end_turn");
    assert_eq!(t.stop_reason("p2"), "end_turn");
    // p1 was answered when the run took p2: before the second answer's first chunk.
    let incoming = t.incoming();
    let p1_at = incoming
        .iter()
        .position(|m| m["result"]["stopReason"].is_string())
        .unwrap();
    let second_at = (incoming.iter())
        .position(|m| m["params"]["update"]["content"]["text"] == "second answer")
        .unwrap();
    assert!(
        p1_at < second_at,
        "p1 answered at {p1_at}, the follow-up streamed at {second_at}"
    );
    let requests = env.mock.as_ref().unwrap().requests();
    assert!(requests[1].body.to_string().contains("two"));
    assert_eq!(t.result("steer"), &json!({}));
    assert_eq!(t.stop_reason("p3"), "end_turn");
    assert!(
        requests[3].body.to_string().contains("steer!"),
        "the steer reached the run"
    );
    assert_eq!(t.error("idle")["code"], -32602);
}

#[tokio::test]
async fn agent_lsp_revert_takes_back_the_last_turns_files() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"toolCalls": [{"id": "w1", "name": "write", "arguments": {"path": "a.txt", "content": "agent\n"}}]},
        {"toolCalls": [{"id": "w2", "name": "write", "arguments": {"path": "new.txt", "content": "new\n"}}]},
        {"text": "done"}
    ]}))
    .await;
    env.write("a.txt", "mine\n");
    let t = env
        .run(json!({
            "client": {"permissions": ["allow_once", "allow_once"]},
            "steps": steps(&env, vec![
                json!({"op": "prompt", "text": "go", "as": "p"}),
                json!({"op": "request", "method": "_agent-lsp/revert", "as": "rev",
                       "params": {"sessionId": "$session"}}),
            ]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    let reverted = t.result("rev");
    assert_eq!(
        reverted["reverted"].as_array().unwrap().len(),
        2,
        "{reverted}"
    );
    assert_eq!(env.read("a.txt"), "mine\n");
    assert!(!env.project().join("new.txt").exists());
}

/// `todo_write` reaches the client as ACP's `plan` update (every entry, replaced whole), its
/// call as a `think` tool call, and `session/load` shows the plan again after the replay.
#[tokio::test]
async fn the_plan_is_a_plan_update_and_a_loaded_session_shows_it_again() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"toolCalls": [{"id": "t1", "name": "todo_write", "arguments": {"todos": [
            {"content": "Read the code", "status": "completed"},
            {"content": "Write the fix", "status": "in_progress"},
            {"content": "Run the tests", "status": "pending"}
        ]}}]},
        {"text": "working on it"}
    ]}))
    .await;
    let live = env
        .run(json!({"steps": steps(&env, vec![
            json!({"op": "prompt", "text": "fix it", "as": "p"}),
        ])}))
        .await;
    let id = live.result("new")["sessionId"].as_str().unwrap().to_owned();
    let entries = json!([
        {"content": "Read the code", "priority": "medium", "status": "completed"},
        {"content": "Write the fix", "priority": "medium", "status": "in_progress"},
        {"content": "Run the tests", "priority": "medium", "status": "pending"}
    ]);
    let plans = |t: &super::support::Transcript| -> Vec<serde_json::Value> {
        (t.updates().into_iter())
            .filter(|u| u["sessionUpdate"] == "plan")
            .map(|u| u["entries"].clone())
            .collect()
    };
    assert_eq!(plans(&live), vec![entries.clone()]);
    assert_eq!(live.tool_call("t1")[0]["kind"], "think");
    assert_eq!(live.tool_call("t1")[0]["title"], "Update the plan");
    assert_eq!(live.final_status("t1"), "completed");
    assert_eq!(live.stop_reason("p"), "end_turn");

    let later = env
        .run(json!({"steps": [
            {"op": "initialize"},
            {"op": "load", "sessionId": id, "cwd": env.project(), "as": "load"},
        ]}))
        .await;
    let replayed = later.updates();
    assert_eq!(plans(&later), vec![entries]);
    let at = |kind: &str| replayed.iter().rposition(|u| u["sessionUpdate"] == kind);
    assert!(
        at("plan") > at("agent_message_chunk"),
        "the plan follows the replayed messages"
    );
}
