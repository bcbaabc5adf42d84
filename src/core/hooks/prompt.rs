//! `UserPromptSubmit` and `SessionStart`.
//!
//! `SessionStart` runs as the session is created (`source`: `startup`, or `resume` for a
//! resumed or forked session); its context (`additionalContext`, or plain stdout) waits for the
//! next prompt. `UserPromptSubmit` runs before a prompt that starts a run reaches the agent
//! (after the `SessionStart` hooks ended): a block (exit 2, `decision: "block"`,
//! `continue: false`) refuses the prompt, which then never reaches the model or the session
//! file; context is added to the prompt as text blocks of their own, which the model reads and
//! the session file keeps. A message queued into a running run (a steer, a follow-up) does not
//! pass through `UserPromptSubmit`.

use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{Firing, SessionHooks, lock, reasons};
use crate::agent::message::{AgentMessage, ContentBlock, MessageContent, UserMessage};
use crate::hooks::config::HookEvent;
use crate::hooks::output::Said;

impl SessionHooks {
    /// Whether a prompt must pass through the hooks before it reaches the agent.
    pub fn intercepts_prompts(&self) -> bool {
        self.configured(HookEvent::UserPromptSubmit)
            || !*self.started.borrow()
            || !lock(&self.pending).is_empty()
    }

    /// Runs the `SessionStart` hooks in the background; a prompt waits for them.
    pub fn session_started(self: &Arc<Self>) {
        if !self.configured(HookEvent::SessionStart) {
            return;
        }
        self.started.send_replace(false);
        let hooks = self.clone();
        tokio::spawn(async move {
            let source = if hooks.resumed { "resume" } else { "startup" };
            let model = hooks.controls.model();
            let fields = [
                ("source", json!(source)),
                ("model", json!(format!("{}/{}", model.provider, model.id))),
            ];
            let firing = Firing::new(HookEvent::SessionStart, &[source], fields);
            let said = hooks.fire(firing, &CancellationToken::new()).await;
            let contexts = said.into_iter().filter_map(|s| s.context);
            lock(&hooks.pending).extend(contexts.map(|c| framed(HookEvent::SessionStart, &c)));
            hooks.started.send_replace(true);
        });
    }

    /// A prompt on its way to the agent: `Err` the hooks' reasons when they refused it, else the
    /// prompt with their context added.
    pub async fn submit(
        &self,
        message: AgentMessage,
        cancel: &CancellationToken,
    ) -> Result<AgentMessage, String> {
        let mut started = self.started.subscribe();
        tokio::select! {
            _ = started.wait_for(|done| *done) => {}
            () = cancel.cancelled() => return Err("aborted".into()),
        }
        let prompt = match &message {
            AgentMessage::User(user) => user.content.to_text(),
            _ => String::new(),
        };
        let firing = Firing::new(
            HookEvent::UserPromptSubmit,
            &[],
            [("prompt", json!(prompt))],
        );
        let said = self.fire(firing, cancel).await;
        if let Some(why) = reasons(&said, Said::blocks) {
            return Err(format!(
                "The prompt was blocked by a UserPromptSubmit hook: {why}"
            ));
        }
        let mut contexts: Vec<String> = lock(&self.pending).drain(..).collect();
        let submitted = said.into_iter().filter_map(|s| s.context);
        contexts.extend(submitted.map(|c| framed(HookEvent::UserPromptSubmit, &c)));
        Ok(with_context(message, contexts))
    }
}

/// A hook's context as the model reads it, saying where it comes from.
fn framed(event: HookEvent, context: &str) -> String {
    format!("[Context from the user's {event} hook]\n{context}")
}

/// The prompt with `contexts` added as text blocks after its own.
fn with_context(message: AgentMessage, contexts: Vec<String>) -> AgentMessage {
    if contexts.is_empty() {
        return message;
    }
    let AgentMessage::User(user) = message else {
        return message;
    };
    let mut blocks = match &user.content {
        MessageContent::Text(text) => vec![ContentBlock::text(text.clone())],
        MessageContent::Blocks(blocks) => blocks.clone(),
    };
    blocks.extend(contexts.into_iter().map(ContentBlock::text));
    AgentMessage::User(Arc::new(UserMessage {
        content: MessageContent::Blocks(blocks),
        timestamp: user.timestamp,
    }))
}
