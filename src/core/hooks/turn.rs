//! `Stop`: when the agent is about to stop (a response without tool calls, nothing queued), the
//! `Stop` hooks run; a block (exit 2, `decision: "block"`) makes the agent go on within the same
//! run, the hooks' reasons given to it as a user message at its next turn. `stop_hook_active` is
//! `true` once a `Stop` hook kept this run going, so a hook can let it stop then; and at most
//! [`MAX_CONTINUATIONS`] blocks in a row are honoured, so two disagreeing hooks cannot loop
//! forever. `continue: false` lets it stop whatever the others said.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{Firing, SessionHooks, lock, reasons};
use crate::agent::hooks::{
    AgentLoopTurnUpdate, AgentTurnContext, FinishTurnHook, PrepareNextTurnHook, TurnDecision,
};
use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, MessageContent, StopReason, UserMessage, now_ms,
};
use crate::hooks::config::HookEvent;
use crate::hooks::output::Said;

/// `Stop` blocks honoured in a row within one run.
pub const MAX_CONTINUATIONS: usize = 8;

impl SessionHooks {
    /// `finishTurn`: `inner` (the loop guard) first; when the run would end here, the `Stop`
    /// hooks, whose block continues it.
    pub fn finish_turn_hook(
        self: &Arc<Self>,
        inner: Option<FinishTurnHook>,
    ) -> Option<FinishTurnHook> {
        self.after_inner(
            HookEvent::Stop,
            inner,
            |hooks, turn: AgentTurnContext, decision, cancel| async move {
                if decision == Some(TurnDecision::End) || !hooks.stops_here(&turn.message) {
                    return Ok(decision);
                }
                match hooks.stop(&turn.message, &cancel).await {
                    Some(reason) => {
                        hooks.continue_with(reason);
                        Ok(Some(TurnDecision::Continue))
                    }
                    None => {
                        hooks.stop_streak.store(0, Ordering::Release);
                        Ok(decision)
                    }
                }
            },
        )
    }

    /// `prepareNextTurn`: `inner` (the MCP servers' tools) first, then the message a `Stop`
    /// hook's block left for this turn.
    pub fn next_turn_hook(
        self: &Arc<Self>,
        inner: Option<PrepareNextTurnHook>,
    ) -> Option<PrepareNextTurnHook> {
        self.after_inner(
            HookEvent::Stop,
            inner,
            |hooks, _turn, update, _cancel| async move {
                let Some(message) = lock(&hooks.continuation).take() else {
                    return Ok(update);
                };
                let mut update = update.unwrap_or_else(AgentLoopTurnUpdate::default);
                let mut messages = update.messages.take().unwrap_or_default();
                messages.push(AgentMessage::User(message));
                update.messages = Some(messages);
                Ok(Some(update))
            },
        )
    }

    /// Whether the run ends after this response: it finished (no tool calls, not failed or
    /// aborted) and no message waits in the agent's queues.
    fn stops_here(&self, message: &AssistantMessage) -> bool {
        let finished = matches!(message.stop_reason, StopReason::Stop | StopReason::Length)
            && message.tool_calls().next().is_none();
        let queued = (self.agent.get())
            .and_then(|weak| weak.upgrade())
            .is_some_and(|agent| agent.has_queued_messages());
        finished && !queued
    }

    /// Runs the `Stop` hooks: the reasons to go on, when one blocks (and may still).
    async fn stop(&self, message: &AssistantMessage, cancel: &CancellationToken) -> Option<String> {
        let streak = self.stop_streak.load(Ordering::Acquire);
        let fields = [
            ("stop_hook_active", json!(streak > 0)),
            ("last_assistant_message", json!(text_of(message))),
        ];
        let exhausted = streak >= MAX_CONTINUATIONS;
        let firing = Firing {
            note: exhausted.then(|| {
                format!(
                    "Not honoured: Stop hooks already kept this run going {streak} times in a row."
                )
            }),
            ..Firing::new(HookEvent::Stop, &[], fields)
        };
        let said = self.fire(firing, cancel).await;
        if exhausted || cancel.is_cancelled() || said.iter().any(|s| s.stop.is_some()) {
            return None;
        }
        reasons(&said, Said::blocks)
    }

    /// Leaves the hooks' reasons for the agent's next turn.
    fn continue_with(&self, reasons: String) {
        self.stop_streak.fetch_add(1, Ordering::AcqRel);
        let text = format!("A Stop hook of the user did not let you stop yet:\n{reasons}");
        let message = Arc::new(UserMessage {
            content: MessageContent::Blocks(vec![ContentBlock::text(text)]),
            timestamp: now_ms(),
        });
        lock(&self.made).push(message.clone());
        *lock(&self.continuation) = Some(message);
    }

    /// Whether `message` is one the hooks made (recorded without a reserved id); forgets it.
    pub fn made(&self, message: &Arc<UserMessage>) -> bool {
        let mut made = lock(&self.made);
        match made.iter().position(|m| Arc::ptr_eq(m, message)) {
            Some(at) => {
                made.remove(at);
                true
            }
            None => false,
        }
    }

    /// A new run: its `Stop` continuations count from zero.
    pub fn run_started(&self) {
        self.stop_streak.store(0, Ordering::Release);
        *lock(&self.continuation) = None;
        lock(&self.made).clear();
    }
}

/// The response's text.
fn text_of(message: &AssistantMessage) -> String {
    (message.content.iter())
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}
