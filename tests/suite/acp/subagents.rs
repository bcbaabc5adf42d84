//! Subagents over ACP: the `task` call shows its child's steps as its content, and the child's
//! calls ask through `session/request_permission`.

use serde_json::json;

use super::support::{AcpEnv, steps};

fn call(id: &str, name: &str, args: serde_json::Value) -> serde_json::Value {
    json!({"toolCalls": [{"id": id, "name": name, "arguments": args}]})
}

#[tokio::test]
async fn a_task_call_shows_its_childs_steps_and_ends_with_the_answer_below_them() {
    let env = AcpEnv::with_script(json!({"responses": [
        call("t1", "task", json!({"description": "Find the answer", "prompt": "What is in notes.txt?", "agent": "explore"})),
        call("c1", "read", json!({"path": "notes.txt"})),
        {"text": "notes.txt says 42."},
        {"text": "It is 42."}
    ]}))
    .await;
    env.write("notes.txt", "42\n");
    let t = env
        .run(json!({"steps": steps(&env, vec![
            json!({"op": "prompt", "text": "what is the answer?", "as": "p"}),
        ])}))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    let updates = t.tool_call("t1");
    assert_eq!(updates[0]["title"], "Task (explore): Find the answer");
    let texts = |u: &serde_json::Value| -> Vec<String> {
        (u["content"].as_array().into_iter().flatten())
            .filter_map(|c| c["content"]["text"].as_str().map(str::to_owned))
            .collect()
    };
    // A step appears while the child works…
    let first_step = (updates.iter())
        .find(|u| u["content"].is_array() && u["status"].is_null())
        .expect("a step update");
    assert_eq!(texts(first_step), ["Read notes.txt"]);
    // …and the final update keeps the steps above the answer.
    assert_eq!(t.final_status("t1"), "completed");
    let last = updates.last().unwrap();
    assert_eq!(texts(last), ["Read notes.txt", "notes.txt says 42."]);
    // The child's own calls are no tool calls of the session's.
    assert!(t.tool_call("c1").is_empty());
    assert!(t.agent_text().ends_with("It is 42."));
}

#[tokio::test]
async fn a_childs_call_asks_through_session_request_permission() {
    let env = AcpEnv::with_script(json!({"responses": [
        call("t1", "task", json!({"description": "Make a file", "prompt": "Write a.txt"})),
        call("w1", "write", json!({"path": "a.txt", "content": "A"})),
        {"text": "Could not write a.txt."},
        {"text": "The child could not write."}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"permissions": ["reject_once"]},
            "steps": steps(&env, vec![json!({"op": "prompt", "text": "go", "as": "p"})]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    let asked: Vec<_> = (t.agent_requests("session/request_permission").iter())
        .map(|p| p["toolCall"]["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(asked, ["w1"], "only the child's write asks");
    assert!(!env.project().join("a.txt").exists());
    let updates = t.tool_call("t1");
    let last = updates.last().unwrap();
    let first = &last["content"][0]["content"]["text"];
    assert_eq!(first, "Write a.txt (failed)");
}
