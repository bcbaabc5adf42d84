//! `--approve`: which tool calls `agent-lsp run` lets through without a human in the loop.
//!
//! A refused call is not an error of the run: the model receives a tool error saying why and how
//! the user can allow it, so it can adapt (answer from what it read, or ask the user).

use std::sync::Arc;

use clap::ValueEnum;

use crate::agent::hooks::{BeforeToolCallHook, BeforeToolCallResult};
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

    /// The loop hook enforcing this mode (`None` when everything is allowed).
    pub fn hook(self) -> Option<BeforeToolCallHook> {
        if self == Approval::All {
            return None;
        }
        Some(Arc::new(move |ctx, _cancel| {
            let refusal = self.refusal(&ctx.tool_call.name);
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
