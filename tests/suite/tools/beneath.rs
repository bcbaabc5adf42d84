//! Writes and deletes beneath the root (issue 30, "no confused deputy"): a directory swapped for
//! a symlink to the outside between the path's check and its use never sends a write or a
//! delete out of the workspace.

use agent_lsp::tools::WriteRequest;
use serde_json::json;

use crate::suite::support::swapper::{Swapper, is_refusal};
use crate::suite::support::tool_harness::{Harness, dir_names};

/// Calls per race. Path-based, as before issue 30, 15-28% of the writes and about half of the
/// deletes went outside (20 runs of each, all failing); beneath the root none can.
const TRIES: usize = 200;

/// `write d/f<i>.txt` while `d` keeps turning into a symlink to `outside/`.
async fn race_writes(h: &Harness) {
    std::fs::create_dir(h.path("d")).unwrap();
    let swapper = Swapper::start(&h.path("d"), &h.outside());
    let mut results = Vec::new();
    for i in 0..TRIES {
        swapper.wait_for_swap();
        let args = json!({"path": format!("d/f{i}.txt"), "content": "x"});
        results.push(h.call("write", args).await.map_err(|e| e.message));
    }
    let swaps = swapper.stop();
    let escaped = dir_names(&h.outside());
    assert!(
        escaped.is_empty(),
        "{} of {TRIES} writes landed outside the workspace ({swaps} swaps): {escaped:?}",
        escaped.len()
    );
    let inside = dir_names(&h.path("d"));
    for (i, result) in results.iter().enumerate() {
        let name = format!("f{i}.txt");
        match result {
            Ok(_) => assert!(inside.contains(&name), "write {i} succeeded elsewhere"),
            Err(e) => {
                assert!(is_refusal(e), "write {i}: {e}");
                assert!(!inside.contains(&name), "write {i} failed but wrote: {e}");
            }
        }
    }
    assert!(
        inside.iter().all(|n| n.starts_with('f')),
        "temp files left: {inside:?}"
    );
    let refused = results.iter().filter(|r| r.is_err()).count();
    eprintln!(
        "{} written, {refused} refused, {swaps} swaps",
        TRIES - refused
    );
}

#[tokio::test]
async fn a_write_raced_by_a_symlink_swap_never_lands_outside() {
    race_writes(&Harness::new()).await;
}

/// The revert of a created file deletes it through `Workspace::remove`: raced the same way, it
/// never deletes the file of the same name outside.
async fn race_removes(h: &Harness) {
    for i in 0..TRIES {
        h.put(&format!("d/r{i}.txt"), "the agent's");
        std::fs::write(h.outside().join(format!("r{i}.txt")), "the user's").unwrap();
    }
    let swapper = Swapper::start(&h.path("d"), &h.outside());
    let mut results = Vec::new();
    for i in 0..TRIES {
        swapper.wait_for_swap();
        results.push(h.ws.remove(h.path(&format!("d/r{i}.txt"))).await);
    }
    let swaps = swapper.stop();
    let kept = dir_names(&h.outside()).len();
    assert_eq!(
        kept,
        TRIES,
        "{} of {TRIES} deletes removed a file outside the workspace ({swaps} swaps)",
        TRIES - kept
    );
    let inside = dir_names(&h.path("d"));
    for (i, result) in results.iter().enumerate() {
        let name = format!("r{i}.txt");
        match result {
            Ok(()) => assert!(!inside.contains(&name), "delete {i} succeeded elsewhere"),
            Err(e) => {
                assert!(is_refusal(&e.to_string()), "delete {i}: {e}");
                assert!(inside.contains(&name), "delete {i} failed but deleted: {e}");
            }
        }
    }
    let refused = results.iter().filter(|r| r.is_err()).count();
    eprintln!(
        "{} deleted, {refused} refused, {swaps} swaps",
        TRIES - refused
    );
}

#[tokio::test]
async fn a_delete_raced_by_a_symlink_swap_never_deletes_outside() {
    race_removes(&Harness::new()).await;
}

#[tokio::test]
async fn without_openat2_a_raced_write_or_delete_stays_inside_too() {
    race_writes(&Harness::without_openat2()).await;
    race_removes(&Harness::without_openat2()).await;
}

/// Both ways of walking beneath the root: `openat2` (this kernel) and the component walk.
fn both() -> [Harness; 2] {
    [Harness::new(), Harness::without_openat2()]
}

/// A swap that happened just after the check, made deterministic: the workspace is handed the
/// checked path while `d` is already the symlink out.
#[tokio::test]
async fn a_symlink_that_appeared_after_the_check_fails_clearly_and_does_nothing() {
    for h in both() {
        h.put("d/f.txt", "mine");
        std::fs::write(h.outside().join("f.txt"), "the user's").unwrap();
        let checked = h.path("d/f.txt");
        std::fs::rename(h.path("d"), h.path("d.real")).unwrap();
        std::os::unix::fs::symlink(h.outside(), h.path("d")).unwrap();
        let changed = |op: &str| {
            format!(
                "The path {} changed while it was being {op} (a symlink appeared at {}); nothing was {op}.",
                checked.display(),
                h.path("d").display()
            )
        };
        let write =
            h.ws.write(WriteRequest::new(checked.clone(), b"x".to_vec(), None))
                .await;
        assert_eq!(write.unwrap_err().to_string(), changed("written"));
        let read = h.ws.read(checked.clone()).await;
        assert_eq!(read.unwrap_err().to_string(), changed("read"));
        let remove = h.ws.remove(checked.clone()).await;
        assert_eq!(remove.unwrap_err().to_string(), changed("deleted"));
        assert_eq!(dir_names(&h.outside()), ["f.txt"]);
        assert_eq!(
            std::fs::read_to_string(h.outside().join("f.txt")).unwrap(),
            "the user's"
        );
        // Deeper: a directory on the way to one that does not exist yet.
        let deep = h.path("d/new/deeper/g.txt");
        let write =
            h.ws.write(WriteRequest::new(deep, b"x".to_vec(), None))
                .await;
        assert!(write.unwrap_err().to_string().contains("changed while"));
        assert_eq!(dir_names(&h.outside()), ["f.txt"]);
    }
}

#[tokio::test]
async fn a_file_swapped_for_a_symlink_is_neither_read_nor_replaced_through_it() {
    for h in both() {
        h.put("f.txt", "mine");
        std::fs::write(h.outside().join("secret.txt"), "the user's").unwrap();
        let checked = h.path("f.txt");
        std::fs::remove_file(&checked).unwrap();
        std::os::unix::fs::symlink(h.outside().join("secret.txt"), &checked).unwrap();
        let read = h.ws.read(checked.clone()).await.unwrap_err().to_string();
        assert!(read.contains("changed while it was being read"), "{read}");
        let expected = Some(agent_lsp::tools::ContentId::of(b"the user's"));
        let write =
            h.ws.write(WriteRequest::new(checked.clone(), b"x".to_vec(), expected))
                .await;
        let write = write.unwrap_err().to_string();
        assert!(
            write.contains("changed while it was being written"),
            "{write}"
        );
        assert_eq!(
            std::fs::read_to_string(h.outside().join("secret.txt")).unwrap(),
            "the user's"
        );
        // Deleting it deletes the link, in the workspace, never its target.
        h.ws.remove(checked.clone()).await.unwrap();
        assert!(std::fs::symlink_metadata(&checked).is_err());
        assert!(h.outside().join("secret.txt").exists());
    }
}

#[tokio::test]
async fn symlinks_inside_pointing_inside_still_work() {
    for h in both() {
        h.put("sub/a.txt", "a\n");
        h.put("real.txt", "r\n");
        std::os::unix::fs::symlink(h.path("sub"), h.path("dir-link")).unwrap();
        std::os::unix::fs::symlink("real.txt", h.path("file-link")).unwrap();
        h.ok_text(
            "write",
            json!({"path": "dir-link/new/b.txt", "content": "b\n"}),
        )
        .await;
        assert_eq!(h.get_str("sub/new/b.txt"), "b\n");
        h.ok_text("read", json!({"path": "dir-link/a.txt"})).await;
        h.ok_text(
            "edit",
            json!({"path": "dir-link/a.txt", "edits": [{"oldText": "a", "newText": "A"}]}),
        )
        .await;
        assert_eq!(h.get_str("sub/a.txt"), "A\n");
        // A write through a link to a file replaces the file; the link stays a link.
        h.ok_text("read", json!({"path": "file-link"})).await;
        h.ok_text("write", json!({"path": "file-link", "content": "R\n"}))
            .await;
        assert_eq!(h.get_str("real.txt"), "R\n");
        let link = std::fs::symlink_metadata(h.path("file-link")).unwrap();
        assert!(link.file_type().is_symlink());
    }
}

#[tokio::test]
async fn paths_under_no_root_are_refused_by_the_workspace_itself() {
    // The journal's revert hands the workspace recorded paths without resolving them again.
    for h in both() {
        let stray = h.outside().join("stray.txt");
        std::fs::write(&stray, "the user's").unwrap();
        let remove = h.ws.remove(stray.clone()).await.unwrap_err().to_string();
        assert!(remove.contains("is outside the workspace"), "{remove}");
        let write =
            h.ws.write(WriteRequest::new(stray.clone(), b"x".to_vec(), None))
                .await;
        assert!(
            write
                .unwrap_err()
                .to_string()
                .contains("is outside the workspace")
        );
        assert_eq!(std::fs::read_to_string(&stray).unwrap(), "the user's");
        // The root itself is a directory, not a file to write.
        let root =
            h.ws.write(WriteRequest::new(h.root.clone(), b"x".to_vec(), None))
                .await;
        assert_eq!(
            root.unwrap_err().to_string(),
            format!("Is a directory: {}", h.root.display())
        );
    }
}

#[tokio::test]
async fn a_file_where_a_directory_is_expected_is_an_io_error_not_a_race() {
    for h in both() {
        h.put("plain.txt", "x");
        let e = h
            .err_text(
                "write",
                json!({"path": "plain.txt/inner.txt", "content": "y"}),
            )
            .await;
        assert!(!e.contains("changed while"), "{e}");
        assert!(e.contains("ot a directory") || e.contains("exists"), "{e}");
        assert_eq!(h.get_str("plain.txt"), "x");
    }
}
