//! Subagents: the `task` tool runs a child agent with a fresh context (its own system prompt,
//! a subset of the session's tools, a turn limit) to completion inside the call, and the call's
//! result is the child's final answer.
//!
//! The tool is built with the session's other tools, before the session exists; the session
//! connects itself as the child's [`Parent`] when it is created (as it connects `ask_user`'s
//! channel), so the child's calls go through the parent's approval gate and its events reach
//! the parent's front end, nested under the `task` call ([`ChildEvent`]). Each child's
//! transcript is a pi session file of its own, next to the parent's (`child.rs`). The agents are
//! the built-in ones (`agents.rs`) and the user's (`custom.rs`).

mod agents;
mod child;
pub mod custom;
mod parts;
mod tool;

use std::sync::{Arc, OnceLock};

use futures_util::future::BoxFuture;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::agent::event::AgentEvent;
use crate::agent::hooks::{BeforeToolCallContext, BeforeToolCallResult};

pub use agents::{AgentDef, builtin_agents};
pub use parts::{ChildParts, DEFAULT_CHILD_TURNS};
pub use tool::TaskTool;

/// One event of a child agent, as its parent session shows it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildEvent {
    /// The parent's `task` call that runs the child.
    pub parent_tool_call_id: String,
    /// The child's agent (`explore`, `general`, a custom one).
    pub agent: String,
    /// The child's loop event, in pi's shapes.
    pub event: Arc<AgentEvent>,
}

/// The parent session as its children see it.
pub trait Parent: Send + Sync {
    /// The parent's approval gate's verdict on a child's call (`None`: it may run).
    fn decide<'a>(
        &'a self,
        ctx: &'a BeforeToolCallContext,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Option<BeforeToolCallResult>>;

    /// Shows a child's event to the parent's front end (it must not wait).
    fn show(&self, event: &ChildEvent);

    /// The session's `SubagentStop` hooks on a child that finished (`agent`, its session id,
    /// whether it was already kept going, its last words): why it must go on, when a hook
    /// blocks its stop.
    fn subagent_stop<'a>(
        &'a self,
        _stop: SubagentStop<'a>,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(std::future::ready(None))
    }
}

/// A child that finished, as the `SubagentStop` hooks see it.
pub struct SubagentStop<'a> {
    pub agent: &'a str,
    pub agent_id: &'a str,
    pub stop_hook_active: bool,
    pub last_message: &'a str,
}

/// The `task` tool's way to its parent session, connected once the session exists.
#[derive(Clone, Default)]
pub struct ParentHandle(Arc<OnceLock<Arc<dyn Parent>>>);

impl ParentHandle {
    /// Connects the parent (the first connection stays).
    pub fn connect(&self, parent: Arc<dyn Parent>) {
        let _ = self.0.set(parent);
    }

    fn get(&self) -> Option<&Arc<dyn Parent>> {
        self.0.get()
    }
}
