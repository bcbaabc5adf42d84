//! `session/request_permission`: each option kind on the approval memory, and cancel while a
//! request waits.

use serde_json::json;

use super::support::{AcpEnv, steps};

fn call(id: &str, name: &str, args: serde_json::Value) -> serde_json::Value {
    json!({"toolCalls": [{"id": id, "name": name, "arguments": args}]})
}

#[tokio::test]
async fn each_option_kind_decides_the_call_and_always_is_remembered() {
    let env = AcpEnv::with_script(json!({"responses": [
        call("w1", "write", json!({"path": "a.txt", "content": "A"})),
        call("w2", "write", json!({"path": "b.txt", "content": "B"})),
        call("w3", "write", json!({"path": "c.txt", "content": "C"})),
        call("b1", "bash", json!({"command": "echo hi"})),
        call("b2", "bash", json!({"command": "echo hi"})),
        {"text": "done"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"permissions": ["reject_once", "allow_always", "reject_always"]},
            "steps": steps(&env, vec![json!({"op": "prompt", "text": "go", "as": "p"})]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    let asked: Vec<_> = (t.agent_requests("session/request_permission").iter())
        .map(|p| p["toolCall"]["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        asked,
        ["w1", "w2", "b1"],
        "always answers are not asked again"
    );
    assert_eq!(t.final_status("w1"), "failed");
    assert_eq!(t.final_status("w2"), "completed");
    assert_eq!(t.final_status("w3"), "completed");
    assert_eq!(t.final_status("b1"), "failed");
    assert_eq!(t.final_status("b2"), "failed");
    assert!(!env.project().join("a.txt").exists());
    assert_eq!(env.read("b.txt"), "B");
    assert_eq!(env.read("c.txt"), "C");
    // The new file's diff has no old text.
    let w2 = t.tool_call("w2");
    let diff = &w2.last().unwrap()["content"][0];
    assert_eq!(diff["type"], "diff");
    assert!(diff["oldText"].is_null(), "{diff}");
    assert_eq!(diff["newText"], "B");
    let rejected = t.tool_call("b2");
    let text = rejected.last().unwrap()["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("rejected for this session"), "{text}");
    // The request says what approving the command means: the default setting runs a command
    // approved by hand with the user's rights.
    let b1 = &t.agent_requests("session/request_permission")[2]["toolCall"];
    let note = b1["content"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        note,
        "Once approved, this command runs outside the sandbox, with your full rights."
    );
}

#[tokio::test]
async fn cancel_during_a_permission_request_answers_cancelled_and_runs_nothing() {
    let env = AcpEnv::with_script(json!({"responses": [
        call("w1", "write", json!({"path": "a.txt", "content": "A"})),
        {"text": "next turn"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"permissions": ["cancel"]},
            "steps": steps(&env, vec![
                json!({"op": "prompt", "text": "go", "as": "p1"}),
                json!({"op": "prompt", "text": "again", "as": "p2"}),
            ]),
        }))
        .await;
    assert_eq!(t.stop_reason("p1"), "cancelled");
    assert_eq!(t.final_status("w1"), "failed");
    assert!(!env.project().join("a.txt").exists());
    assert_eq!(t.stop_reason("p2"), "end_turn");
    assert_eq!(t.agent_text(), "next turn");
}
