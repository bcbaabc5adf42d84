//! `grep`, `find`, `ls`: formats, limits, notices, `.gitignore`, open-document overlay.

use std::path::PathBuf;
use std::sync::Arc;

use agent_lsp::tools::paths::Roots;
use agent_lsp::tools::{
    ContentId, FileSnapshot, Workspace, WorkspaceError, WriteOutcome, WriteRequest,
};
use futures_util::future::BoxFuture;
use serde_json::json;

use crate::suite::support::tool_harness::Harness;

fn tree(h: &Harness) {
    h.put(".gitignore", "target/\n*.log\n");
    h.put(
        "src/main.rs",
        "fn main() {\n    let answer = 42;\n    println!(\"{answer}\");\n}\n",
    );
    h.put("src/lib.rs", "pub fn Answer() -> u32 {\n    42\n}\n");
    h.put("target/build.rs", "let answer = 0;\n");
    h.put("debug.log", "answer in log\n");
    h.put(".hidden/conf.toml", "answer = true\n");
}

#[tokio::test]
async fn grep_formats_matches_and_context() {
    let h = Harness::new();
    tree(&h);
    assert_eq!(
        h.ok_text("grep", json!({"pattern": "answer"})).await,
        ".hidden/conf.toml:1: answer = true\nsrc/main.rs:2:     let answer = 42;\nsrc/main.rs:3:     println!(\"{answer}\");"
    );
    assert_eq!(h.ok_text("grep", json!({"pattern": "answer", "ignoreCase": true, "glob": "*.rs", "context": 1, "path": "src"})).await,
        "lib.rs:1: pub fn Answer() -> u32 {\nlib.rs-2-     42\nmain.rs-1- fn main() {\nmain.rs:2:     let answer = 42;\nmain.rs-3-     println!(\"{answer}\");\nmain.rs-2-     let answer = 42;\nmain.rs:3:     println!(\"{answer}\");\nmain.rs-4- }");
    assert_eq!(
        h.ok_text(
            "grep",
            json!({"pattern": "{answer}", "literal": true, "path": "src/main.rs"})
        )
        .await,
        "main.rs:3:     println!(\"{answer}\");"
    );
    assert_eq!(
        h.ok_text("grep", json!({"pattern": "zebra"})).await,
        "No matches found"
    );
    assert!(
        h.err_text("grep", json!({"pattern": "(unclosed"}))
            .await
            .starts_with("Invalid regex pattern:")
    );
}

#[tokio::test]
async fn grep_limits_and_long_lines() {
    let h = Harness::new();
    h.put("many.txt", "hit\n".repeat(10));
    h.put("long.txt", format!("needle {}\n", "z".repeat(600)));
    let r = h
        .call("grep", json!({"pattern": "hit", "limit": 3}))
        .await
        .unwrap();
    assert_eq!(
        r.content[0].as_text().unwrap(),
        "many.txt:1: hit\nmany.txt:2: hit\nmany.txt:3: hit\n\n[3 matches limit reached. Use limit=6 for more, or refine pattern]"
    );
    assert_eq!(r.details.unwrap()["matchLimitReached"], 3);
    let out = h.ok_text("grep", json!({"pattern": "needle"})).await;
    assert_eq!(
        out,
        format!(
            "long.txt:1: needle {}... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]",
            "z".repeat(493)
        )
    );
}

/// An editor-like workspace: open documents shadow the disk.
struct Overlay {
    disk: Arc<dyn Workspace>,
    docs: Vec<(PathBuf, String)>,
}

impl Workspace for Overlay {
    fn roots(&self) -> &Roots {
        self.disk.roots()
    }
    fn read(&self, path: PathBuf) -> BoxFuture<'static, Result<FileSnapshot, WorkspaceError>> {
        match self.docs.iter().find(|(p, _)| *p == path) {
            Some((_, text)) => {
                let bytes = text.clone().into_bytes();
                Box::pin(async move {
                    Ok(FileSnapshot {
                        id: ContentId::of(&bytes),
                        bytes,
                        from_editor: true,
                    })
                })
            }
            None => self.disk.read(path),
        }
    }
    fn write(&self, req: WriteRequest) -> BoxFuture<'static, Result<WriteOutcome, WorkspaceError>> {
        self.disk.write(req)
    }
    fn remove(&self, path: PathBuf) -> BoxFuture<'static, Result<(), WorkspaceError>> {
        self.disk.remove(path)
    }
    fn open_documents(&self) -> Vec<(PathBuf, String)> {
        self.docs.clone()
    }
}

#[tokio::test]
async fn grep_find_and_read_see_open_documents() {
    let h = Harness::wrapped(|disk| {
        let root = disk.root().to_path_buf();
        std::fs::write(root.join("saved.txt"), "old text on disk\n").unwrap();
        Arc::new(Overlay {
            docs: vec![
                (root.join("saved.txt"), "unsaved needle in buffer\n".into()),
                (root.join("untitled.txt"), "another needle\n".into()),
            ],
            disk,
        })
    });
    assert_eq!(
        h.ok_text("grep", json!({"pattern": "needle"})).await,
        "saved.txt:1: unsaved needle in buffer\nuntitled.txt:1: another needle"
    );
    assert_eq!(
        h.ok_text("grep", json!({"pattern": "old text"})).await,
        "No matches found"
    );
    assert_eq!(
        h.ok_text("find", json!({"pattern": "*.txt"})).await,
        "saved.txt\nuntitled.txt"
    );
    assert_eq!(
        h.ok_text("read", json!({"path": "saved.txt"})).await,
        "unsaved needle in buffer\n"
    );
}

#[tokio::test]
async fn find_honours_gitignore_and_limits() {
    let h = Harness::new();
    tree(&h);
    assert_eq!(
        h.ok_text("find", json!({"pattern": "*.rs"})).await,
        "src/lib.rs\nsrc/main.rs"
    );
    assert_eq!(
        h.ok_text("find", json!({"pattern": "src/*.rs"})).await,
        "src/lib.rs\nsrc/main.rs"
    );
    assert_eq!(
        h.ok_text("find", json!({"pattern": "*.toml"})).await,
        ".hidden/conf.toml"
    );
    assert_eq!(h.ok_text("find", json!({"pattern": "src"})).await, "src/");
    assert_eq!(
        h.ok_text(
            "find",
            json!({"pattern": "*.rs", "path": "src", "limit": 1})
        )
        .await,
        "lib.rs\n\n[1 results limit reached. Use limit=2 for more, or refine pattern]"
    );
    assert_eq!(
        h.ok_text("find", json!({"pattern": "*.zip"})).await,
        "No files found matching pattern"
    );
}

#[tokio::test]
async fn ls_sorts_marks_dirs_and_limits() {
    let h = Harness::new();
    h.put("b.txt", "");
    h.put("A.txt", "");
    h.put(".env", "");
    h.put("sub/x", "");
    assert_eq!(h.ok_text("ls", json!({})).await, ".env\nA.txt\nb.txt\nsub/");
    assert_eq!(
        h.ok_text("ls", json!({"limit": 2})).await,
        ".env\nA.txt\n\n[2 entries limit reached. Use limit=4 for more]"
    );
    std::fs::create_dir(h.path("empty")).unwrap();
    assert_eq!(
        h.ok_text("ls", json!({"path": "empty"})).await,
        "(empty directory)"
    );
    assert_eq!(
        h.err_text("ls", json!({"path": "nope"})).await,
        "Path not found: nope"
    );
    assert_eq!(
        h.err_text("ls", json!({"path": "b.txt"})).await,
        "Not a directory: b.txt"
    );
}
