//! The `task {description, prompt, agent?}` tool.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::agents::AgentDef;
use super::parts::{ChildParts, TaskArgs};
use crate::agent::message::ToolDeclaration;
use crate::agent::tool::{AgentTool, AgentToolResult, ExecutionMode, ToolError, ToolUpdater};
use crate::tools::TASK;

pub struct TaskTool {
    declaration: ToolDeclaration,
    parts: Arc<ChildParts>,
}

impl TaskTool {
    pub fn new(parts: Arc<ChildParts>) -> TaskTool {
        TaskTool {
            declaration: declaration(&parts.agents),
            parts,
        }
    }
}

fn declaration(agents: &[AgentDef]) -> ToolDeclaration {
    let list: Vec<String> = (agents.iter())
        .map(|a| format!("- {}: {}", a.name, a.description))
        .collect();
    let description = format!(
        "Run a subagent: a separate agent with a fresh context that carries out one task on its \
own and returns its final answer as this tool's result. Use it for a search or a piece of work \
whose details need not fill your context, or for several independent tasks at once (call \
`task` several times in one response: they run in parallel). The subagent sees nothing of this \
conversation: `prompt` must say everything it needs (what to do, where, what to report back). \
Its answer is for you, not the user: tell the user what matters.\n\nAgents:\n{}",
        list.join("\n")
    );
    let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
    ToolDeclaration {
        name: TASK.into(),
        description,
        parameters: json!({"type": "object", "properties": {
            "description": {"type": "string", "description": "A short (3-5 word) title of the task, for the user"},
            "prompt": {"type": "string", "description": "The task for the subagent, complete in itself"},
            "agent": {"type": "string", "enum": names, "description": "Which agent runs it (default: general)"}
        }, "required": ["description", "prompt"]}),
        constrained_sampling: None,
    }
}

impl AgentTool for TaskTool {
    fn declaration(&self) -> &ToolDeclaration {
        &self.declaration
    }

    fn execution_mode(&self) -> Option<ExecutionMode> {
        Some(ExecutionMode::Parallel)
    }

    fn execute(
        &self,
        tool_call_id: String,
        args: Value,
        cancel: CancellationToken,
        _on_update: ToolUpdater,
    ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        let parts = self.parts.clone();
        Box::pin(async move {
            let args: TaskArgs = serde_json::from_value(args)
                .map_err(|e| ToolError::new(format!("Invalid task arguments: {e}")))?;
            if args.prompt.trim().is_empty() {
                return Err(ToolError::new("The task's prompt is empty."));
            }
            let agent = parts.agent(args.agent.as_deref())?;
            super::child::run(&parts, agent, &tool_call_id, &args, cancel).await
        })
    }
}
