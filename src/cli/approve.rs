//! `--approve`: which tool calls `agent-lsp run` lets through without a human in the loop.
//!
//! A refused call is not an error of the run: the model receives a tool error saying why and how
//! the user can allow it, so it can adapt (answer from what it read, or ask the user).

use clap::ValueEnum;

use crate::core::SessionTools;
use crate::core::approval::Policy;
use crate::mcp::config::Policy as McpPolicy;
use crate::mcp::tool::McpToolInfo;
use crate::sandbox::MustAsk;
use crate::tools::{TASK, ToolKind, is_read_only, tool_kind};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Approval {
    /// Every tool runs, including edits, writes, bash and the web tools.
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
            // A subagent's own calls meet this same policy, so starting one changes nothing.
            Approval::ReadOnly if is_read_only(tool) || tool == TASK => None,
            Approval::ReadOnly if tool_kind(tool) == ToolKind::Network => Some(format!(
                "Tool `{tool}` was not run: this agent-lsp run only allows read-only tools \
                 (read, grep, find, ls), and {tool} reaches the network. To allow it, the user \
                 can run again with --approve all."
            )),
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
            (Some(McpPolicy::Allow), _) | (Some(McpPolicy::Ask) | None, Approval::All) => None,
            (Some(McpPolicy::Block), _) => Some(format!(
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

    /// Why this mode does not let `tool` run by itself (an MCP tool's server entry first).
    pub fn refusal_of(self, tools: &SessionTools, tool: &str) -> Option<String> {
        match tools.mcp_info(tool) {
            Some(info) => self.mcp_refusal(tool, &info),
            None => self.refusal(tool),
        }
    }

    /// This mode as the approval gate's standing policy. What `--approve read-only` (or an MCP
    /// tool without `--approve all`) does not let run asks instead of blocking, so the user's
    /// allow rules can still let it run; with no rule, the asking fails with the same words.
    /// `--approve none` and a server entry's `block` block, whatever the rules say.
    pub fn policy(self, tools: &SessionTools, tool: &str) -> Policy {
        let blocked_by_server =
            (tools.mcp_info(tool)).is_some_and(|i| i.policy == Some(McpPolicy::Block));
        match self.refusal_of(tools, tool) {
            None => Policy::Allow,
            Some(reason) if self == Approval::None || blocked_by_server => Policy::Block(reason),
            Some(_) => Policy::Ask,
        }
    }
}

/// Why a call that must ask was not run: a run has no one to ask.
pub fn no_one_to_ask(tool: &str, must_ask: Option<&MustAsk>) -> String {
    match must_ask {
        Some(must_ask) => sandbox_refusal(must_ask),
        None => format!("Tool `{tool}` was not run: this agent-lsp run has no one to ask."),
    }
}

/// Why a run refuses a call the sandbox would make ask (an escalation, an unavailable sandbox).
fn sandbox_refusal(must_ask: &MustAsk) -> String {
    match must_ask {
        MustAsk::Escalation(_) => {
            "The command was not rerun outside the sandbox: that needs the user's approval, and \
             this agent-lsp run has no one to ask. The user can run again with --sandbox off."
                .into()
        }
        MustAsk::Unavailable(reason) => format!(
            "The command was not run: it would run sandboxed, but the sandbox is unavailable \
             ({reason}), and this agent-lsp run has no one to ask. The user can run again with \
             --sandbox off to run commands with their full rights."
        ),
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
