//! `agent-lsp run` with project instructions and slash commands: context files (`-v` lists them,
//! `--no-context-files` leaves them out), templates from `.claude/commands/`, `/model` switching
//! the session's model for the next run, `/compact` on a session too small to compact.

use std::path::Path;

use agent_lsp::testing::MockResponse;

use serde_json::json;

use super::super::support::cli_run::{CliEnv, json_lines, request_texts, stderr, stdout};
use super::{MODEL, mock};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn system_text(body: &serde_json::Value) -> String {
    let texts = request_texts(body);
    texts.into_iter().find(|(r, _)| r == "system").unwrap().1
}

#[tokio::test]
async fn run_v_lists_the_context_files_and_no_context_files_leaves_them_out() {
    let mock = mock(vec![MockResponse::text("one"), MockResponse::text("two")]).await;
    let env = CliEnv::with_mock(&mock);
    let global = env.home.path().join("config/agent-lsp/AGENTS.md");
    write(&global, "Global: be brief.");
    let project = env.project().join("AGENTS.md");
    write(&project, "Project: use tabs.");

    let out = env.run(&["run", "-v", "--model", MODEL, "hi"]).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let listed: Vec<String> = (stderr(&out).lines())
        .filter_map(|l| {
            l.strip_prefix("agent-lsp: context file ")
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(
        listed,
        [global.display().to_string(), project.display().to_string()]
    );
    let prompt = system_text(&mock.requests()[0].body);
    let (g, p) = (
        prompt.find("Global: be brief.").unwrap(),
        prompt.find("Project: use tabs.").unwrap(),
    );
    assert!(g < p, "{prompt}");

    let out = env
        .run(&["run", "-v", "--no-context-files", "--model", MODEL, "hi"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(!stderr(&out).contains("context file"), "{}", stderr(&out));
    let prompt = system_text(&mock.requests()[1].body);
    assert!(
        !prompt.contains("be brief") && !prompt.contains("use tabs"),
        "{prompt}"
    );
}

#[tokio::test]
async fn run_expands_templates_and_slash_model_switches_the_session() {
    let mock = mock(vec![
        MockResponse::text("hello"),
        MockResponse::text("claude"),
    ])
    .await;
    let mut env = CliEnv::with_mock(&mock);
    env.set("ANTHROPIC_BASE_URL", &mock.anthropic_base_url());
    env.set("ANTHROPIC_API_KEY", "anthropic-key");
    write(
        &env.project().join(".claude/commands/greet.md"),
        "---\ndescription: Greet two people\n---\nSay hello to $1 and $2.",
    );
    let out = env
        .run(&["run", "--model", MODEL, "/greet", "Ann", "Bob"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let texts = request_texts(&mock.requests()[0].body);
    assert_eq!(
        texts.last().unwrap(),
        &("user".to_string(), "Say hello to Ann and Bob.".to_string())
    );

    let out = env
        .run(&["run", "-c", "/model", "anthropic/claude-sonnet-4-5"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        "model: anthropic/claude-sonnet-4-5 (thinking off)"
    );
    assert_eq!(mock.requests().len(), 1, "a built-in never reaches a model");
    let out = env.run(&["run", "-c", "/model"]).await;
    assert_eq!(
        stdout(&out).trim(),
        "model: anthropic/claude-sonnet-4-5 (thinking off)",
        "the switch was recorded in the session"
    );

    let out = env.run(&["run", "--json", "-c", "/model"]).await;
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "{}", stdout(&out));
    assert_eq!(
        (
            &lines[0]["type"],
            &lines[0]["command"],
            &lines[0]["model"]["id"]
        ),
        (
            &json!("command"),
            &json!("model"),
            &json!("claude-sonnet-4-5")
        )
    );
    assert_eq!(lines[0]["thinkingLevel"], "off");

    let out = env.run(&["run", "-c", "and", "now?"]).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let requests = mock.requests();
    assert_eq!(requests[1].path, "/v1/messages");
    assert_eq!(requests[1].body["model"], "claude-sonnet-4-5");

    // Two exchanges are too small for the default keepRecentTokens: pi's answer, exit 1.
    let out = env.run(&["run", "-c", "/compact"]).await;
    assert_eq!(out.status.code(), Some(1), "stdout: {}", stdout(&out));
    assert!(
        stderr(&out).contains("Nothing to compact"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.requests().len(), 2, "no summary was requested");

    // `/mcp-trust` asks in an editor; `run` says which flag does it here.
    let out = env.run(&["run", "-c", "/mcp-trust"]).await;
    assert_eq!(out.status.code(), Some(1), "stdout: {}", stdout(&out));
    assert!(
        stderr(&out).contains("--trust-project-mcp"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.requests().len(), 2, "nothing was sent to the model");
}
