//! Zed extension: launches `agent-lsp --stdio` as a language server.
//!
//! The binary comes from `lsp.agent-lsp.binary` in Zed's settings when set, else from `PATH`
//! (as the worktree's shell sees it). Zed passes `lsp.agent-lsp.initialization_options` on to
//! the server itself, so this extension does not add any.

use zed_extension_api::{self as zed, settings::LspSettings, LanguageServerId, Result, Worktree};

struct AgentLsp;

impl zed::Extension for AgentLsp {
    fn new() -> Self {
        AgentLsp
    }

    fn language_server_command(
        &mut self,
        server_id: &LanguageServerId,
        worktree: &Worktree,
    ) -> Result<zed::Command> {
        let binary = LspSettings::for_worktree(server_id.as_ref(), worktree)
            .ok()
            .and_then(|settings| settings.binary);
        let (path, args, extra_env) = match binary {
            Some(b) => (b.path, b.arguments, b.env),
            None => (None, None, None),
        };
        let command = match path {
            Some(path) => path,
            None => worktree.which("agent-lsp").ok_or_else(|| {
                "agent-lsp is not on PATH: install it (cargo install --path .) or set \
                 lsp.agent-lsp.binary.path in settings.json"
                    .to_string()
            })?,
        };
        let mut env = worktree.shell_env();
        env.extend(extra_env.unwrap_or_default());
        Ok(zed::Command {
            command,
            args: args.unwrap_or_else(|| vec!["--stdio".to_string()]),
            env,
        })
    }
}

zed::register_extension!(AgentLsp);
