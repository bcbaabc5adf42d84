//! `agent-lsp-mock-mcp [START_DELAY_MS]`: a minimal MCP server over stdio for the benchmarks and
//! the editor tests (see `agent_lsp::testing::mcp_server`).

fn main() -> std::io::Result<()> {
    let delay = std::env::args()
        .nth(1)
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(0);
    agent_lsp::testing::mcp_server::serve(std::time::Duration::from_millis(delay))
}
