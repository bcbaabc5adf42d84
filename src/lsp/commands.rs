//! Slash commands on the wire: `agent/listCommands`, the expansion of `/name args` in
//! `agent/prompt`, `agent/steer` and `agent/followUp` (the session core's
//! `core::commands`), and `commands_update` when an MCP server's prompts change.

use std::sync::Arc;

use crate::agent::message::ContentBlock;
use crate::core::commands::{
    BuiltinOutcome, expand_message, fetch_mcp_prompt, follow_commands, list_commands, run_model,
};
use crate::core::{Builtin, CommandInfo, Expansion};
use crate::lsp::live_session::{LiveSession, QueueKind};
use crate::lsp::protocol::{
    CommandAnswer, CommandReply, Disposition, EventBody, ExpandingReply, SessionEvent,
    StreamingBehavior,
};
use crate::rpc::jsonrpc::ResponseError;

type Result<T> = std::result::Result<T, ResponseError>;

/// How a message is to be delivered: `agent/prompt` (with its `streamingBehavior`) or a queue.
#[derive(Clone, Copy, Debug)]
pub enum Delivery {
    Prompt(Option<StreamingBehavior>),
    Queue(QueueKind),
}

/// `(runId, messageId, disposition)` of a delivered message.
pub type Delivered = (String, String, Disposition);

/// What a message became.
pub enum Prepared {
    /// The message to deliver (a template or skill expanded, or unchanged).
    Send(Vec<ContentBlock>),
    /// A command ran or is running instead; this is the answer.
    Answered(Box<CommandAnswer>),
}

/// The session's commands now: built-ins, templates, skills, its MCP servers' prompts.
pub fn commands_of(session: &LiveSession) -> Vec<CommandInfo> {
    list_commands(&session.commands, &session.tools)
}

/// Expands a message that starts with `/name`; runs a built-in, or starts fetching an MCP
/// prompt (delivered by `deliver` once it arrived).
pub fn prepare(
    session: &Arc<LiveSession>,
    mut blocks: Vec<ContentBlock>,
    delivery: Delivery,
    deliver: fn(&Arc<LiveSession>, Delivery, Vec<ContentBlock>) -> Result<Delivered>,
) -> Result<Prepared> {
    match expand_message(&session.commands, &session.tools, &mut blocks) {
        Expansion::Text(_) => Ok(Prepared::Send(blocks)),
        Expansion::Builtin(builtin) => {
            builtin_reply(session, &builtin).map(|a| Prepared::Answered(Box::new(a)))
        }
        Expansion::Mcp {
            server,
            prompt,
            args,
        } => {
            let command = format!("{server}:{prompt}");
            let task_session = session.clone();
            let name = command.clone();
            tokio::spawn(async move {
                let session = task_session;
                let command = (server.as_str(), prompt.as_str(), args.as_slice());
                let fetched = fetch_mcp_prompt(&session.tools, command, blocks).await;
                let sent = fetched
                    .and_then(|blocks| deliver(&session, delivery, blocks).map_err(|e| e.message));
                if let Err(message) = sent {
                    let event = SessionEvent::CommandError {
                        command: name,
                        message,
                    };
                    let run = session.active_run();
                    session
                        .view
                        .emitter
                        .emit(run.as_deref(), EventBody::Session(event));
                }
            });
            let reply = ExpandingReply {
                session_id: session.id.clone(),
                disposition: Disposition::Expanding,
                command,
            };
            Ok(Prepared::Answered(Box::new(CommandAnswer::Expanding(
                reply,
            ))))
        }
    }
}

fn builtin_reply(session: &Arc<LiveSession>, builtin: &Builtin) -> Result<CommandAnswer> {
    let outcome = match builtin {
        Builtin::Compact { instructions } => {
            // As `agent/compact`, but answered at once: the result comes with `compaction_end`.
            let compaction = session
                .compact(instructions.clone())
                .map_err(crate::lsp::live_session::compact_refusal)?;
            tokio::spawn(compaction);
            BuiltinOutcome::CompactStarted
        }
        Builtin::Model { spec } => run_model(
            spec.as_deref(),
            &session.agent,
            &mut session.record(),
            &session.controls,
        )
        .map_err(|e| ResponseError::invalid_params(e.to_string()))?,
        Builtin::McpTrust => BuiltinOutcome::McpTrust {
            asked: crate::lsp::approval::ask_project_trust_again(session),
        },
    };
    if let (Builtin::Model { spec: Some(_) }, BuiltinOutcome::Model(s)) = (builtin, &outcome) {
        crate::lsp::live_session::announce_settings(session, s);
    }
    Ok(CommandAnswer::Command(CommandReply {
        session_id: session.id.clone(),
        disposition: Disposition::Command,
        outcome,
    }))
}

impl LiveSession {
    /// Follows the session's commands: a `commands_update` whenever its MCP servers' prompts
    /// change the set.
    pub fn watch_commands(self: &Arc<Self>) {
        follow_commands(self, &self.tools, commands_of, |session, commands| {
            let event = SessionEvent::CommandsUpdate { commands };
            session.view.emitter.emit(None, EventBody::Session(event));
        });
    }
}
