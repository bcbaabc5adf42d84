//! `write`: creation, line endings/BOM/permissions kept, conflicts, atomicity.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use crate::suite::support::tool_harness::{Harness, dir_names};

#[tokio::test]
async fn creates_parents_and_reports_bytes() {
    let h = Harness::new();
    assert_eq!(
        h.ok_text(
            "write",
            json!({"path": "deep/er/new.txt", "content": "héllo\n"})
        )
        .await,
        "Successfully wrote 7 bytes to deep/er/new.txt"
    );
    assert_eq!(h.get_str("deep/er/new.txt"), "héllo\n");
    // Atomic replacement leaves no temp files behind.
    assert_eq!(dir_names(&h.path("deep/er")), vec!["new.txt"]);
}

#[tokio::test]
async fn keeps_crlf_bom_and_permissions_of_existing_file() {
    let h = Harness::new();
    let p = h.put("win.txt", "\u{FEFF}a\r\nb\r\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o754)).unwrap();
    h.ok_text("write", json!({"path": "win.txt", "content": "x\ny\nz\n"}))
        .await;
    assert_eq!(h.get_str("win.txt"), "\u{FEFF}x\r\ny\r\nz\r\n");
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o754
    );
    assert_eq!(dir_names(&h.root), vec!["win.txt"]);
}

#[tokio::test]
async fn refuses_read_only_files() {
    let h = Harness::new();
    let p = h.put("locked.txt", "keep");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
    assert_eq!(
        h.err_text("write", json!({"path": "locked.txt", "content": "x"}))
            .await,
        "Permission denied: locked.txt"
    );
    assert_eq!(h.get_str("locked.txt"), "keep");
}

#[tokio::test]
async fn refuses_to_clobber_a_file_changed_since_read() {
    let h = Harness::new();
    h.put("f.txt", "v1\n");
    h.ok_text("read", json!({"path": "f.txt"})).await;
    h.put("f.txt", "user change\n");
    let err = h
        .err_text("write", json!({"path": "f.txt", "content": "agent\n"}))
        .await;
    assert_eq!(
        err,
        "File f.txt has been modified since you last read it (by the user, an editor or another process). \
Its current content was not changed. Read the file again, then redo the change against the current content."
    );
    assert_eq!(h.get_str("f.txt"), "user change\n");
    h.ok_text("read", json!({"path": "f.txt"})).await;
    h.ok_text("write", json!({"path": "f.txt", "content": "agent\n"}))
        .await;
    assert_eq!(h.get_str("f.txt"), "agent\n");
    // Its own writes do not count as external changes.
    h.ok_text("write", json!({"path": "f.txt", "content": "again\n"}))
        .await;
}
