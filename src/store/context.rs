//! Building the model's context from the session tree (pi's `buildSessionContext`, spec §C5).
//!
//! pi keeps extended roles (`bashExecution`, `custom`, summaries) in the transcript and converts
//! them to user text only when calling the model. agent-lsp's loop passes unknown roles through
//! untouched, so the conversion happens here: the context is ready to hand to the loop.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::agent::message::{AgentMessage, MessageContent, ThinkingLevel, UserMessage};

use super::entry::{EntryKind, SessionEntry};
use super::time::ms_from_iso;

/// `provider` and `modelId` of the model a session last used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelRef {
    pub provider: String,
    pub model_id: String,
}

/// What a session contributes to the next run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionContext {
    pub messages: Vec<AgentMessage>,
    pub model: Option<ModelRef>,
    pub thinking_level: ThinkingLevel,
}

pub const COMPACTION_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
pub const COMPACTION_SUFFIX: &str = "\n</summary>";
pub const BRANCH_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
pub const BRANCH_SUFFIX: &str = "\n</summary>";

/// The root→leaf path of entries ending at `leaf` (empty for `None`).
pub fn path_to<'a>(entries: &'a [SessionEntry], leaf: Option<&str>) -> Vec<&'a SessionEntry> {
    let index: HashMap<&str, &SessionEntry> = entries.iter().map(|e| (e.id.as_str(), e)).collect();
    let mut path = Vec::new();
    let mut cursor = leaf.and_then(|id| index.get(id).copied());
    while let Some(entry) = cursor {
        // A cycle in a hand-edited file must not hang the loader.
        if path.len() > entries.len() {
            break;
        }
        path.push(entry);
        cursor = entry
            .parent_id
            .as_deref()
            .and_then(|id| index.get(id).copied());
    }
    path.reverse();
    path
}

/// Builds the context for the path ending at `leaf`.
pub fn build_context(entries: &[SessionEntry], leaf: Option<&str>) -> SessionContext {
    context_of_path(&path_to(entries, leaf))
}

/// The context of a root→leaf path of entries.
pub fn context_of_path(path: &[&SessionEntry]) -> SessionContext {
    let mut context = SessionContext::default();
    for entry in path {
        match &entry.kind {
            EntryKind::ThinkingLevelChange { thinking_level } => {
                context.thinking_level = ThinkingLevel::parse(thinking_level).unwrap_or_default();
            }
            EntryKind::ModelChange { provider, model_id } => {
                context.model = Some(ModelRef {
                    provider: provider.clone(),
                    model_id: model_id.clone(),
                });
            }
            EntryKind::Message { message }
                if context.model.is_none() && matches!(message, AgentMessage::Assistant(_)) =>
            {
                let AgentMessage::Assistant(a) = message else {
                    continue;
                };
                context.model = Some(ModelRef {
                    provider: a.provider.clone(),
                    model_id: a.model.clone(),
                });
            }
            _ => {}
        }
    }
    let compaction = path
        .iter()
        .rposition(|e| matches!(e.kind, EntryKind::Compaction { .. }));
    let Some(c) = compaction else {
        context.messages = path.iter().filter_map(|e| entry_message(e)).collect();
        return context;
    };
    let EntryKind::Compaction {
        summary,
        first_kept_entry_id,
        ..
    } = &path[c].kind
    else {
        return context;
    };
    let stamp = ms_from_iso(&path[c].timestamp).unwrap_or(0);
    context.messages.push(user_text(
        format!("{COMPACTION_PREFIX}{summary}{COMPACTION_SUFFIX}"),
        stamp,
    ));
    if let Some(kept) = path[..c].iter().position(|e| &e.id == first_kept_entry_id) {
        context
            .messages
            .extend(path[kept..c].iter().filter_map(|e| entry_message(e)));
    }
    context
        .messages
        .extend(path[c + 1..].iter().filter_map(|e| entry_message(e)));
    context
}

/// The LLM-ready message an entry contributes, if any.
pub fn entry_message(entry: &SessionEntry) -> Option<AgentMessage> {
    let stamp = ms_from_iso(&entry.timestamp).unwrap_or(0);
    match &entry.kind {
        EntryKind::Message { message } => convert_message(message),
        EntryKind::CustomMessage { content, .. } => Some(AgentMessage::from(UserMessage {
            content: content.clone(),
            timestamp: stamp,
        })),
        EntryKind::BranchSummary { summary, .. } => Some(user_text(
            format!("{BRANCH_PREFIX}{summary}{BRANCH_SUFFIX}"),
            stamp,
        )),
        _ => None,
    }
}

/// Converts pi's extended roles to user text; LLM roles and unknown roles pass through.
fn convert_message(message: &AgentMessage) -> Option<AgentMessage> {
    let AgentMessage::Custom(custom) = message else {
        return Some(message.clone());
    };
    let stamp = message.timestamp().unwrap_or(0);
    let fields = &custom.fields;
    match custom.role.as_str() {
        "bashExecution" => {
            if fields.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                return None;
            }
            Some(user_text(bash_execution_text(fields), stamp))
        }
        "custom" | "hookMessage" => {
            let content = fields
                .get("content")
                .cloned()
                .and_then(|c| serde_json::from_value::<MessageContent>(c).ok())
                .unwrap_or_default();
            Some(AgentMessage::from(UserMessage {
                content,
                timestamp: stamp,
            }))
        }
        "branchSummary" => Some(user_text(
            format!(
                "{BRANCH_PREFIX}{}{BRANCH_SUFFIX}",
                str_field(fields, "summary")
            ),
            stamp,
        )),
        "compactionSummary" => Some(user_text(
            format!(
                "{COMPACTION_PREFIX}{}{COMPACTION_SUFFIX}",
                str_field(fields, "summary")
            ),
            stamp,
        )),
        _ => Some(message.clone()),
    }
}

/// pi's `bashExecutionToText`: the command a user ran with `!`, shown to the model.
fn bash_execution_text(fields: &Map<String, Value>) -> String {
    let mut text = format!("Ran `{}`\n", str_field(fields, "command"));
    let output = str_field(fields, "output");
    if output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{output}\n```"));
    }
    if fields.get("cancelled").and_then(Value::as_bool) == Some(true) {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = fields.get("exitCode").and_then(Value::as_i64)
        && code != 0
    {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if fields.get("truncated").and_then(Value::as_bool) == Some(true)
        && let Some(full) = fields.get("fullOutputPath").and_then(Value::as_str)
    {
        text.push_str(&format!("\n\n[Output truncated. Full output: {full}]"));
    }
    text
}

fn str_field<'a>(fields: &'a Map<String, Value>, key: &str) -> &'a str {
    fields.get(key).and_then(Value::as_str).unwrap_or("")
}

fn user_text(text: String, timestamp: i64) -> AgentMessage {
    AgentMessage::from(UserMessage {
        content: MessageContent::Text(text),
        timestamp,
    })
}
