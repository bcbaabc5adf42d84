//! `agent-lsp demo`, `--help`, `--version`, usage errors and logging.

use tokio::io::AsyncReadExt;

use super::super::support::cli_run::{CliEnv, json_lines, stderr, stdout};

#[tokio::test]
async fn the_demo_reads_edits_checks_and_answers_without_a_model() {
    let env = CliEnv::new();
    let out = env.run(&["demo", "--keep"]).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "[read hello.sh] ok",
        "[edit hello.sh] ok",
        "[bash sh hello.sh] ok",
        "Fixed:",
        "tokens:",
    ] {
        assert!(text.contains(needle), "missing {needle}: {text}");
    }
    let kept = text.lines().find_map(|l| l.strip_prefix("kept: ")).unwrap();
    let script = std::fs::read_to_string(std::path::Path::new(kept).join("hello.sh")).unwrap();
    assert!(script.contains("echo \"Hello, world\""), "{script}");
    std::fs::remove_dir_all(kept).unwrap();

    let out = env.run(&["demo", "--json"]).await;
    assert_eq!(out.status.code(), Some(0));
    let events = json_lines(&out);
    let bash_end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end" && e["toolName"] == "bash")
        .unwrap();
    assert!(
        bash_end["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Hello, world")
    );
    assert_eq!(events.last().unwrap()["type"], "agent_settled");
}

#[tokio::test]
async fn help_and_version_go_to_stdout() {
    let env = CliEnv::new();
    let out = env.run(&["--version"]).await;
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out).trim(),
        format!("agent-lsp {}", env!("CARGO_PKG_VERSION"))
    );
    let out = env.run(&["run", "--help"]).await;
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    for flag in [
        "--model",
        "--cwd",
        "--json",
        "--approve",
        "--session",
        "--continue",
        "--fork",
        "--session-dir",
        "--no-session",
        "--thinking",
    ] {
        assert!(help.contains(flag), "missing {flag}");
    }
    let out = env.run(&["run", "--continue", "--no-session", "x"]).await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "conflicting flags are a usage error"
    );
    let mut child = env.spawn(&["-v", "run", "--no-session", "--model", "nosuch/model", "x"]);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .await
        .unwrap();
    assert!(err.contains("unknown provider \"nosuch\""), "{err}");
}
