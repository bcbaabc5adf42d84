//! Modes and config options: each mode's effect on tool calls, switching model and thought
//! level live.

use serde_json::json;

use super::support::{AcpEnv, steps};

fn call(id: &str, name: &str, args: serde_json::Value) -> serde_json::Value {
    json!({"toolCalls": [{"id": id, "name": name, "arguments": args}]})
}

fn set_mode(mode: &str) -> serde_json::Value {
    json!({"op": "request", "method": "session/set_mode", "as": mode,
           "params": {"sessionId": "$session", "modeId": mode}})
}

#[tokio::test]
async fn plan_refuses_changes_and_tells_the_model() {
    let env = AcpEnv::with_script(json!({"responses": [
        call("r1", "read", json!({"path": "a.txt"})),
        call("w1", "write", json!({"path": "a.txt", "content": "changed"})),
        {"text": "Here is the plan."}
    ]}))
    .await;
    env.write("a.txt", "original");
    let t = env
        .run(json!({"steps": steps(&env, vec![
            set_mode("plan"),
            json!({"op": "prompt", "text": "plan it", "as": "p"}),
        ])}))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    let mode = (t.updates().into_iter())
        .find(|u| u["sessionUpdate"] == "current_mode_update")
        .unwrap();
    assert_eq!(mode["currentModeId"], "plan");
    assert!(t.agent_requests("session/request_permission").is_empty());
    assert_eq!(t.final_status("r1"), "completed");
    assert_eq!(t.final_status("w1"), "failed");
    let refused = t.tool_call("w1");
    let text = refused.last().unwrap()["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("plan mode"), "{text}");
    assert_eq!(env.read("a.txt"), "original");
    let first = &env.mock.as_ref().unwrap().requests()[0].body;
    assert!(
        first.to_string().contains("the session is in plan mode"),
        "{first}"
    );
}

#[tokio::test]
async fn accept_edits_runs_edits_but_asks_for_commands_and_bypass_asks_nothing() {
    let env = AcpEnv::with_script(json!({"responses": [
        call("w1", "write", json!({"path": "a.txt", "content": "A"})),
        call("b1", "bash", json!({"command": "echo one"})),
        {"text": "first"},
        call("b2", "bash", json!({"command": "echo two"})),
        {"text": "second"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"permissions": ["allow_once"]},
            "steps": steps(&env, vec![
                set_mode("acceptEdits"),
                json!({"op": "prompt", "text": "edit", "as": "p1"}),
                set_mode("bypassPermissions"),
                json!({"op": "prompt", "text": "run", "as": "p2"}),
            ]),
        }))
        .await;
    let asked: Vec<_> = (t.agent_requests("session/request_permission").iter())
        .map(|p| p["toolCall"]["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(asked, ["b1"]);
    for id in ["w1", "b1", "b2"] {
        assert_eq!(t.final_status(id), "completed", "{id}");
    }
    assert_eq!(env.read("a.txt"), "A");
}

#[tokio::test]
async fn model_and_thought_level_switch_live_with_config_option_updates() {
    let env = AcpEnv::with_script(json!({"responses": [{"text": "one"}, {"text": "two"}]})).await;
    let t = env
        .run(json!({"steps": steps(&env, vec![
            json!({"op": "prompt", "text": "first", "as": "p1"}),
            json!({"op": "request", "method": "session/set_config_option", "as": "model",
                   "params": {"sessionId": "$session", "configId": "model", "value": "openai/o4-mini"}}),
            json!({"op": "request", "method": "session/set_config_option", "as": "level",
                   "params": {"sessionId": "$session", "configId": "thought_level", "value": "high"}}),
            json!({"op": "request", "method": "session/set_config_option", "as": "bad",
                   "params": {"sessionId": "$session", "configId": "thought_level", "value": "loud"}}),
            json!({"op": "prompt", "text": "second", "as": "p2"}),
        ])}))
        .await;
    let new = t.result("new");
    let options = new["configOptions"].as_array().unwrap();
    assert_eq!(options[0]["id"], "model");
    assert_eq!(options[0]["currentValue"], "openai/gpt-4.1");
    assert_eq!(options[1]["id"], "thought_level");
    assert_eq!(options[1]["currentValue"], "off");
    assert_eq!(
        t.result("model")["configOptions"][0]["currentValue"],
        "openai/o4-mini"
    );
    assert_eq!(
        t.result("level")["configOptions"][1]["currentValue"],
        "high"
    );
    assert_eq!(t.error("bad")["code"], -32602);
    let pushed = (t.updates().into_iter())
        .filter(|u| u["sessionUpdate"] == "config_option_update")
        .count();
    assert_eq!(pushed, 2);
    let requests = env.mock.as_ref().unwrap().requests();
    assert_eq!(requests[0].body["model"], "gpt-4.1");
    // o4-mini is an OpenAI reasoning model: it speaks the Responses API.
    assert_eq!(requests[1].path, "/v1/responses");
    assert_eq!(requests[1].body["model"], "o4-mini");
    assert_eq!(requests[1].body["reasoning"]["effort"], "high");
}

/// bypassPermissions runs commands unasked, so in the sandbox (issue 19): a write outside the
/// project is refused and says so; the escalation asks although the mode asks nothing, and
/// the approved rerun runs outside the sandbox.
#[tokio::test]
async fn bypass_permissions_runs_commands_sandboxed_and_an_escalation_still_asks() {
    let outside = crate::suite::support::outside_tmp();
    let target = outside.path().join("out.txt");
    let command = format!("echo x > {}", target.display());
    let env = AcpEnv::with_script(json!({"responses": [
        call("b1", "bash", json!({"command": command})),
        call("b2", "bash", json!({"command": command, "sandbox": false, "justification": "needed"})),
        {"text": "done"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"permissions": ["allow_always"]},
            "steps": steps(&env, vec![
                set_mode("bypassPermissions"),
                json!({"op": "prompt", "text": "run", "as": "p"}),
            ]),
        }))
        .await;
    assert_eq!(t.final_status("b1"), "failed");
    let refused = t.tool_call("b1");
    let text = refused.last().unwrap()["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("the sandbox refused"), "{text}");
    let asked = t.agent_requests("session/request_permission");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "b2");
    let title = asked[0]["toolCall"]["title"].as_str().unwrap();
    assert!(
        title.starts_with("Run outside the sandbox: echo x"),
        "{title}"
    );
    assert_eq!(t.final_status("b2"), "completed");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
}

/// A client with terminals in bypassPermissions: its terminal is outside agent-lsp, so a
/// command the sandbox confines runs here, sandboxed (no `terminal/create`; the write outside
/// is refused), and only the approved escalation goes to the client's terminal.
#[tokio::test]
async fn with_client_terminals_a_confined_command_runs_here_sandboxed() {
    let outside = crate::suite::support::outside_tmp();
    let target = outside.path().join("out.txt");
    let command = format!("echo x > {}", target.display());
    let env = AcpEnv::with_script(json!({"responses": [
        call("b1", "bash", json!({"command": command})),
        call("b2", "bash", json!({"command": command, "sandbox": false, "justification": "needed"})),
        {"text": "done"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"terminal": true, "permissions": ["allow_once"]},
            "steps": steps(&env, vec![
                set_mode("bypassPermissions"),
                json!({"op": "prompt", "text": "run", "as": "p"}),
            ]),
        }))
        .await;
    assert_eq!(t.final_status("b1"), "failed");
    let refused = t.tool_call("b1");
    let text = refused.last().unwrap()["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("the sandbox refused"), "{text}");
    let terminals = t.0["terminals"].as_array().unwrap();
    assert_eq!(terminals.len(), 1, "only the escalation: {terminals:?}");
    assert_eq!(terminals[0]["args"], json!(["-c", command]));
    assert_eq!(t.final_status("b2"), "completed");
    // The test client's terminal runs the command for real.
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
}
