//! `agent-lsp run` with permission rules (protocol.md §3.22): allow rules let a command run
//! under `--approve read-only`, but only when each of its simple commands is allowed; deny
//! rules refuse even under `--approve all`.

use agent_lsp::testing::MockResponse;
use serde_json::json;

use super::super::support::cli_run::{CliEnv, request_texts, stderr, stdout};
use super::{MODEL, mock};

fn bash(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(id, "bash", json!({ "command": command }))
}

fn write_settings(env: &CliEnv, value: serde_json::Value) {
    let path = env.home.path().join("config/agent-lsp/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, value.to_string()).unwrap();
}

#[tokio::test]
async fn a_compound_command_is_refused_unless_each_command_is_allowed() {
    let mock = mock(vec![
        bash("c1", "echo safe > /dev/null && echo safe ran"),
        bash("c2", "echo safe && touch pushed"),
        bash("c3", "echo safe $(touch substituted)"),
        bash("c4", "echo safe > written"),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    write_settings(
        &env,
        json!({"permissions": {"allow": ["Bash(echo safe:*)"]}}),
    );
    let out = env
        .run(&["run", "--sandbox", "off", "--model", MODEL, "go"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("[bash echo safe > /dev/null && echo safe ran] ok"),
        "{text}"
    );
    for refused in [
        "echo safe && touch pushed",
        "echo safe $(touch substituted)",
        "echo safe > written",
    ] {
        assert!(
            text.contains(&format!("[bash {refused}] refused")),
            "{refused}: {text}"
        );
    }
    for file in ["pushed", "substituted", "written"] {
        assert!(!env.project().join(file).exists(), "{file} must not exist");
    }
    let last = request_texts(&mock.requests()[4].body);
    let results: Vec<&str> = (last.iter())
        .filter(|(role, _)| role == "tool")
        .map(|(_, t)| t.as_str())
        .collect();
    assert!(results[0].contains("safe ran"), "{results:?}");
    assert!(results[1].contains("--approve all"), "{results:?}");
}

#[tokio::test]
async fn deny_and_ask_rules_hold_under_approve_all() {
    let mock = mock(vec![
        bash("c1", "git push --force"),
        bash("c2", "echo asked"),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    write_settings(
        &env,
        json!({"permissions": {"deny": ["Bash(git push:*)"], "ask": ["Bash(echo:*)"]}}),
    );
    let out = env
        .run(&[
            "run",
            "--approve",
            "all",
            "--sandbox",
            "off",
            "--model",
            MODEL,
            "go",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let last = request_texts(&mock.requests()[2].body);
    let results: Vec<&str> = (last.iter())
        .filter(|(role, _)| role == "tool")
        .map(|(_, t)| t.as_str())
        .collect();
    assert!(
        results[0].contains("the permission rule `Bash(git push:*)`")
            && results[0].contains("settings.json"),
        "{results:?}"
    );
    assert!(
        results[1].contains("no one to ask")
            && results[1].contains("(The permission rule `Bash(echo:*)`"),
        "{results:?}"
    );
}

#[tokio::test]
async fn untrusted_project_allow_rules_are_named_and_left_off() {
    let mock = mock(vec![bash("c1", "echo project"), MockResponse::text("done")]).await;
    let env = CliEnv::with_mock(&mock);
    let project_file = env.project().join(".agent-lsp/settings.json");
    std::fs::create_dir_all(project_file.parent().unwrap()).unwrap();
    std::fs::write(
        &project_file,
        json!({"permissions": {"allow": ["Bash(echo project:*)"]}}).to_string(),
    )
    .unwrap();
    let out = env
        .run(&["run", "--sandbox", "off", "--model", MODEL, "go"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(
        stdout(&out).contains("[bash echo project] refused"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("the project's settings allow Bash(echo project:*) without asking, but you have not trusted them yet"),
        "{}",
        stderr(&out)
    );
}
