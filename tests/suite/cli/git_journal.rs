//! The journal in a git workspace (issue 31): a tracked file git holds is recorded by its blob id
//! instead of copied, the blobs a session relies on are kept under its ref, so a revert still
//! works after the user commits, amends, rebases and collects garbage; a tracked file too large
//! to copy is revertible all the same; what git lost is said. Through the binary, real git.

use std::path::Path;

use agent_lsp::testing::MockResponse;
use serde_json::json;
use sha2::Digest;

use super::super::support::cli_run::{CliEnv, session_lines, stderr, stdout};
use super::{MODEL, mock};

fn bash(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(id, "bash", json!({"command": command}))
}

/// `git <args>` in `dir` as the user runs it; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "u")
        .env("GIT_AUTHOR_EMAIL", "u@example.com")
        .env("GIT_COMMITTER_NAME", "u")
        .env("GIT_COMMITTER_EMAIL", "u@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A committed checkout: `a.txt`, a 2 MiB `big.bin`, and 60 more files (more than the journal
/// copies without asking git).
fn checkout(root: &Path) -> Vec<u8> {
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("a.txt"), "first\n").unwrap();
    let big: Vec<u8> = (0..2u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("big.bin"), &big).unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    for i in 0..60 {
        std::fs::write(root.join(format!("src/f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "first"]);
    big
}

/// The id of the environment's one session.
fn session_id(env: &CliEnv) -> String {
    let files = env.session_files();
    session_lines(&files[0])[0]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `sessions changes --json` of session `id`.
async fn changes(env: &CliEnv, id: &str) -> serde_json::Value {
    let changes = env.run(&["sessions", "changes", id, "--json"]).await;
    serde_json::from_str(stdout(&changes).trim()).unwrap()
}

fn stored(env: &CliEnv, content: &[u8]) -> bool {
    let name: String = (sha2::Sha256::digest(content).iter())
        .map(|b| format!("{b:02x}"))
        .collect();
    let dirs = std::fs::read_dir(env.sessions_dir()).unwrap();
    dirs.flatten()
        .any(|d| d.path().join("blobs").join(&name).exists())
}

#[tokio::test]
async fn a_tracked_file_is_reverted_after_commit_amend_rebase_and_gc_without_a_copy() {
    let mock = mock(vec![
        bash("c1", "printf 'agent\\n' > a.txt; printf 'tail' >> big.bin"),
        MockResponse::text("changed"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let root = env.project();
    let big = checkout(&root);
    let out = env
        .run(&["run", "--approve", "all", "--model", MODEL, "change"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "agent\n"
    );
    // Nothing git holds was copied: not the changed files, not the 60 others.
    assert!(!stored(&env, b"first\n"));
    assert!(!stored(&env, b"file 7\n"));
    assert!(!stored(&env, &big));
    let id = session_id(&env);
    let refs = git(
        &root,
        &["for-each-ref", "--format=%(refname)", "refs/agent-lsp/"],
    );
    assert_eq!(refs.trim(), format!("refs/agent-lsp/journal/{id}"));

    // The user commits the agent's change, amends it, rebases it onto a rewritten first
    // commit, and drops everything unreachable: the first content is in no commit any more.
    git(&root, &["commit", "-q", "-am", "agent's"]);
    git(
        &root,
        &["commit", "-q", "--amend", "-m", "agent's, amended"],
    );
    git(&root, &["checkout", "-q", "--orphan", "other"]);
    git(&root, &["commit", "-q", "-m", "rewritten first"]);
    git(&root, &["checkout", "-q", "main"]);
    git(&root, &["rebase", "-q", "--onto", "other", "HEAD~1"]);
    git(&root, &["reflog", "expire", "--expire=now", "--all"]);
    git(&root, &["gc", "-q", "--prune=now", "--aggressive"]);
    let first_blob = git(&root, &["hash-object", "--stdin"]);
    let _ = first_blob;

    let reverted = env.run(&["sessions", "revert", &id]).await;
    assert_eq!(reverted.status.code(), Some(0), "{}", stdout(&reverted));
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "first\n"
    );
    assert!(
        std::fs::read(root.join("big.bin")).unwrap() == big,
        "the 2 MiB file is back"
    );

    let deleted = env.run(&["sessions", "delete", &id]).await;
    assert_eq!(deleted.status.code(), Some(0), "{}", stderr(&deleted));
    let refs = git(&root, &["for-each-ref", "refs/agent-lsp/"]);
    assert_eq!(refs.trim(), "", "the session's ref goes with it");
}

/// A file whose content before the command was only a staged blob, which the command itself
/// drops and prunes: the journal cannot keep it, and says so instead of trusting the id.
#[tokio::test]
async fn a_blob_the_command_pruned_is_said_to_be_lost() {
    let mock = mock(vec![
        bash(
            "c1",
            "printf 'agent\\n' > a.txt && git add a.txt && git reflog expire --expire=now --all && git gc -q --prune=now",
        ),
        MockResponse::text("changed"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let root = env.project();
    checkout(&root);
    // Staged only: this content is in the index and in no commit.
    std::fs::write(root.join("a.txt"), "staged\n").unwrap();
    git(&root, &["add", "a.txt"]);
    let out = env
        .run(&[
            "run",
            "--approve",
            "all",
            "--sandbox",
            "off",
            "--model",
            MODEL,
            "change",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = session_id(&env);
    let changes = changes(&env, &id).await;
    let a = changes["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("a.txt"))
        .unwrap_or_else(|| panic!("{changes}"));
    assert_eq!(a["revertible"], false, "{a}");
    assert!(
        a["reason"]
            .as_str()
            .unwrap()
            .contains("git blob the repository no longer has"),
        "{a}"
    );
}

/// `kill -9` during a session's second command in a git workspace: its manifest is a link from
/// the first command's, its before-images are git blobs (nothing was copied); the resumed
/// session tells what the command changed, and the run reverts to what git held.
#[tokio::test]
async fn a_command_killed_in_a_git_workspace_is_told_and_reverted_from_git_blobs() {
    let mock = mock(vec![
        bash("c1", "printf 'one\\n' > src/f1.txt"),
        bash(
            "c2",
            "printf 'agent\\n' > a.txt; rm src/f2.txt; printf new > made.txt; touch started; sleep 60",
        ),
        MockResponse::text("resumed"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let root = env.project();
    checkout(&root);
    std::fs::write(root.join(".gitignore"), "started\n").unwrap();
    git(&root, &["add", ".gitignore"]);
    git(&root, &["commit", "-q", "-m", "ignore the marker"]);
    let mut child = env.spawn(&[
        "run",
        "--json",
        "--approve",
        "all",
        "--model",
        MODEL,
        "change",
    ]);
    // Killed once the second command has done its changes (a condition, not a time).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while !root.join("started").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    let out = env
        .run(&["run", "--continue", "--approve", "all", "go on"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = session_id(&env);
    let changes = changes(&env, &id).await;
    let listed: Vec<(String, String, bool)> = (changes["files"].as_array().unwrap().iter())
        .map(|f| {
            let path = f["path"].as_str().unwrap();
            let name = Path::new(path)
                .strip_prefix(&root)
                .unwrap()
                .display()
                .to_string();
            let change = f["change"].as_str().unwrap().to_string();
            (name, change, f["revertible"].as_bool().unwrap())
        })
        .collect();
    for expected in [
        ("a.txt", "modified"),
        ("made.txt", "created"),
        ("src/f1.txt", "modified"),
        ("src/f2.txt", "deleted"),
    ] {
        let found = listed.iter().find(|(name, ..)| name == expected.0);
        assert_eq!(
            found.map(|(_, change, revertible)| (change.as_str(), *revertible)),
            Some((expected.1, true)),
            "{expected:?} in {listed:?}"
        );
    }
    assert!(!stored(&env, b"first\n"), "a git blob, not a copy");
    assert!(!stored(&env, b"file 2\n"), "a git blob, not a copy");

    let reverted = env.run(&["sessions", "revert", &id]).await;
    assert_eq!(reverted.status.code(), Some(0), "{}", stdout(&reverted));
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "first\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/f1.txt")).unwrap(),
        "file 1\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/f2.txt")).unwrap(),
        "file 2\n"
    );
    assert!(!root.join("made.txt").exists());
}
