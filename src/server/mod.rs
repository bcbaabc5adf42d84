//! The daemon: an LSP server over stdio with the agent extension methods (see protocol.md).

/// Serves LSP over stdin/stdout until the client exits or stdin closes.
pub async fn serve_stdio() -> anyhow::Result<()> {
    anyhow::bail!("the LSP daemon is not built yet")
}
