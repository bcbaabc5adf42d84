//! Model resolution through the binary: no model, prices, thinking levels, providers.

use agent_lsp::testing::MockResponse;
use serde_json::{Value, json};

use super::super::support::cli_run::{CliEnv, session_lines, stderr, stdout};
use super::{MODEL, mock};

#[tokio::test]
async fn no_model_configured_says_what_to_set_and_creates_nothing() {
    let env = CliEnv::new();
    let out = env.run(&["run", "hello"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    for needle in [
        "no model is configured",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "models.json",
        "--model",
        "agent-lsp demo",
        "agent-lsp doctor",
    ] {
        assert!(err.contains(needle), "missing {needle}: {err}");
    }
    assert!(stdout(&out).is_empty());
    assert!(env.session_files().is_empty());
}

fn usage(input: u64, output: u64) -> Option<agent_lsp::testing::MockUsage> {
    Some(serde_json::from_value(json!({"input": input, "output": output})).unwrap())
}

/// Built-in prices apply to the mock's usage; the session total spans runs.
#[tokio::test]
async fn usage_and_cost_are_reported_per_run_and_per_session() {
    let mock = mock(vec![
        MockResponse {
            text: Some("one".into()),
            usage: usage(1000, 50),
            ..Default::default()
        },
        MockResponse {
            text: Some("two".into()),
            usage: usage(2000, 100),
            ..Default::default()
        },
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    // gpt-4.1: $2 input, $8 output per million tokens.
    let out = env.run(&["run", "--model", "openai/gpt-4.1", "q1"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("tokens: 1000 in, 50 out · cost $0.0024 · session $0.0024"),
        "{}",
        stdout(&out)
    );
    let out = env.run(&["run", "--continue", "q2"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("tokens: 2000 in, 100 out · cost $0.0048 · session $0.0072"),
        "{}",
        stdout(&out)
    );
    let file = env.session_files().remove(0);
    let costs: Vec<f64> = session_lines(&file)
        .iter()
        .filter(|l| l["message"]["role"] == "assistant")
        .map(|l| l["message"]["usage"]["cost"]["total"].as_f64().unwrap())
        .collect();
    assert_eq!(costs.len(), 2);
    assert!(
        (costs[0] - 0.0024).abs() < 1e-9 && (costs[1] - 0.0048).abs() < 1e-9,
        "{costs:?}"
    );
}

#[tokio::test]
async fn thinking_levels_are_clamped_recorded_and_validated() {
    let mock = mock(vec![MockResponse::text("a"), MockResponse::text("b")]).await;
    let env = CliEnv::with_mock(&mock);
    let out = env
        .run(&["run", "--model", "openai/gpt-5", "--thinking", "xhigh", "q"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // gpt-5 speaks the Responses API, as OpenAI's reasoning models do by default.
    assert_eq!(mock.requests()[0].path, "/v1/responses");
    assert_eq!(mock.requests()[0].body["reasoning"]["effort"], "high");
    let file = env.session_files().remove(0);
    let levels: Vec<Value> = session_lines(&file)
        .iter()
        .filter(|l| l["type"] == "thinking_level_change")
        .map(|l| l["thinkingLevel"].clone())
        .collect();
    assert_eq!(
        levels,
        [json!("high")],
        "xhigh is clamped to what gpt-5 accepts"
    );
    // A model without reasoning runs with thinking off.
    let out = env
        .run(&[
            "run",
            "--no-session",
            "--model",
            "openai/gpt-4.1",
            "--thinking",
            "high",
            "q",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(mock.requests()[1].body.get("reasoning_effort").is_none());
    let out = env
        .run(&[
            "run",
            "--no-session",
            "--model",
            MODEL,
            "--thinking",
            "lots",
            "q",
        ])
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown thinking level \"lots\""),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn anthropic_and_models_json_providers_resolve_through_the_binary() {
    let mock = mock(vec![
        MockResponse::text("from claude"),
        MockResponse::text("from local"),
    ])
    .await;
    let mut env = CliEnv::new();
    env.set("ANTHROPIC_BASE_URL", &mock.anthropic_base_url());
    env.set("ANTHROPIC_API_KEY", "ant-key");
    let out = env
        .run(&[
            "run",
            "--no-session",
            "--model",
            "anthropic/claude-haiku-4-5",
            "hi",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("from claude"));
    let request = &mock.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("ant-key"));
    assert_eq!(request.body["model"], "claude-haiku-4-5");

    let config = env.home.path().join("config/agent-lsp");
    std::fs::create_dir_all(&config).unwrap();
    let models = json!({"providers": {"local": {
        "baseUrl": mock.openai_base_url(), "api": "openai-completions",
        "models": [{"id": "qwen-local", "contextWindow": 32768}]}}});
    std::fs::write(config.join("models.json"), models.to_string()).unwrap();
    // The first models.json model is the default when no key picks one.
    let mut env2 = CliEnv::new();
    env2.home = env.home;
    let out = env2.run(&["run", "--no-session", "hi"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("from local"));
    assert_eq!(mock.requests()[1].body["model"], "qwen-local");
    assert_eq!(mock.requests()[1].header("authorization"), None);
}
