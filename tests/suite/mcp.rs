//! MCP servers as tools: our client against real servers (`@modelcontextprotocol/server-everything`,
//! `@modelcontextprotocol/server-filesystem`, installed from npm by `scripts/install-mcp-servers.sh`)
//! and a fault server of our own (`tests/fixtures/mcp/fault_server.py`).

mod client;
mod real;
mod through_run;

use std::path::{Path, PathBuf};

use agent_lsp::mcp::config::{McpConfig, Origin, parse_servers};
use agent_lsp::model_registry::EnvSource;
use serde_json::{Value, json};

/// The fault server's entry (`extra` merged into it).
pub fn fault_entry(extra: Value) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/fault_server.py");
    let mut entry = json!({"command": "python3", "args": [script.display().to_string()]});
    if let (Value::Object(entry), Value::Object(extra)) = (&mut entry, extra) {
        entry.extend(extra);
    }
    entry
}

/// A configuration from an `mcpServers` object.
pub fn config(servers: Value) -> McpConfig {
    let (servers, errors) = parse_servers(&servers, &Origin::Editor, &EnvSource::from_process());
    assert!(errors.is_empty(), "{errors:?}");
    let mut config = McpConfig::default();
    config.merge(servers);
    config
}

/// `node_modules` holding the npm MCP servers, installed on first use (idempotent).
pub fn npm_servers() -> PathBuf {
    static INSTALLED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let script =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-mcp-servers.sh");
            let out = std::process::Command::new("bash")
                .arg(&script)
                .output()
                .expect("run scripts/install-mcp-servers.sh");
            assert!(
                out.status.success(),
                "installing the MCP servers failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        })
        .clone()
}
