//! The `task {description, prompt, agent?}` tool.

use std::sync::Arc;

use serde_json::{Value, json};

use super::parts::{ChildParts, TaskArgs};
use crate::agent::message::ToolDeclaration;
use crate::agent::tool::{AgentToolResult, ToolError};
use crate::tools::{Call, TASK, ToolArgs, TypedTool};

/// The `task` tool: a typed tool whose arguments are [`TaskArgs`].
pub type TaskTool = TypedTool<TaskArgs>;

impl ToolArgs for TaskArgs {
    type State = Arc<ChildParts>;
    /// A cancelled call's child ends at once by itself.
    const ABORTS_BEFORE_START: bool = false;
    const NAME: &'static str = TASK;
    const DESCRIPTION: &'static str = "Run a subagent: a separate agent with a fresh context that carries out one task on its \
own and returns its final answer as this tool's result. Use it for a search or a piece of work \
whose details need not fill your context, or for several independent tasks at once (call \
`task` several times in one response: they run in parallel). The subagent sees nothing of this \
conversation: `prompt` must say everything it needs (what to do, where, what to report back). \
Its answer is for you, not the user: tell the user what matters.";

    fn parameters(parts: &Arc<ChildParts>) -> Value {
        let names: Vec<&str> = parts.agents.iter().map(|a| a.name.as_str()).collect();
        json!({"type": "object", "properties": {
            "description": {"type": "string", "description": "A short (3-5 word) title of the task, for the user"},
            "prompt": {"type": "string", "description": "The task for the subagent, complete in itself"},
            "agent": {"type": "string", "enum": names, "description": "Which agent runs it (default: general)"}
        }, "required": ["description", "prompt"]})
    }

    /// The description lists the agents.
    fn declaration(parts: &Arc<ChildParts>) -> ToolDeclaration {
        let list: Vec<String> = (parts.agents.iter())
            .map(|a| format!("- {}: {}", a.name, a.description))
            .collect();
        ToolDeclaration {
            name: TASK.into(),
            description: format!("{}\n\nAgents:\n{}", Self::DESCRIPTION, list.join("\n")),
            parameters: Self::parameters(parts),
            constrained_sampling: None,
        }
    }

    async fn run(self, parts: Arc<ChildParts>, call: Call) -> Result<AgentToolResult, ToolError> {
        if self.prompt.trim().is_empty() {
            return Err(ToolError::new("The task's prompt is empty."));
        }
        let agent = parts.agent(self.agent.as_deref())?;
        super::child::run(&parts, agent, &call.id, &self, call.cancel).await
    }
}
