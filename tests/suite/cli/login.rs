//! `agent-lsp login` / `logout` (issue 33): a key stored for the user is used when its variable
//! is not set, is readable only by the user, and no sandboxed command can read it.

use std::os::unix::fs::PermissionsExt;
use std::process::{Output, Stdio};

use agent_lsp::testing::MockResponse;
use serde_json::json;
use tokio::io::AsyncWriteExt;

use super::super::support::cli_run::{CliEnv, stderr, stdout};
use super::escapes::results_of;
use super::{MODEL, mock};

const KEY: &str = "sk-stored-7f3a9c";

/// `agent-lsp <args>` with `input` on standard input (a pipe, not a terminal).
async fn with_input(env: &CliEnv, args: &[&str], input: &str) -> Output {
    let mut child = env.command(args).stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A command that refuses its arguments exits without reading: its input pipe is closed.
    if let Err(e) = stdin.write_all(input.as_bytes()).await {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    drop(stdin);
    child.wait_with_output().await.unwrap()
}

fn keys_file(env: &CliEnv) -> std::path::PathBuf {
    env.home
        .path()
        .join("config/agent-lsp/credentials/keys.json")
}

#[tokio::test]
async fn a_stored_key_is_sent_to_the_provider_and_hidden_from_sandboxed_commands() {
    let mut env = CliEnv::with_home_outside_tmp();
    let out = with_input(
        &env,
        &["login", "--provider", "openai"],
        &format!("  {KEY}\n"),
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(
        stdout(&out).contains("Stored OPENAI_API_KEY"),
        "{}",
        stdout(&out)
    );
    let file = keys_file(&env);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    // A file beside the folder, readable as the rest of the home folder is: the control.
    let config = env.home.path().join("config/agent-lsp");
    std::fs::write(config.join("visible.txt"), "visible text").unwrap();

    let read = format!(
        "cat {dir}/visible.txt; echo; cat {dir}/credentials/keys.json; ls -a {dir}/credentials; \
         grep -r -l '{head}''{tail}' {home} 2>/dev/null | wc -l",
        dir = config.display(),
        home = env.home.path().display(),
        // Split, so the session file, which records this command, does not hold the key.
        head = &KEY[..8],
        tail = &KEY[8..],
    );
    let mock = mock(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": read})),
        MockResponse::text("done"),
    ])
    .await;
    env.set("OPENAI_BASE_URL", &mock.openai_base_url());
    let run = env
        .run(&["run", "--approve", "all", "--model", MODEL, "go"])
        .await;
    assert_eq!(run.status.code(), Some(0), "stderr: {}", stderr(&run));

    let requests = mock.requests();
    assert_eq!(
        requests[0].headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {KEY}").as_str()),
        "the stored key is the one sent"
    );
    let result = results_of(&mock).join("\n");
    assert!(result.starts_with("visible text"), "{result}");
    assert!(
        !result.contains(KEY),
        "a sandboxed command read the key: {result}"
    );
    assert!(
        result.contains("No such file") || result.contains("Permission denied"),
        "{result}"
    );
    assert!(
        result.trim_end().ends_with('0'),
        "grep found the key somewhere: {result}"
    );
}

#[tokio::test]
async fn the_environment_wins_over_a_stored_key_and_logout_forgets_it() {
    let mut env = CliEnv::with_home_outside_tmp();
    let out = with_input(&env, &["login", "--provider", "openai"], KEY).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let doctor = env.run(&["doctor", "--json"]).await;
    let report: serde_json::Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let text = report.to_string();
    assert!(
        text.contains("OPENAI_API_KEY is stored (agent-lsp login)"),
        "{text}"
    );

    let mock = mock(vec![MockResponse::text("hi")]).await;
    env.set("OPENAI_BASE_URL", &mock.openai_base_url());
    env.set("OPENAI_API_KEY", "sk-from-env");
    let run = env.run(&["run", "--model", MODEL, "go"]).await;
    assert_eq!(run.status.code(), Some(0), "stderr: {}", stderr(&run));
    assert_eq!(
        mock.requests()[0]
            .headers
            .get("authorization")
            .map(String::as_str),
        Some("Bearer sk-from-env")
    );

    let out = env.run(&["logout"]).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(
        stdout(&out).contains("Forgot OPENAI_API_KEY"),
        "{}",
        stdout(&out)
    );
    assert!(!keys_file(&env).exists());
    let again = env.run(&["logout"]).await;
    assert!(
        stdout(&again).contains("No stored key"),
        "{}",
        stdout(&again)
    );
}

#[tokio::test]
async fn login_refuses_what_is_not_a_key_or_a_provider() {
    let env = CliEnv::new();
    let cases: [(&[&str], &str, &str); 5] = [
        (&["login", "--provider", "openai"], "\n", "the key is empty"),
        (
            &["login", "--provider", "openai"],
            "sk-a sk-b\n",
            "paste just the key",
        ),
        (
            &["login", "--provider", "nope"],
            "sk\n",
            "unknown provider \"nope\"",
        ),
        (&["login"], "sk\n", "unknown provider \"sk\""),
        (&["login"], "", "give --provider"),
    ];
    for (args, input, expected) in cases {
        let out = with_input(&env, args, input).await;
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert!(!keys_file(&env).exists(), "nothing was stored");
}

#[tokio::test]
async fn acp_login_is_the_same_login() {
    let env = CliEnv::new();
    let out = with_input(&env, &["acp", "login", "--provider", "anthropic"], KEY).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(keys_file(&env)).unwrap()).unwrap();
    assert_eq!(stored, json!({"ANTHROPIC_API_KEY": KEY}));
}

#[tokio::test]
async fn the_file_tools_refuse_the_store_even_in_a_workspace_that_holds_it() {
    // The user opened their home folder as the workspace: the store lies inside it.
    let mut env = CliEnv::with_home_outside_tmp();
    let out = with_input(&env, &["login", "--provider", "openai"], KEY).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let home = env.home.path().to_path_buf();
    let head = &KEY[..8];
    let mock = mock(vec![
        MockResponse::tool_call(
            "c1",
            "read",
            json!({"path": "config/agent-lsp/credentials/keys.json"}),
        ),
        MockResponse::tool_call("c2", "ls", json!({"path": "config/agent-lsp/credentials"})),
        MockResponse::tool_call("c3", "grep", json!({"pattern": head, "path": "."})),
        MockResponse::tool_call("c4", "find", json!({"pattern": "keys.json"})),
        MockResponse::tool_call(
            "c5",
            "write",
            json!({"path": "config/agent-lsp/credentials/keys.json", "content": "{}"}),
        ),
        MockResponse::text("done"),
    ])
    .await;
    env.set("OPENAI_BASE_URL", &mock.openai_base_url());
    let home_arg = home.display().to_string();
    let run = env
        .run(&[
            "run",
            "--approve",
            "all",
            "--cwd",
            &home_arg,
            "--model",
            MODEL,
            "go",
        ])
        .await;
    assert_eq!(run.status.code(), Some(0), "stderr: {}", stderr(&run));
    let results = results_of(&mock);
    assert_eq!(results.len(), 5, "{results:?}");
    for (i, result) in results.iter().enumerate() {
        assert!(!result.contains(KEY), "tool {i} reached the key: {result}");
    }
    for i in [0, 1, 4] {
        assert!(
            results[i].contains("store of API keys"),
            "tool {i}: {}",
            results[i]
        );
    }
    assert!(
        !results[3].contains("credentials"),
        "find listed the store: {}",
        results[3]
    );
    let stored = std::fs::read_to_string(keys_file(&env)).unwrap();
    assert!(stored.contains(KEY), "the store is unchanged");
}
