//! The summary: the conversation as text, the prompts (agent-lsp's own words in pi's
//! structure), and the summarisation request over the session's own model and stream.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::message::{
    AgentMessage, ContentBlock, MessageContent, StopReason, SystemMessage, ThinkingLevel, Usage,
    UserMessage, now_ms,
};
use crate::agent::model::Model;
use crate::agent::stream_contract::{
    AssistantMessageEvent, LlmContext, StreamFn, StreamOptions, StreamRequest,
};

use super::{FileLists, Preparation};

/// A tool result is cut to this many characters in the text that is summarised.
const TOOL_RESULT_MAX_CHARS: usize = 2000;

pub const SYSTEM_PROMPT: &str = "You condense conversations between a user and a coding \
assistant into checkpoints from which the work continues. Reply with the checkpoint alone, in \
the format asked for: do not continue the conversation, do not answer its questions, do not call \
tools.";

const FORMAT: &str = "## Goal
[What the user wants to achieve; several items if the session covers several tasks.]

## Constraints & Preferences
- [Requirements, constraints and preferences the user stated, or \"(none)\"]

## Progress
### Done
- [x] [Finished work]

### In Progress
- [ ] [Work under way]

### Blocked
- [What stops progress, if anything]

## Key Decisions
- **[Decision]**: [Why it was taken]

## Next Steps
1. [What to do next, in order]

## Critical Context
- [Data, examples or references needed to continue, or \"(none)\"]

Be brief in every section. Keep file paths, function names and error messages exactly as written.";

/// The first summary of a session.
pub fn initial_prompt() -> String {
    format!(
        "The conversation above is to be condensed into a checkpoint from which another model \
         will continue the work. Write it in exactly this format:\n\n{FORMAT}"
    )
}

/// A summary that merges new messages into the previous one (pi's iterative update).
pub fn update_prompt() -> String {
    format!(
        "The conversation above holds NEW messages. Merge them into the checkpoint given in \
         <previous-summary>:\n\
         - keep everything the previous checkpoint says, unless it no longer matters\n\
         - add the new progress, decisions and context\n\
         - move finished items from \"In Progress\" to \"Done\"\n\
         - rewrite \"Next Steps\" for where the work stands now\n\
         - keep file paths, function names and error messages exactly as written\n\n\
         Write the merged checkpoint in exactly this format:\n\n{FORMAT}"
    )
}

/// The start of a turn that is cut in two (its later part is kept verbatim).
pub const TURN_PREFIX_PROMPT: &str = "The messages above are the beginning of a turn whose later \
part is kept word for word after this checkpoint. Write a short checkpoint of that beginning, so \
that the later part can be followed:

## Original Request
[What the user asked for in this turn]

## Early Progress
- [Decisions taken and work done in these messages]

## Context for Suffix
- [What from these messages the later part needs]

Use only what the messages above say; do not guess at the later part.";

/// pi's `serializeConversation`: `[User]: …`, `[Assistant]: …`, `[Assistant tool calls]: …`,
/// `[Tool result]: …` (cut to 2000 characters), blank lines between. Thinking is left out, as
/// pi leaves it out.
pub fn serialize_conversation(messages: &[AgentMessage]) -> String {
    let mut parts = Vec::new();
    for message in messages {
        match message {
            AgentMessage::User(u) => {
                let text = u.content.to_text();
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
            AgentMessage::Assistant(a) => {
                if a.content.iter().any(|b| matches!(b, ContentBlock::Text(_))) {
                    let texts: Vec<&str> = a.content.iter().filter_map(|b| b.as_text()).collect();
                    parts.push(format!("[Assistant]: {}", texts.join("\n")));
                }
                let calls: Vec<String> = a.tool_calls().map(call_text).collect();
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            AgentMessage::ToolResult(r) => {
                let texts: Vec<&str> = r.content.iter().filter_map(|b| b.as_text()).collect();
                let text = texts.join("\n");
                if !text.is_empty() {
                    parts.push(format!("[Tool result]: {}", truncate(&text)));
                }
            }
            AgentMessage::System(_) | AgentMessage::Custom(_) => {}
        }
    }
    parts.join("\n\n")
}

/// `name(key=json, …)`.
fn call_text(call: &crate::agent::message::ToolCall) -> String {
    let args: Vec<String> = (call.arguments.as_object().into_iter().flatten())
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("{}({})", call.name, args.join(", "))
}

/// The first 2000 UTF-16 units and a note of how many more there were.
fn truncate(text: &str) -> String {
    let total: usize = text.encode_utf16().count();
    if total <= TOOL_RESULT_MAX_CHARS {
        return text.to_string();
    }
    let mut units = 0;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        if units + c.len_utf16() > TOOL_RESULT_MAX_CHARS {
            break;
        }
        units += c.len_utf16();
        end = i + c.len_utf8();
    }
    let rest = total - TOOL_RESULT_MAX_CHARS;
    format!("{}\n\n[... {rest} more characters truncated]", &text[..end])
}

/// The history request's text: the conversation, the previous summary, the instructions.
pub fn history_request(
    messages: &[AgentMessage],
    previous: Option<&str>,
    focus: Option<&str>,
) -> String {
    let mut text = format!(
        "<conversation>\n{}\n</conversation>\n\n",
        serialize_conversation(messages)
    );
    if let Some(previous) = previous {
        text.push_str(&format!(
            "<previous-summary>\n{previous}\n</previous-summary>\n\n"
        ));
    }
    text.push_str(&match previous {
        Some(_) => update_prompt(),
        None => initial_prompt(),
    });
    push_focus(&mut text, focus);
    text
}

/// The turn-prefix request's text.
pub fn turn_prefix_request(messages: &[AgentMessage], focus: Option<&str>) -> String {
    let mut text = format!(
        "# Conversation\n{}\n\n# Instructions\n{TURN_PREFIX_PROMPT}",
        serialize_conversation(messages)
    );
    push_focus(&mut text, focus);
    text
}

fn push_focus(text: &mut String, focus: Option<&str>) {
    if let Some(focus) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        text.push_str(&format!("\n\nAdditional focus: {focus}"));
    }
}

/// pi's `formatFileOperations`: the lists appended to the summary.
pub fn file_blocks(files: &FileLists) -> String {
    let mut sections = Vec::new();
    if !files.read_files.is_empty() {
        sections.push(format!(
            "<read-files>\n{}\n</read-files>",
            files.read_files.join("\n")
        ));
    }
    if !files.modified_files.is_empty() {
        sections.push(format!(
            "<modified-files>\n{}\n</modified-files>",
            files.modified_files.join("\n")
        ));
    }
    if sections.is_empty() {
        return String::new();
    }
    format!("\n\n{}", sections.join("\n\n"))
}

/// Why a summary could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("Compaction cancelled")]
    Aborted,
    #[error("{0}")]
    Failed(String),
}

/// The model, key and level a summary is written with: the session's current ones.
#[derive(Clone)]
pub struct Summarizer {
    pub stream_fn: Arc<dyn StreamFn>,
    pub model: Model,
    pub api_key: Option<String>,
    pub thinking: ThinkingLevel,
    pub session_id: Option<String>,
}

impl Summarizer {
    /// pi's `compact`: the history summary (and a split turn's prefix summary), merged, with
    /// the file lists appended.
    pub async fn summarize(
        &self,
        prep: &Preparation,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<(String, Option<Usage>), SummaryError> {
        let previous = prep.previous_summary.as_deref();
        let (mut summary, usage) = if prep.is_split_turn && !prep.turn_prefix_messages.is_empty() {
            let (history, mut usage) = if prep.messages_to_summarize.is_empty() {
                (previous.unwrap_or("No prior history.").to_string(), None)
            } else {
                let text = history_request(&prep.messages_to_summarize, previous, focus);
                let (h, u) = self.complete(text, "Summarization", cancel).await?;
                (h, Some(u))
            };
            let text = turn_prefix_request(&prep.turn_prefix_messages, focus);
            let (prefix, prefix_usage) = self
                .complete(text, "Turn prefix summarization", cancel)
                .await?;
            match &mut usage {
                Some(u) => u.accumulate(&prefix_usage),
                None => usage = Some(prefix_usage),
            }
            let merged = format!("{history}\n\n---\n\n**Turn Context (split turn):**\n\n{prefix}");
            (merged, usage)
        } else {
            let text = history_request(&prep.messages_to_summarize, previous, focus);
            let (h, u) = self.complete(text, "Summarization", cancel).await?;
            (h, Some(u))
        };
        summary.push_str(&file_blocks(&prep.files.lists()));
        Ok((summary, usage))
    }

    /// One summarisation request: the system prompt and one user message; the answer's text.
    async fn complete(
        &self,
        prompt: String,
        label: &str,
        cancel: &CancellationToken,
    ) -> Result<(String, Usage), SummaryError> {
        let now = now_ms();
        let context = LlmContext::new(vec![
            AgentMessage::from(SystemMessage {
                content: MessageContent::Text(SYSTEM_PROMPT.into()),
                timestamp: now,
                ..SystemMessage::default()
            }),
            AgentMessage::from(UserMessage {
                content: MessageContent::Blocks(vec![ContentBlock::text(prompt)]),
                timestamp: now,
            }),
        ]);
        let options = StreamOptions {
            api_key: self.api_key.clone(),
            reasoning: (self.model.reasoning && self.thinking != ThinkingLevel::Off)
                .then_some(self.thinking),
            signal: cancel.child_token(),
            session_id: self.session_id.clone(),
            ..StreamOptions::default()
        };
        let mut stream = self.stream_fn.stream(StreamRequest {
            model: self.model.clone(),
            context,
            options,
        });
        let message = loop {
            let event = tokio::select! {
                event = stream.next() => event,
                () = cancel.cancelled() => return Err(SummaryError::Aborted),
            };
            match event {
                Some(AssistantMessageEvent::Done { message, .. }) => break *message,
                Some(AssistantMessageEvent::Error { error, .. }) => break *error,
                Some(_) => {}
                None => {
                    return Err(SummaryError::Failed(format!(
                        "{label} failed: the stream ended without an answer"
                    )));
                }
            }
        };
        match message.stop_reason {
            StopReason::Aborted => return Err(SummaryError::Aborted),
            StopReason::Error => {
                let why = message.error_message.as_deref().unwrap_or("Unknown error");
                return Err(SummaryError::Failed(format!("{label} failed: {why}")));
            }
            StopReason::Length => {
                return Err(SummaryError::Failed(format!(
                    "{label} failed: generation hit the token cap and the summary is incomplete"
                )));
            }
            _ => {}
        }
        if message.tool_calls().next().is_some() {
            return Err(SummaryError::Failed(format!(
                "{label} attempted to call a tool"
            )));
        }
        Ok((message.text(), message.usage))
    }
}
