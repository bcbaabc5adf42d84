//! `agent-lsp doctor` through the binary: every problem it reports, with its fix, and a clean
//! report exiting 0; the endpoint probe against the mock on loopback.

use agent_lsp::testing::MockResponse;
use serde_json::Value;

use super::super::support::cli_run::{CliEnv, stdout};
use super::mock;

/// The JSON report and the exit status.
async fn doctor(env: &CliEnv, args: &[&str]) -> (Value, Option<i32>) {
    let mut all = vec!["doctor", "--json"];
    all.extend_from_slice(args);
    let out = env.run(&all).await;
    let report: Value = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("doctor --json printed no JSON ({e}): {}", stdout(&out)));
    (report, out.status.code())
}

/// The checks named `name`.
fn named<'a>(report: &'a Value, name: &str) -> Vec<&'a Value> {
    (report["checks"].as_array().unwrap().iter())
        .filter(|c| c["name"] == name)
        .collect()
}

fn one<'a>(report: &'a Value, name: &str) -> &'a Value {
    let found = named(report, name);
    assert_eq!(found.len(), 1, "one {name} check: {report:#}");
    found[0]
}

/// An environment where nothing stands in the way: a model, a writable home, agent-lsp on PATH.
fn healthy(mock: &agent_lsp::testing::MockProvider) -> CliEnv {
    let mut env = CliEnv::with_mock(mock);
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_agent-lsp"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    env.set("PATH", &path);
    env
}

#[tokio::test]
async fn a_healthy_setup_reports_no_problem_and_exits_zero() {
    let mock = mock(vec![]).await;
    let env = healthy(&mock);
    let (report, code) = doctor(&env, &[]).await;
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["ok"], true);
    let model = one(&report, "model");
    assert_eq!(model["status"], "ok");
    let detail = model["detail"].as_str().unwrap();
    assert!(detail.starts_with("openai/"), "{detail}");
    assert!(detail.contains("OPENAI_API_KEY is set"), "{detail}");
    let keys = one(&report, "keys")["detail"].as_str().unwrap().to_string();
    assert!(keys.contains("openai (OPENAI_API_KEY)"), "{keys}");
    assert!(
        !keys.contains("test-key"),
        "a key's value is never printed: {keys}"
    );
    assert_eq!(one(&report, "sessions")["status"], "ok");
    assert_eq!(one(&report, "mcp")["detail"], "no servers configured");
    assert_eq!(one(&report, "binary")["status"], "ok");
    assert!(
        named(&report, "endpoint").is_empty(),
        "the endpoint is asked only with --online"
    );
}

#[tokio::test]
async fn a_base_url_alone_picks_the_openai_default_and_says_so() {
    let mock = mock(vec![]).await;
    let mut env = CliEnv::new();
    env.set("OPENAI_BASE_URL", &mock.openai_base_url());
    let (report, _) = doctor(&env, &[]).await;
    let detail = one(&report, "model")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(detail.contains("OPENAI_BASE_URL is set"), "{detail}");
    assert!(detail.contains(&mock.openai_base_url()), "{detail}");
}

#[tokio::test]
async fn no_model_is_a_problem_whose_fix_names_the_keys_and_the_demo() {
    let env = CliEnv::new();
    let (report, code) = doctor(&env, &[]).await;
    assert_eq!(code, Some(1));
    assert_eq!(report["ok"], false);
    let model = one(&report, "model");
    assert_eq!(model["status"], "problem");
    let fix = model["fix"].as_str().unwrap();
    for needle in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "models.json",
        "agent-lsp demo",
    ] {
        assert!(fix.contains(needle), "missing {needle}: {fix}");
    }
}

#[tokio::test]
async fn an_unknown_model_and_a_missing_key_are_problems() {
    let mock = mock(vec![]).await;
    let env = healthy(&mock);
    let (report, code) = doctor(&env, &["--model", "nosuch/model"]).await;
    assert_eq!(code, Some(1));
    assert_eq!(one(&report, "model")["status"], "problem");
    let mut env = CliEnv::new();
    env.set("ANTHROPIC_BASE_URL", "https://api.anthropic.com");
    let (report, code) = doctor(&env, &["--model", "anthropic/claude-sonnet-4-5"]).await;
    assert_eq!(code, Some(1));
    let model = one(&report, "model");
    assert_eq!(model["detail"], "no API key for provider anthropic");
    assert!(model["fix"].as_str().unwrap().contains("ANTHROPIC_API_KEY"));
}

#[tokio::test]
async fn online_asks_the_endpoint_and_says_when_it_cannot_be_reached() {
    let mock = mock(vec![MockResponse::text("unused")]).await;
    let env = healthy(&mock);
    let (report, code) = doctor(&env, &["--online"]).await;
    assert_eq!(code, Some(0), "{report:#}");
    let endpoint = one(&report, "endpoint");
    assert_eq!(endpoint["status"], "ok");
    assert!(endpoint["detail"].as_str().unwrap().contains("answers"));
    let mut env = healthy(&mock);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    env.set("OPENAI_BASE_URL", &format!("http://127.0.0.1:{port}/v1"));
    let (report, code) = doctor(&env, &["--online"]).await;
    assert_eq!(code, Some(1));
    let endpoint = one(&report, "endpoint");
    assert_eq!(endpoint["status"], "problem");
    assert!(
        endpoint["detail"]
            .as_str()
            .unwrap()
            .contains("cannot reach")
    );
    assert!(
        endpoint["fix"]
            .as_str()
            .unwrap()
            .contains("OPENAI_BASE_URL")
    );
}

#[tokio::test]
async fn a_session_directory_that_cannot_be_written_is_a_problem() {
    let mock = mock(vec![]).await;
    let mut env = healthy(&mock);
    let file = env.home.path().join("not-a-folder");
    std::fs::write(&file, "").unwrap();
    env.set(
        "AGENT_LSP_SESSION_DIR",
        &file.join("sessions").display().to_string(),
    );
    let (report, code) = doctor(&env, &[]).await;
    assert_eq!(code, Some(1));
    let sessions = one(&report, "sessions");
    assert_eq!(sessions["status"], "problem");
    assert!(
        sessions["fix"]
            .as_str()
            .unwrap()
            .contains("AGENT_LSP_SESSION_DIR")
    );
}

#[tokio::test]
async fn a_broken_mcp_entry_is_a_problem_and_an_untrusted_project_a_warning() {
    let mock = mock(vec![]).await;
    let env = healthy(&mock);
    std::fs::write(
        env.project.path().join(".mcp.json"),
        r#"{"mcpServers": {"good": {"command": "true"}, "bad": {"command": 42}}}"#,
    )
    .unwrap();
    let (report, code) = doctor(&env, &[]).await;
    assert_eq!(code, Some(1), "{report:#}");
    let mcp = named(&report, "mcp");
    let problem = mcp
        .iter()
        .find(|c| c["status"] == "problem")
        .expect("a problem");
    assert!(
        problem["detail"].as_str().unwrap().contains("bad"),
        "{problem}"
    );
    let warning = mcp
        .iter()
        .find(|c| c["status"] == "warning")
        .expect("a warning");
    let detail = warning["detail"].as_str().unwrap();
    assert!(
        detail.contains("good") && detail.contains("not allowed yet"),
        "{detail}"
    );
    assert!(
        warning["fix"]
            .as_str()
            .unwrap()
            .contains("--trust-project-mcp")
    );
}

#[tokio::test]
async fn an_unavailable_sandbox_and_a_binary_off_path_are_warnings() {
    let mock = mock(vec![]).await;
    let mut env = CliEnv::with_mock(&mock);
    env.set("AGENT_LSP_TEST_SANDBOX_UNAVAILABLE", "1");
    env.set("PATH", "/nonexistent");
    let (report, code) = doctor(&env, &[]).await;
    assert_eq!(code, Some(0), "warnings do not fail: {report:#}");
    let sandbox = one(&report, "sandbox");
    assert_eq!(sandbox["status"], "warning");
    assert!(
        sandbox["detail"]
            .as_str()
            .unwrap()
            .starts_with("unavailable")
    );
    let binary = one(&report, "binary");
    assert_eq!(binary["status"], "warning");
    assert!(
        binary["fix"]
            .as_str()
            .unwrap()
            .contains("agent-lsp-installer.sh | sh")
    );
}

#[tokio::test]
async fn the_text_report_marks_each_problem_and_counts_them() {
    let env = CliEnv::new();
    let out = env.run(&["doctor"]).await;
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("PROBLEM  model"), "{text}");
    assert!(text.contains("agent-lsp demo"), "{text}");
    assert!(
        text.trim_end().ends_with("problem found.") || text.contains("problems found."),
        "{text}"
    );
}

#[tokio::test]
async fn a_projects_server_names_cannot_drive_the_terminal() {
    let mock = mock(vec![]).await;
    let env = healthy(&mock);
    std::fs::write(
        env.project.path().join(".mcp.json"),
        r#"{"mcpServers": {"x\u001b]0;pwned\u0007": {"command": "true"}}}"#,
    )
    .unwrap();
    let out = env.run(&["doctor"]).await;
    let text = stdout(&out);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(text.contains("x\\u{1b}]0;pwned\\u{7}"), "{text}");
}

/// `agent-lsp login --provider openai` with `key`, in `env`.
async fn store_key(env: &CliEnv, key: &str) {
    use tokio::io::AsyncWriteExt;
    let mut child = (env.command(&["login", "--provider", "openai"]))
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(key.as_bytes()).await.unwrap();
    drop(stdin);
    assert_eq!(
        child.wait_with_output().await.unwrap().status.code(),
        Some(0)
    );
}

#[tokio::test]
async fn a_stored_key_others_can_read_is_a_problem_with_its_fix() {
    use std::os::unix::fs::PermissionsExt;
    let env = CliEnv::new();
    store_key(&env, "sk-stored").await;
    let (report, code) = doctor(&env, &[]).await;
    let keys = one(&report, "keys");
    assert_eq!(keys["status"], "ok", "{report:#}");
    assert!(
        keys["detail"]
            .as_str()
            .unwrap()
            .contains("stored by agent-lsp login"),
        "{keys}"
    );
    let model = one(&report, "model")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        model.contains("OPENAI_API_KEY is stored (agent-lsp login)"),
        "{model}"
    );
    assert_eq!(code, Some(0), "{report:#}");

    let file = env
        .home
        .path()
        .join("config/agent-lsp/credentials/keys.json");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (report, code) = doctor(&env, &[]).await;
    let keys = one(&report, "keys");
    assert_eq!(keys["status"], "problem", "{report:#}");
    assert!(
        keys["detail"]
            .as_str()
            .unwrap()
            .contains("can be read by other users"),
        "{keys}"
    );
    assert_eq!(keys["fix"], format!("chmod 600 {}", file.display()));
    assert_eq!(code, Some(1));
}

#[tokio::test]
async fn a_stored_key_a_sandbox_without_namespaces_cannot_hide_is_a_problem() {
    let mut env = CliEnv::new();
    env.set(agent_lsp::sandbox::FORCE_NO_NAMESPACES_ENV, "1");
    store_key(&env, "sk-stored").await;
    let (report, code) = doctor(&env, &[]).await;
    let keys = one(&report, "keys");
    assert_eq!(keys["status"], "problem", "{report:#}");
    assert!(
        keys["detail"]
            .as_str()
            .unwrap()
            .contains("readable by sandboxed commands"),
        "{keys}"
    );
    assert!(
        keys["fix"].as_str().unwrap().contains("agent-lsp logout"),
        "{keys}"
    );
    assert_eq!(code, Some(1));
}

#[tokio::test]
async fn a_missing_key_names_login_in_its_fix() {
    let mut env = CliEnv::new();
    env.set("AGENT_LSP_MODEL", "anthropic/claude-sonnet-4-5");
    let (report, code) = doctor(&env, &[]).await;
    let model = one(&report, "model");
    assert_eq!(model["status"], "problem", "{report:#}");
    assert!(
        model["fix"]
            .as_str()
            .unwrap()
            .contains("agent-lsp login --provider anthropic"),
        "{model}"
    );
    assert_eq!(code, Some(1));
}

#[tokio::test]
async fn the_editors_set_up_in_the_home_folder_are_named() {
    let env = CliEnv::new();
    let (report, _) = doctor(&env, &[]).await;
    let none = one(&report, "editors")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(none.starts_with("no editor set-up found"), "{none}");
    let home = env.home.path();
    for dir in [
        ".vscode/extensions/agent-lsp.agent-lsp-0.1.0",
        "data/nvim/lazy/agent-lsp/lua",
        "data/zed/extensions/installed/agent-lsp",
        ".vscode/extensions/someone.else-1.0.0",
    ] {
        std::fs::create_dir_all(home.join(dir)).unwrap();
    }
    std::fs::create_dir_all(home.join("config/zed")).unwrap();
    std::fs::write(
        home.join("config/zed/settings.json"),
        r#"{"agent_servers": {"agent-lsp": {"command": "agent-lsp", "args": ["acp"]}}}"#,
    )
    .unwrap();
    let (report, _) = doctor(&env, &[]).await;
    let editors = one(&report, "editors");
    assert_eq!(editors["status"], "ok");
    assert_eq!(
        editors["detail"],
        "set up: VS Code, Neovim (lazy.nvim), Zed extension, Zed settings"
    );
}

#[tokio::test]
async fn web_search_is_reported_as_information() {
    let mock = mock(vec![]).await;
    let mut env = healthy(&mock);
    let (report, code) = doctor(&env, &[]).await;
    assert_eq!(code, Some(0), "{report:#}");
    let search = one(&report, "web search");
    assert_eq!(search["status"], "ok");
    let detail = search["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("not configured: web_search is not offered"),
        "{detail}"
    );
    env.set("AGENT_LSP_SEARXNG_URL", "http://127.0.0.1:8888");
    env.set("TAVILY_API_KEY", "tvly-secret");
    let (report, _) = doctor(&env, &[]).await;
    let search = one(&report, "web search");
    assert_eq!(search["detail"], "searxng at http://127.0.0.1:8888/search");
    env.set("AGENT_LSP_SEARXNG_URL", "");
    let (report, code) = doctor(&env, &[]).await;
    assert_eq!(code, Some(0));
    let detail = one(&report, "web search")["detail"].to_string();
    assert_eq!(detail, "\"tavily at https://api.tavily.com/search\"");
    assert!(!report.to_string().contains("tvly-secret"));
}
