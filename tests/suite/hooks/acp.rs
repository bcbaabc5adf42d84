//! Hooks in ACP sessions: the project's hooks asked about in the first turn, a blocking
//! `PreToolUse` hook told as a message (its reason reaching the model), and a prompt refused by
//! the now trusted project's `UserPromptSubmit` hook answered with an error.

use serde_json::json;

use super::{group, hook, project_hooks, user_hooks};
use crate::suite::acp::support::{AcpEnv, steps};
use crate::suite::support::cli_run::request_texts;

#[tokio::test]
async fn hooks_decide_in_acp_turns_and_the_project_is_asked_first() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"toolCalls": [{"id": "b1", "name": "bash", "arguments": {"command": "touch x.txt"}}]},
        {"text": "done"}
    ]}))
    .await;
    user_hooks(
        env.home.path(),
        json!({"PreToolUse": [group(Some("Bash"), &[hook("echo 'not in ACP either' >&2; exit 2")])]}),
    );
    project_hooks(
        &env.project(),
        json!({"UserPromptSubmit": [group(None, &[hook(
            r#"grep -q '"prompt":"again"' && { echo 'project says no' >&2; exit 2; }; exit 0"#
        )])]}),
    );
    let t = env
        .run(json!({
            "client": {"permissions": ["allow_always"]},
            "steps": steps(&env, vec![
                json!({"op": "prompt", "text": "go", "as": "p1"}),
                json!({"op": "prompt", "text": "again", "as": "p2"}),
            ]),
        }))
        .await;
    assert_eq!(t.stop_reason("p1"), "end_turn");
    assert!(!env.project().join("x.txt").exists());

    let asked = t.agent_requests("session/request_permission");
    assert_eq!(asked.len(), 1, "only the trust question is asked");
    let call = &asked[0]["toolCall"];
    assert!(
        call["toolCallId"]
            .as_str()
            .unwrap()
            .starts_with("hooks-trust-"),
        "{call}"
    );
    let project = env.project().display().to_string();
    assert_eq!(
        call["title"],
        format!("Run the hooks of {project}/.agent-lsp?")
    );
    assert_eq!(call["rawInput"]["hooks"][0]["event"], "UserPromptSubmit");

    let mock = env.mock.as_ref().unwrap();
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        2,
        "the refused prompt never reached the model"
    );
    let texts = request_texts(&requests[1].body);
    assert_eq!(
        texts.last().unwrap().1,
        "Blocked by a PreToolUse hook: not in ACP either"
    );

    let hooks: Vec<&serde_json::Value> = (t.updates().into_iter())
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["_meta"]["agent-lsp"].get("hook"))
        .collect();
    let shown: Vec<(&str, &str)> = (hooks.iter())
        .map(|h| (h["event"].as_str().unwrap(), h["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        shown,
        [("PreToolUse", "block"), ("UserPromptSubmit", "block")]
    );
    assert_eq!(hooks[0]["toolCallId"], "b1");
    assert!(
        t.agent_text().contains(
            "[PreToolUse hook `echo 'not in ACP either' >&2; exit 2` blocked: not in ACP either]"
        ),
        "{}",
        t.agent_text()
    );
    let error = t.error("p2");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("The prompt was blocked by a UserPromptSubmit hook: project says no"),
        "{error}"
    );
}
