//! Permission rules in ACP sessions (protocol.md §3.22, §9.4): the project's allow rules asked
//! about as a tool call of their own, and one "always" option per scope, each naming its rule.

use serde_json::json;

use super::support::{AcpEnv, steps};

fn bash(id: &str, command: &str) -> serde_json::Value {
    json!({"toolCalls": [{"id": id, "name": "bash", "arguments": {"command": command}}]})
}

#[tokio::test]
async fn trusted_project_rules_apply_and_always_for_this_project_is_saved() {
    let env = AcpEnv::with_script(json!({"responses": [
        bash("b1", "echo project one"),
        bash("b2", "echo build x"),
        bash("b3", "echo build y"),
        {"text": "done"}
    ]}))
    .await;
    let settings = env.project().join(".agent-lsp/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        json!({"permissions": {"allow": ["Bash(echo project:*)"]}}).to_string(),
    )
    .unwrap();
    let t = env
        .run(json!({
            "client": {"permissions": ["allow_always", "allow_always_project"]},
            "steps": steps(&env, vec![json!({"op": "prompt", "text": "go", "as": "p"})]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    let asked = t.agent_requests("session/request_permission");
    assert_eq!(asked.len(), 2, "{asked:?}");
    let trust = &asked[0]["toolCall"];
    let trust_id = trust["toolCallId"].as_str().unwrap();
    assert!(trust_id.starts_with("rules-trust-"), "{trust}");
    assert_eq!(
        trust["rawInput"]["rules"],
        json!([{"rule": "Bash(echo project:*)", "source": "project",
                "file": settings.display().to_string()}])
    );
    assert_eq!(t.final_status(trust_id), "completed");
    assert_eq!(asked[1]["toolCall"]["toolCallId"], "b2");
    let options: Vec<(&str, &str, &str)> = (asked[1]["options"].as_array().unwrap().iter())
        .map(|o| {
            (
                o["optionId"].as_str().unwrap(),
                o["name"].as_str().unwrap(),
                o["kind"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        options,
        [
            ("allow_once", "Allow", "allow_once"),
            (
                "allow_always",
                "Always allow in this session: Bash(echo build:*)",
                "allow_always"
            ),
            (
                "allow_always_project",
                "Always allow in this project: Bash(echo build:*)",
                "allow_always"
            ),
            (
                "allow_always_user",
                "Always allow, in every project: Bash(echo build:*)",
                "allow_always"
            ),
            ("reject_once", "Reject", "reject_once"),
            (
                "reject_always",
                "Always reject in this session: Bash(echo build:*)",
                "reject_always"
            ),
        ]
    );
    for id in ["b1", "b2", "b3"] {
        assert_eq!(t.final_status(id), "completed", "{id}");
    }
    let saved: serde_json::Value = serde_json::from_slice(
        &std::fs::read(env.project().join(".agent-lsp/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        saved,
        json!({"permissions": {"allow": ["Bash(echo build:*)"]}})
    );
}
