//! What a child agent is built from, and a `task` call's arguments.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock, Weak};

use serde::Deserialize;

use super::ParentHandle;
use super::agents::AgentDef;
use crate::agent::stream_contract::StreamFn;
use crate::agent::tool::ToolError;
use crate::core::compaction::SharedRecord;
use crate::core::controls::SessionControls;
use crate::core::journal::Journal;
use crate::core::mcp::SessionTools;
use crate::model_registry::EnvSource;

/// A child's turn limit (its responses) unless its agent says otherwise.
pub const DEFAULT_CHILD_TURNS: usize = 30;

/// What a child is built from: the parent session's parts.
pub struct ChildParts {
    pub stream_fn: Arc<dyn StreamFn>,
    /// The parent's live model, thinking level and keys (a child follows a switch too).
    pub controls: Arc<SessionControls>,
    /// The parent's tools, set once they exist (they include this tool).
    pub tools: OnceLock<Weak<SessionTools>>,
    pub cwd: PathBuf,
    /// The parent's session file: a child's file is filed next to it.
    pub record: SharedRecord,
    pub parent: ParentHandle,
    pub agents: Vec<AgentDef>,
    pub max_turns: usize,
    /// Where an agent's own model is resolved.
    pub env: EnvSource,
    /// The session's journal: a child's changes are also a unit of their own.
    pub journal: Arc<Journal>,
}

impl ChildParts {
    /// The agent called `name` (`general` when none is named).
    pub(super) fn agent(&self, name: Option<&str>) -> Result<&AgentDef, ToolError> {
        let name = name.filter(|n| !n.trim().is_empty()).unwrap_or("general");
        self.agents.iter().find(|a| a.name == name).ok_or_else(|| {
            let known: Vec<&str> = self.agents.iter().map(|a| a.name.as_str()).collect();
            ToolError::new(format!(
                "Unknown agent {name:?}. Available agents: {}.",
                known.join(", ")
            ))
        })
    }
}

/// A `task` call's arguments.
#[derive(Deserialize)]
pub struct TaskArgs {
    pub description: String,
    pub prompt: String,
    pub agent: Option<String>,
}
