//! Path confinement: `..`, absolute paths, symlinks, extra roots.

use serde_json::json;

use crate::suite::support::tool_harness::Harness;

fn outside_msg(h: &Harness, input: &str) -> String {
    format!(
        "Path '{input}' is outside the workspace ({}). Only files under the workspace folder can be accessed.",
        h.root.display()
    )
}

#[tokio::test]
async fn dot_dot_and_absolute_escapes_are_refused() {
    let h = Harness::new();
    std::fs::write(h.outside().join("secret.txt"), "s3cret").unwrap();
    assert_eq!(
        h.err_text("read", json!({"path": "../outside/secret.txt"}))
            .await,
        outside_msg(&h, "../outside/secret.txt")
    );
    let abs = h.outside().join("secret.txt").display().to_string();
    assert_eq!(
        h.err_text("read", json!({"path": abs})).await,
        outside_msg(&h, &abs)
    );
    assert_eq!(
        h.err_text(
            "write",
            json!({"path": "sub/../../escape.txt", "content": "x"})
        )
        .await,
        outside_msg(&h, "sub/../../escape.txt")
    );
    assert!(!h.base.path().join("escape.txt").exists());
    assert_eq!(
        h.err_text("ls", json!({"path": ".."})).await,
        outside_msg(&h, "..")
    );
    assert_eq!(
        h.err_text("grep", json!({"pattern": "s3cret", "path": "../outside"}))
            .await,
        outside_msg(&h, "../outside")
    );
    assert_eq!(
        h.err_text("find", json!({"pattern": "*", "path": "/"}))
            .await,
        outside_msg(&h, "/")
    );
}

#[tokio::test]
async fn paths_that_stay_inside_are_fine() {
    let h = Harness::new();
    h.put("sub/a.txt", "inside");
    assert_eq!(
        h.ok_text("read", json!({"path": "sub/../sub/./a.txt"}))
            .await,
        "inside"
    );
    let abs = h.path("sub/a.txt").display().to_string();
    assert_eq!(h.ok_text("read", json!({"path": abs})).await, "inside");
    assert_eq!(
        h.ok_text("read", json!({"path": "@sub/a.txt"})).await,
        "inside"
    );
}

#[tokio::test]
async fn symlinks_pointing_out_are_refused() {
    let h = Harness::new();
    std::fs::write(h.outside().join("secret.txt"), "s3cret").unwrap();
    std::os::unix::fs::symlink(h.outside(), h.path("link")).unwrap();
    std::os::unix::fs::symlink(h.outside().join("secret.txt"), h.path("file-link")).unwrap();
    assert_eq!(
        h.err_text("read", json!({"path": "link/secret.txt"})).await,
        outside_msg(&h, "link/secret.txt")
    );
    assert_eq!(
        h.err_text("read", json!({"path": "file-link"})).await,
        outside_msg(&h, "file-link")
    );
    assert_eq!(
        h.err_text("write", json!({"path": "link/new.txt", "content": "x"}))
            .await,
        outside_msg(&h, "link/new.txt")
    );
    assert!(!h.outside().join("new.txt").exists());
    // A dangling link whose target is outside must not be followed by a write either.
    std::os::unix::fs::symlink(h.outside().join("later.txt"), h.path("dangling")).unwrap();
    assert_eq!(
        h.err_text("write", json!({"path": "dangling", "content": "x"}))
            .await,
        outside_msg(&h, "dangling")
    );
    assert!(!h.outside().join("later.txt").exists());
    // Links that stay inside work.
    h.put("real.txt", "ok");
    std::os::unix::fs::symlink(h.path("real.txt"), h.path("inner-link")).unwrap();
    assert_eq!(h.ok_text("read", json!({"path": "inner-link"})).await, "ok");
}

#[tokio::test]
async fn extra_roots_are_allowed() {
    let h = Harness::with_extra_root();
    let target = h.outside().join("notes.txt");
    std::fs::write(&target, "extra").unwrap();
    let abs = target.display().to_string();
    assert_eq!(h.ok_text("read", json!({"path": abs})).await, "extra");
    h.ok_text(
        "write",
        json!({"path": "../outside/new.txt", "content": "made"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(h.outside().join("new.txt")).unwrap(),
        "made"
    );
    let e = h.err_text("read", json!({"path": "/etc/hostname"})).await;
    assert!(
        e.contains(&format!("and the extra roots ({})", h.outside().display())),
        "{e}"
    );
}
