//! Slash commands in ACP sessions: a prompt starting with `/name args` goes through the same
//! expansion as the daemon's (templates, `/skill:name`, MCP prompts); the built-ins `/model`
//! and `/compact` are answered here, and the command list goes out as
//! `available_commands_update`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use agent_client_protocol_schema::v1 as acp;
use tokio_util::sync::CancellationToken;

use crate::acp::options;
use crate::acp::session::{AcpSession, COMPACT_BUSY, COMPACTING, stop_value};
use crate::acp::updates::text_block;
use crate::agent::message::ContentBlock;
use crate::compaction::{CompactionReason, CompactionResult};
use crate::core::commands::{BuiltinOutcome, run_model};
use crate::core::commands::{expand_message, fetch_mcp_prompt, follow_commands, list_commands};
use crate::core::session::Refusal;
use crate::core::{Builtin, CommandInfo, CompactError, CompactionEvent, Expansion};
use crate::rpc::jsonrpc::{Id, ResponseError};

impl AcpSession {
    /// `session/prompt`: expands a command, runs a built-in, or prompts.
    pub fn submit(self: &Arc<Self>, id: Id, mut blocks: Vec<ContentBlock>) {
        match expand_message(&self.commands, &self.tools, &mut blocks) {
            Expansion::Text(_) => self.prompt(id, blocks),
            Expansion::Builtin(Builtin::Model { spec }) => self.model_command(id, spec),
            Expansion::Builtin(Builtin::Compact { instructions }) => {
                self.compact_command(id, instructions)
            }
            Expansion::Builtin(Builtin::McpTrust) => {
                let session = self.clone();
                tokio::spawn(async move {
                    // Inside the prompt's request, as a turn's question is: its updates belong
                    // to it, and the answer ends it.
                    crate::acp::trust::ask_again(&session, &CancellationToken::new()).await;
                    session.answer(&id, Ok(stop_value(acp::StopReason::EndTurn)));
                });
            }
            Expansion::Mcp {
                server,
                prompt,
                args,
            } => {
                let session = self.clone();
                tokio::spawn(async move {
                    let command = (server.as_str(), prompt.as_str(), args.as_slice());
                    match fetch_mcp_prompt(&session.tools, command, blocks).await {
                        Ok(blocks) => session.prompt(id, blocks),
                        Err(message) => session.answer(
                            &id,
                            Err(ResponseError::internal(format!(
                                "/{server}:{prompt}: {message}"
                            ))),
                        ),
                    }
                });
            }
        }
    }

    /// `/model [provider/id]`: says the model (after the switch), updates the config options.
    fn model_command(&self, id: Id, spec: Option<String>) {
        let outcome = run_model(
            spec.as_deref(),
            &self.agent,
            &mut self.record(),
            &self.controls,
        );
        let settings = match outcome {
            Ok(BuiltinOutcome::Model(settings)) => settings,
            Ok(_) => return self.answer(&id, Ok(stop_value(acp::StopReason::EndTurn))),
            Err(e) => return self.answer(&id, Err(ResponseError::invalid_params(e.to_string()))),
        };
        let verb = if spec.is_some() {
            "Switched to"
        } else {
            "Model:"
        };
        let text = format!(
            "{verb} {}/{} (thinking: {})",
            settings.model.provider,
            settings.model.id,
            settings.thinking_level.as_str()
        );
        self.say(&text);
        if spec.is_some() {
            let config = options::config_options(self, &self.view.env);
            let update = acp::ConfigOptionUpdate::new(config);
            self.notify(acp::SessionUpdate::ConfigOptionUpdate(update));
        }
        self.answer(&id, Ok(stop_value(acp::StopReason::EndTurn)));
    }

    /// `/compact [instructions]`: runs the compactor, shows its summary, answers `end_turn`
    /// (`cancelled` after `session/cancel`).
    fn compact_command(self: &Arc<Self>, id: Id, instructions: Option<String>) {
        let compaction = match self.compact(instructions) {
            Ok(compaction) => compaction,
            Err(e) => {
                let busy = match e {
                    Refusal::Running => COMPACT_BUSY,
                    _ => COMPACTING,
                };
                return self.answer(&id, Err(ResponseError::invalid_params(busy)));
            }
        };
        let session = self.clone();
        tokio::spawn(async move {
            let done = compaction.await;
            let answer = match done {
                Ok(result) => {
                    session.say(&summary_text(&result));
                    Ok(stop_value(acp::StopReason::EndTurn))
                }
                Err(CompactError::Aborted) => Ok(stop_value(acp::StopReason::Cancelled)),
                Err(e) => Err(compact_error(e)),
            };
            session.answer(&id, answer);
        });
    }

    /// An agent message of agent-lsp's own (not the model's), under a `messageId` of its own.
    fn say(&self, text: &str) {
        self.say_with(text, None);
    }

    fn say_with(&self, text: &str, meta: Option<acp::Meta>) {
        let id = acp::MessageId::new(uuid::Uuid::now_v7().to_string());
        let chunk = acp::ContentChunk::new(text_block(text))
            .message_id(id)
            .meta(meta);
        self.notify(acp::SessionUpdate::AgentMessageChunk(chunk));
    }

    /// The end of an automatic compaction (threshold or overflow) as a message, with pi's
    /// `compaction_end` in `_meta["agent-lsp"].compaction`; `/compact` shows its own result.
    pub(super) fn show_compaction(&self, event: &CompactionEvent) {
        let CompactionEvent::CompactionEnd(end) = event else {
            return;
        };
        if end.reason == CompactionReason::Manual || end.aborted {
            return;
        }
        let text = match (&end.result, &end.error_message) {
            (Some(result), _) => format!(
                "Compacted the conversation automatically ({}): {} tokens before, about {} after.",
                why(end.reason),
                result.tokens_before,
                result.estimated_tokens_after
            ),
            (None, Some(error)) => format!("Automatic compaction failed: {error}"),
            (None, None) => return,
        };
        let meta = serde_json::to_value(end.as_ref())
            .ok()
            .map(|end| serde_json::json!({"agent-lsp": {"compaction": end}}));
        self.say_with(&text, meta.and_then(|m| m.as_object().cloned()));
    }

    /// `available_commands_update` with the session's commands now, and again whenever its
    /// MCP servers' prompts change them.
    pub fn announce_commands(self: &Arc<Self>) {
        self.show_commands(self.command_list());
        if self.view.following_commands.swap(true, Ordering::Relaxed) {
            return;
        }
        follow_commands(
            self,
            &self.tools,
            AcpSession::command_list,
            AcpSession::show_commands,
        );
    }

    fn command_list(&self) -> Vec<CommandInfo> {
        list_commands(&self.commands, &self.tools)
    }

    fn show_commands(&self, commands: Vec<CommandInfo>) {
        let available = commands.into_iter().map(available_command).collect();
        let update = acp::AvailableCommandsUpdate::new(available);
        self.notify(acp::SessionUpdate::AvailableCommandsUpdate(update));
    }
}

/// One command as ACP lists it (without the slash); its argument hint becomes `input.hint`.
fn available_command(command: CommandInfo) -> acp::AvailableCommand {
    let input = (command.argument_hint).map(|hint| {
        acp::AvailableCommandInput::Unstructured(acp::UnstructuredCommandInput::new(hint))
    });
    acp::AvailableCommand::new(command.name, command.description).input(input)
}

fn why(reason: CompactionReason) -> &'static str {
    match reason {
        CompactionReason::Overflow => "the model's context overflowed",
        _ => "the context neared the model's window",
    }
}

fn summary_text(result: &CompactionResult) -> String {
    format!(
        "Compacted the conversation ({} tokens before, about {} after). Summary:\n\n{}",
        result.tokens_before, result.estimated_tokens_after, result.summary
    )
}

fn compact_error(e: CompactError) -> ResponseError {
    ResponseError::invalid_params(format!("/compact: {e}"))
}
