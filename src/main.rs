//! The `agent-lsp` binary: everything lives in the library; see `agent_lsp::cli`.

fn main() -> std::process::ExitCode {
    agent_lsp::cli::main()
}
