//! Approval policy and memory: which tool calls ask, and what "always" covers.
//!
//! Policy comes from `initializationOptions.approval` (tool name, then kind, then `default`);
//! without it read-only tools are allowed and everything else asks. "Always" answers are kept per
//! session: per tool name, and for `bash` per command prefix. A remembered allow never covers a
//! bash command with shell control operators, which could chain anything after an allowed prefix.

use std::collections::HashMap;

use crate::server::protocol::{ApprovalPolicy, Decision, ToolKind};
use crate::tools;

/// The protocol's kind of a tool.
pub fn kind_of(tool: &str) -> ToolKind {
    match tools::tool_kind(tool) {
        tools::ToolKind::Read => ToolKind::Read,
        tools::ToolKind::Edit => ToolKind::Edit,
        tools::ToolKind::Delete => ToolKind::Delete,
        tools::ToolKind::Move => ToolKind::Move,
        tools::ToolKind::Search => ToolKind::Search,
        tools::ToolKind::Execute => ToolKind::Execute,
        tools::ToolKind::Other => ToolKind::Other,
    }
}

/// What the configuration says for `tool`.
pub fn policy_for(config: &HashMap<String, ApprovalPolicy>, tool: &str) -> ApprovalPolicy {
    config
        .get(tool)
        .or_else(|| config.get(kind_of(tool).as_str()))
        .or_else(|| config.get("default"))
        .copied()
        .unwrap_or(if tools::is_read_only(tool) {
            ApprovalPolicy::Allow
        } else {
            ApprovalPolicy::Ask
        })
}

/// The program plus its first argument unless that is an option: `cargo test`, `ls`.
pub fn command_prefix(command: &str) -> String {
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or_default();
    match words.next() {
        Some(arg) if !arg.starts_with('-') && is_plain_word(arg) => format!("{program} {arg}"),
        _ => program.to_owned(),
    }
}

fn is_plain_word(word: &str) -> bool {
    word.chars()
        .all(|c| c.is_alphanumeric() || "-_./:=@+".contains(c))
}

/// True when a command chains, pipes, redirects or substitutes.
pub fn has_control_operators(command: &str) -> bool {
    ["&", ";", "|", ">", "<", "`", "$(", "\n"]
        .iter()
        .any(|op| command.contains(op))
}

/// The key "always" answers are stored under.
fn memory_key(tool: &str, args: &serde_json::Value) -> String {
    match (tool, args.get("command").and_then(|c| c.as_str())) {
        ("bash", Some(command)) => format!("bash:{}", command_prefix(command)),
        _ => tool.to_owned(),
    }
}

/// A session's remembered "always" answers.
#[derive(Debug, Default)]
pub struct ApprovalMemory {
    remembered: HashMap<String, bool>,
}

impl ApprovalMemory {
    /// `Some(true)` allowed, `Some(false)` blocked, `None` ask.
    pub fn recall(&self, tool: &str, args: &serde_json::Value) -> Option<bool> {
        let allowed = *self.remembered.get(&memory_key(tool, args))?;
        let chained = args
            .get("command")
            .and_then(|c| c.as_str())
            .is_some_and(has_control_operators);
        if allowed && tool == "bash" && chained {
            return None;
        }
        Some(allowed)
    }

    /// Stores `allowAlways` / `blockAlways`; other decisions are not remembered.
    pub fn remember(&mut self, tool: &str, args: &serde_json::Value, decision: Decision) {
        let allow = match decision {
            Decision::AllowAlways => true,
            Decision::BlockAlways => false,
            Decision::Allow | Decision::Block => return,
        };
        self.remembered.insert(memory_key(tool, args), allow);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn default_policy_allows_read_only_tools_only() {
        let none = HashMap::new();
        assert_eq!(policy_for(&none, "read"), ApprovalPolicy::Allow);
        assert_eq!(policy_for(&none, "grep"), ApprovalPolicy::Allow);
        assert_eq!(policy_for(&none, "edit"), ApprovalPolicy::Ask);
        assert_eq!(policy_for(&none, "bash"), ApprovalPolicy::Ask);
        let config: HashMap<String, ApprovalPolicy> =
            serde_json::from_value(json!({"edit": "allow", "execute": "block", "default": "ask"}))
                .unwrap();
        assert_eq!(policy_for(&config, "edit"), ApprovalPolicy::Allow);
        assert_eq!(policy_for(&config, "bash"), ApprovalPolicy::Block);
        assert_eq!(policy_for(&config, "read"), ApprovalPolicy::Ask);
    }

    #[test]
    fn prefixes() {
        assert_eq!(command_prefix("cargo test --lib"), "cargo test");
        assert_eq!(command_prefix("ls -la"), "ls");
        assert_eq!(command_prefix("  git status"), "git status");
        assert_eq!(command_prefix("echo \"hi\""), "echo");
    }

    #[test]
    fn always_is_per_prefix_and_never_covers_chains() {
        let mut memory = ApprovalMemory::default();
        memory.remember(
            "bash",
            &json!({"command": "cargo test"}),
            Decision::AllowAlways,
        );
        assert_eq!(
            memory.recall("bash", &json!({"command": "cargo test -q"})),
            Some(true)
        );
        assert_eq!(
            memory.recall("bash", &json!({"command": "cargo build"})),
            None
        );
        assert_eq!(
            memory.recall("bash", &json!({"command": "cargo test; rm -rf /"})),
            None
        );
        memory.remember("edit", &json!({"path": "a"}), Decision::BlockAlways);
        assert_eq!(memory.recall("edit", &json!({"path": "b"})), Some(false));
        memory.remember("write", &json!({}), Decision::Allow);
        assert_eq!(memory.recall("write", &json!({})), None);
    }
}
