//! After a crash: what each interrupted tool call did, told to the model.
//!
//! When a session is resumed and its branch ends with tool calls that have no result (the
//! process died while they ran), each gets a tool result (an error) stating what the journal
//! knows: it ran (its result was lost), it did not run, or it may have run partly. The result
//! sits where the lost one would have been, so the model reads the statement next to its own
//! call, in every provider's format, and the file stays a valid pi session (pi replays these
//! results as any other).

use std::collections::HashSet;

use serde_json::json;

use crate::agent::message::{AgentMessage, ContentBlock, ToolResultMessage, now_ms};
use crate::session::{EntryKind, SessionError, SessionFile};

use super::blobs::hash;
use super::{Effect, JOURNALED, Phase};

/// What the journal says about one interrupted call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ran,
    NotRun,
    MayHaveHalfRun,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ran => "ran",
            Status::NotRun => "notRun",
            Status::MayHaveHalfRun => "mayHaveHalfRun",
        }
    }
}

/// The start of every statement's text.
pub const INTERRUPTED: &str =
    "agent-lsp stopped unexpectedly (a crash or kill) while this tool call was pending.";

/// Appends a statement result for every tool call of the branch's last assistant message that
/// has none; returns how many it appended.
pub fn settle_interrupted(record: &mut SessionFile) -> Result<usize, SessionError> {
    let pending = {
        let branch = record.branch_path();
        let Some(last) = branch.iter().rposition(|e| {
            matches!(
                &e.kind,
                EntryKind::Message {
                    message: AgentMessage::Assistant(_)
                }
            )
        }) else {
            return Ok(0);
        };
        let EntryKind::Message {
            message: AgentMessage::Assistant(assistant),
        } = &branch[last].kind
        else {
            return Ok(0);
        };
        let mut answered = HashSet::new();
        let mut effects = Vec::new();
        for entry in &branch[last + 1..] {
            match &entry.kind {
                EntryKind::Message {
                    message: AgentMessage::ToolResult(r),
                } => {
                    answered.insert(r.tool_call_id.clone());
                }
                // A later prompt: the calls were settled some other way.
                EntryKind::Message {
                    message: AgentMessage::User(_),
                } => return Ok(0),
                _ => effects.extend(Effect::of(entry)),
            }
        }
        assistant
            .tool_calls()
            .filter(|c| !answered.contains(&c.id))
            .map(|c| {
                let (status, text) = statement(&c.name, &c.id, &effects);
                (c.id.clone(), c.name.clone(), status, text)
            })
            .collect::<Vec<_>>()
    };
    for (id, name, status, text) in &pending {
        let result = ToolResultMessage {
            tool_call_id: id.clone(),
            tool_name: name.clone(),
            content: vec![ContentBlock::text(format!("{INTERRUPTED} {text}"))],
            details: Some(json!({"interrupted": true, "status": status.as_str()})),
            usage: None,
            is_error: true,
            duration_ms: None,
            timestamp: now_ms(),
        };
        record.append_message(&AgentMessage::ToolResult(result))?;
    }
    Ok(pending.len())
}

/// The status of call `id` of tool `tool` and the words for the model.
fn statement(tool: &str, id: &str, effects: &[Effect]) -> (Status, String) {
    let of_call: Vec<&Effect> = effects.iter().filter(|e| e.tool_call_id == id).collect();
    let done = of_call.iter().find(|e| e.phase == Phase::Done);
    let intended = of_call.iter().find(|e| e.phase == Phase::Intended);
    if let Some(done) = done {
        let files: Vec<&str> = done.files.iter().map(|f| f.path.as_str()).collect();
        let changed = match files.is_empty() {
            true => "it changed no file".to_string(),
            false => format!("it changed {}", files.join(", ")),
        };
        return (
            Status::Ran,
            format!(
                "The journal says it ran to the end ({changed}); its output was lost. Do not run it again just to see the output without checking the files first."
            ),
        );
    }
    let Some(intended) = intended else {
        return match JOURNALED.contains(&tool) {
            true => (
                Status::NotRun,
                "The journal says it did not run: nothing was changed by it.".into(),
            ),
            false if crate::tools::is_read_only(tool) => (
                Status::NotRun,
                "It changes nothing; its output was lost. Run it again if needed.".into(),
            ),
            false => (
                Status::MayHaveHalfRun,
                "agent-lsp does not journal this tool: it may have run, partly or wholly.".into(),
            ),
        };
    };
    if tool == "bash" {
        return (
            Status::MayHaveHalfRun,
            "The journal says the command was started and did not finish: it may have run partly or wholly. Check its effects before running it again.".into(),
        );
    }
    let mut changed = Vec::new();
    for file in &intended.files {
        let now = std::fs::read(&file.path).ok().map(|b| hash(&b));
        if now != file.before {
            changed.push(file.path.as_str());
        }
    }
    match changed.is_empty() {
        true => (
            Status::NotRun,
            format!(
                "The journal says it was about to change {} and the file is unchanged on disk: it did not take effect.",
                intended
                    .files
                    .iter()
                    .map(|f| f.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        false => (
            Status::MayHaveHalfRun,
            format!(
                "The journal says it was interrupted while changing {}, which differs from before: it may have been applied partly or wholly. Read the file before changing it again.",
                changed.join(", ")
            ),
        ),
    }
}
