//! The command line: `agent-lsp` (the daemon), `run`, `demo`, `sessions`.
