//! The journal's image store stays small (issue 31): `sessions delete` and `sessions gc` remove
//! the images no session refers to, and a session starting over a store larger than its limit
//! says so and collects it. Through the binary, on a real store.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use agent_lsp::testing::MockResponse;
use serde_json::{Value, json};
use sha2::Digest;

use super::super::support::cli_run::{CliEnv, session_lines, stderr, stdout};
use super::{MODEL, mock};

fn bash(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(id, "bash", json!({"command": command}))
}

/// Where the image of `content` is stored (named by its SHA-256).
fn image_of(env: &CliEnv, content: &str) -> PathBuf {
    let name: String = sha2::Sha256::digest(content.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let folder = std::fs::read_dir(env.sessions_dir())
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    folder.join("blobs").join(name)
}

/// Makes every stored image look last used an hour ago (as after a day's work).
fn age_images(env: &CliEnv) {
    for folder in std::fs::read_dir(env.sessions_dir()).unwrap().flatten() {
        let Ok(images) = std::fs::read_dir(folder.path().join("blobs")) else {
            continue;
        };
        for image in images.flatten() {
            let file = std::fs::File::options()
                .write(true)
                .open(image.path())
                .unwrap();
            file.set_modified(SystemTime::now() - Duration::from_secs(3600))
                .unwrap();
        }
    }
}

fn session_id(path: &Path) -> String {
    session_lines(path)[0]["id"].as_str().unwrap().to_string()
}

/// Two sessions' commands each change a file; deleting the first removes the images only it
/// named, and the second can still be reverted.
#[tokio::test]
async fn deleting_a_session_frees_what_only_it_named_and_keeps_the_rest_revertible() {
    let mock = mock(vec![
        bash("c1", "printf 'two\\n' > a.txt"),
        MockResponse::text("first"),
        bash("c2", "printf 'three\\n' > b.txt"),
        MockResponse::text("second"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("a.txt"), "one\n").unwrap();
    std::fs::write(env.project().join("b.txt"), "bee\n").unwrap();
    for prompt in ["first", "second"] {
        let out = env
            .run(&["run", "--approve", "all", "--model", MODEL, prompt])
            .await;
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    for content in ["one\n", "two\n", "bee\n", "three\n"] {
        assert!(image_of(&env, content).is_file(), "{content:?} stored");
    }
    age_images(&env);
    let mut files = env.session_files();
    files.sort();
    let (first, second) = (session_id(&files[0]), session_id(&files[1]));

    let deleted = env.run(&["sessions", "delete", &first]).await;
    assert_eq!(deleted.status.code(), Some(0), "{}", stderr(&deleted));
    assert!(
        stdout(&deleted).contains(&format!("deleted {first}")),
        "{}",
        stdout(&deleted)
    );
    assert!(!files[0].exists());
    // Only the first session named "one" (a.txt before it) and "two" (a.txt after it).
    assert!(!image_of(&env, "one\n").exists());
    assert!(!image_of(&env, "two\n").exists());
    assert!(image_of(&env, "bee\n").is_file());

    let reverted = env.run(&["sessions", "revert", &second]).await;
    assert_eq!(reverted.status.code(), Some(0), "{}", stdout(&reverted));
    assert_eq!(
        std::fs::read_to_string(env.project().join("b.txt")).unwrap(),
        "bee\n"
    );

    // Nothing is left to collect; the report says what is kept.
    let gc = env.run(&["sessions", "gc", "--json"]).await;
    assert_eq!(gc.status.code(), Some(0), "{}", stderr(&gc));
    let report: Value = serde_json::from_str(stdout(&gc).trim()).unwrap();
    assert_eq!(report["removed"], 0, "{report}");
    assert!(report["kept"].as_u64().unwrap() >= 2, "{report}");
}

/// Images no session names (the first command's images of files it did not change, and its
/// manifest of the workspace, needed only while it had no `done` entry) are removed by
/// `sessions gc`; those a session names are kept.
#[tokio::test]
async fn gc_removes_the_images_of_files_no_command_changed() {
    let mock = mock(vec![
        bash("c1", "printf 'two\\n' > a.txt"),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("a.txt"), "one\n").unwrap();
    std::fs::write(env.project().join("untouched.txt"), "same\n").unwrap();
    let out = env
        .run(&["run", "--approve", "all", "--model", MODEL, "go"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Just used: kept whatever names it.
    let fresh = env.run(&["sessions", "gc", "--json"]).await;
    let fresh: Value = serde_json::from_str(stdout(&fresh).trim()).unwrap();
    assert_eq!(fresh["removed"], 0, "{fresh}");
    age_images(&env);
    let gc = env.run(&["sessions", "gc"]).await;
    assert_eq!(gc.status.code(), Some(0), "{}", stderr(&gc));
    assert!(
        stdout(&gc).contains("removed 2 unreferenced image(s)"),
        "{}",
        stdout(&gc)
    );
    assert!(!image_of(&env, "same\n").exists());
    assert!(image_of(&env, "one\n").is_file());
}

/// A session starting over a store larger than `AGENT_LSP_JOURNAL_STORE_MIB` says so and
/// collects it before the process ends.
#[tokio::test]
async fn a_session_over_the_store_limit_reports_it_and_collects() {
    let mock = mock(vec![
        bash("c1", "printf 'two\\n' > a.txt"),
        MockResponse::text("done"),
        MockResponse::text("again"),
    ])
    .await;
    let mut env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("a.txt"), "one\n").unwrap();
    std::fs::write(env.project().join("untouched.txt"), "same\n").unwrap();
    let out = env
        .run(&["run", "--approve", "all", "--model", MODEL, "go"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("effect journal's images"),
        "{}",
        stderr(&out)
    );
    age_images(&env);
    env.set("AGENT_LSP_JOURNAL_STORE_MIB", "0");
    let out = env
        .run(&["run", "--approve", "all", "--model", MODEL, "again"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the effect journal's images of this project take"),
        "{}",
        stderr(&out)
    );
    assert!(!image_of(&env, "same\n").exists());
    assert!(image_of(&env, "one\n").is_file());
}
