//! The `agent-lsp` binary.

fn main() {
    println!("agent-lsp {}", env!("CARGO_PKG_VERSION"));
}
