//! Tools the agent can call (pi's `AgentTool`), and what they return.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::message::{ContentBlock, ToolDeclaration, Usage};

/// How a tool may run alongside others in one batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionMode {
    Sequential,
    Parallel,
}

/// pi's `AgentToolResult`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentToolResult {
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Structured output for programs; not sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// A soft failure: the model sees an error, details are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// A runtime-only vote to end the run after this batch (all results must agree).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminate: Option<bool>,
}

impl AgentToolResult {
    /// A result with one text block and empty details (`details: {}`), as pi builds them.
    pub fn text(text: impl Into<String>) -> Self {
        AgentToolResult {
            content: vec![ContentBlock::text(text)],
            details: Some(Value::Object(Default::default())),
            ..Default::default()
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        AgentToolResult {
            is_error: Some(true),
            ..Self::text(text)
        }
    }
}

/// A failure thrown by a tool (pi: `throw new Error(msg)`); its message becomes the result text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    pub message: String,
}

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
        }
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError { message }
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError {
            message: message.to_string(),
        }
    }
}

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        ToolError {
            message: e.to_string(),
        }
    }
}

impl From<anyhow::Error> for ToolError {
    fn from(e: anyhow::Error) -> Self {
        ToolError {
            message: format!("{e:#}"),
        }
    }
}

/// Lets a running tool report partial results (`tool_execution_update`). Updates sent after the
/// tool finished are ignored, as in pi.
#[derive(Clone, Debug)]
pub struct ToolUpdater {
    tx: Option<mpsc::UnboundedSender<AgentToolResult>>,
}

impl ToolUpdater {
    /// An updater wired to a receiver the executor drains.
    pub fn channel() -> (ToolUpdater, mpsc::UnboundedReceiver<AgentToolResult>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (ToolUpdater { tx: Some(tx) }, rx)
    }

    /// An updater that drops every update (for direct calls outside the loop).
    pub fn none() -> ToolUpdater {
        ToolUpdater { tx: None }
    }

    pub fn update(&self, partial: AgentToolResult) {
        if let Some(tx) = &self.tx {
            // A closed receiver means the tool already settled: pi ignores late updates too.
            let _ = tx.send(partial);
        }
    }
}

/// One call of a tool: pi's `execute(toolCallId, params, signal, onUpdate)` as one value, which
/// wrappers (the journal, the confined `bash`) pass on whole.
#[derive(Clone, Debug)]
pub struct ToolInput {
    pub tool_call_id: String,
    /// The arguments, prepared (`prepare_arguments`) but not yet validated.
    pub args: Value,
    pub cancel: CancellationToken,
    pub on_update: ToolUpdater,
}

impl ToolInput {
    /// A call made outside the loop: never cancelled, its updates dropped.
    pub fn new(tool_call_id: impl Into<String>, args: Value) -> Self {
        ToolInput {
            tool_call_id: tool_call_id.into(),
            args,
            cancel: CancellationToken::new(),
            on_update: ToolUpdater::none(),
        }
    }
}

/// A tool the agent can call.
pub trait AgentTool: Send + Sync {
    /// Name, description and JSON Schema parameters, as declared to the model.
    fn declaration(&self) -> &ToolDeclaration;

    fn name(&self) -> &str {
        &self.declaration().name
    }

    /// A short label for user interfaces.
    fn label(&self) -> &str {
        self.name()
    }

    /// `None` follows the loop's configuration (parallel by default).
    fn execution_mode(&self) -> Option<ExecutionMode> {
        None
    }

    /// A shim run on the raw arguments before validation (pi's `prepareArguments`).
    fn prepare_arguments(&self, args: Value) -> Value {
        args
    }

    /// Runs the tool. `input.cancel` fires on abort; a tool that ignores it is abandoned after a
    /// grace.
    fn execute(&self, input: ToolInput) -> BoxFuture<'static, Result<AgentToolResult, ToolError>>;
}

pub type ToolRef = Arc<dyn AgentTool>;
