//! The MCP client against the real reference servers from npm, over stdio and streamable HTTP.

use std::process::Stdio;
use std::time::Duration;

use agent_lsp::agent::message::ContentBlock;
use agent_lsp::agent::tool::{AgentTool, ToolInput, ToolUpdater};
use agent_lsp::mcp::McpHub;
use agent_lsp::mcp::server::State;
use tokio::io::AsyncBufReadExt;

use super::*;

fn everything() -> String {
    npm_servers()
        .join("@modelcontextprotocol/server-everything/dist/index.js")
        .display()
        .to_string()
}

fn filesystem() -> String {
    npm_servers()
        .join("@modelcontextprotocol/server-filesystem/dist/index.js")
        .display()
        .to_string()
}

async fn call(
    session: &agent_lsp::mcp::McpSession,
    name: &str,
    args: Value,
    updates: ToolUpdater,
) -> agent_lsp::agent::tool::AgentToolResult {
    let tool = session
        .tools()
        .into_iter()
        .find(|t| t.declaration().name == name)
        .unwrap_or_else(|| panic!("no tool {name} in {:?}", session.status()));
    let input = ToolInput {
        on_update: updates,
        ..ToolInput::new("c", args)
    };
    tool.execute(input).await.unwrap()
}

fn first_text(result: &agent_lsp::agent::tool::AgentToolResult) -> String {
    match &result.content[0] {
        ContentBlock::Text(t) => t.text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let hub = McpHub::new();
    let servers = config(json!({"everything": {"command": "node", "args": [everything()]}}));
    let session = hub.attach(&std::env::temp_dir(), &servers, true);
    session.ready().await;
    assert_eq!(
        session.status()[0].state,
        State::Ready,
        "{:?}",
        session.status()
    );
    let echo = call(
        &session,
        "everything__echo",
        json!({"message": "hi"}),
        ToolUpdater::none(),
    )
    .await;
    assert_eq!(first_text(&echo), "Echo: hi");
    let echo_tool = session.info("everything__echo").unwrap();
    assert_eq!(echo_tool.kind, "read", "readOnlyHint");
    let image = call(
        &session,
        "everything__get-tiny-image",
        json!({}),
        ToolUpdater::none(),
    )
    .await;
    assert!(
        image
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::Image(i) if i.mime_type == "image/png")),
        "{:?}",
        image.content
    );
    let links = call(
        &session,
        "everything__get-resource-links",
        json!({"count": 2}),
        ToolUpdater::none(),
    )
    .await;
    assert!(
        first_text(&links).contains("[resource link: "),
        "{}",
        first_text(&links)
    );
    let (updater, mut updates) = ToolUpdater::channel();
    let long = call(
        &session,
        "everything__trigger-long-running-operation",
        json!({"duration": 1, "steps": 3}),
        updater,
    )
    .await;
    assert!(
        first_text(&long).contains("completed"),
        "{}",
        first_text(&long)
    );
    let mut progress = 0;
    while updates.try_recv().is_ok() {
        progress += 1;
    }
    assert_eq!(progress, 3, "one update per step");
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = tokio::process::Command::new("node")
        .args([everything(), "streamableHttp".into()])
        .env("PORT", port.to_string())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("listening") {
                return;
            }
        }
    })
    .await
    .expect("the server listens");
    let hub = McpHub::new();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let servers = config(json!({"remote": {"url": url, "headers": {"X-Test": "1"}}}));
    let session = hub.attach(&std::env::temp_dir(), &servers, true);
    session.ready().await;
    assert_eq!(
        session.status()[0].state,
        State::Ready,
        "{:?}",
        session.status()
    );
    let sum = call(
        &session,
        "remote__get-sum",
        json!({"a": 2, "b": 3}),
        ToolUpdater::none(),
    )
    .await;
    assert!(first_text(&sum).contains('5'), "{}", first_text(&sum));
}

#[tokio::test]
async fn server_filesystem_reads_inside_its_root() {
    let root = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::write(root_path.join("note.txt"), "from the filesystem server\n").unwrap();
    let hub = McpHub::new();
    let servers = config(json!({"fs": {"command": "node",
        "args": [filesystem(), root_path.display().to_string()]}}));
    let session = hub.attach(&root_path, &servers, true);
    session.ready().await;
    assert_eq!(
        session.status()[0].state,
        State::Ready,
        "{:?}",
        session.status()
    );
    let path = root_path.join("note.txt").display().to_string();
    let read = call(
        &session,
        "fs__read_text_file",
        json!({"path": path}),
        ToolUpdater::none(),
    )
    .await;
    assert_eq!(first_text(&read), "from the filesystem server\n");
    let outside = call(
        &session,
        "fs__read_text_file",
        json!({"path": "/etc/hostname"}),
        ToolUpdater::none(),
    )
    .await;
    assert_eq!(outside.is_error, Some(true), "{:?}", outside.content);
}
