//! `--approve`: which tool calls `agent-lsp run` lets through without a human in the loop.
//!
//! A refused call is not an error of the run: the model receives a tool error saying why and how
//! the user can allow it, so it can adapt (answer from what it read, or ask the user).

use std::sync::Arc;

use clap::ValueEnum;

use crate::agent::hooks::{BeforeToolCallHook, BeforeToolCallResult};
use crate::mcp::config::Policy;
use crate::mcp::tool::McpToolInfo;
use crate::sandbox::{MustAsk, Sandbox};
use crate::session_setup::SessionTools;
use crate::tools::is_read_only;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Approval {
    /// Every tool runs, including edits, writes and bash.
    All,
    /// Only tools that cannot change anything run (read, grep, find, ls).
    #[default]
    ReadOnly,
    /// No tool runs.
    None,
}

impl Approval {
    /// Why `tool` is refused under this mode, or `None` when it may run.
    pub fn refusal(self, tool: &str) -> Option<String> {
        match self {
            Approval::All => None,
            Approval::ReadOnly if is_read_only(tool) => None,
            Approval::ReadOnly => Some(format!(
                "Tool `{tool}` was not run: this agent-lsp run only allows read-only tools \
                 (read, grep, find, ls). To allow edits, writes and bash, the user can run again \
                 with --approve all."
            )),
            Approval::None => Some(format!(
                "Tool `{tool}` was not run: tools are disabled for this run (--approve none). \
                 To allow tools, the user can run again with --approve read-only (reads only) \
                 or --approve all."
            )),
        }
    }

    /// Why an MCP tool is refused: its server's `approval` decides first; otherwise MCP tools
    /// run only under `--approve all` (read-only hints are the server's claim, not ours).
    pub fn mcp_refusal(self, tool: &str, info: &McpToolInfo) -> Option<String> {
        match (info.policy, self) {
            (Some(Policy::Allow), _) | (Some(Policy::Ask) | None, Approval::All) => None,
            (Some(Policy::Block), _) => Some(format!(
                "Tool `{tool}` was not run: the MCP server {}'s configuration blocks it.",
                info.server
            )),
            _ => Some(format!(
                "Tool `{tool}` (MCP server {}) was not run: MCP tools run only with --approve \
                 all, or with \"approval\": \"allow\" in the server's mcpServers entry.",
                info.server
            )),
        }
    }

    /// The loop hook enforcing this mode over the session's tools. A run has no one to ask, so
    /// a command that would have to ask because of the sandbox is refused, saying why.
    pub fn hook(
        self,
        tools: Arc<SessionTools>,
        sandbox: Arc<Sandbox>,
    ) -> Option<BeforeToolCallHook> {
        Some(Arc::new(move |ctx, _cancel| {
            let tool = &ctx.tool_call.name;
            let refusal = match tools.mcp_info(tool) {
                Some(info) => self.mcp_refusal(tool, &info),
                None => self
                    .refusal(tool)
                    .or_else(|| sandbox_refusal(&sandbox, tool, &ctx.args)),
            };
            Box::pin(async move {
                Ok(refusal.map(|reason| BeforeToolCallResult {
                    block: true,
                    reason: Some(reason),
                    ..Default::default()
                }))
            })
        }))
    }
}

/// Why a run refuses a call the sandbox would make ask (an escalation, an unavailable sandbox).
fn sandbox_refusal(sandbox: &Sandbox, tool: &str, args: &serde_json::Value) -> Option<String> {
    match sandbox.must_ask(tool, args)? {
        MustAsk::Escalation(_) => Some(
            "The command was not rerun outside the sandbox: that needs the user's approval, and \
             this agent-lsp run has no one to ask. The user can run again with --sandbox off."
                .into(),
        ),
        MustAsk::Unavailable(reason) => Some(format!(
            "The command was not run: it would run sandboxed, but the sandbox is unavailable \
             ({reason}), and this agent-lsp run has no one to ask. The user can run again with \
             --sandbox off to run commands with their full rights."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_lets_reads_through_and_explains_the_rest() {
        assert_eq!(Approval::ReadOnly.refusal("read"), None);
        assert_eq!(Approval::ReadOnly.refusal("grep"), None);
        let bash = Approval::ReadOnly.refusal("bash").unwrap();
        assert!(bash.contains("--approve all"), "{bash}");
        assert!(Approval::ReadOnly.refusal("edit").is_some());
        assert!(
            Approval::None
                .refusal("read")
                .unwrap()
                .contains("--approve read-only")
        );
        assert_eq!(Approval::All.refusal("bash"), None);
    }
}
