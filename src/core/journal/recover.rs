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
use crate::store::{SessionError, SessionFile};

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
        let Some(last) = branch
            .iter()
            .rposition(|e| matches!(e.kind.message(), Some(AgentMessage::Assistant(_))))
        else {
            return Ok(0);
        };
        let Some(AgentMessage::Assistant(assistant)) = branch[last].kind.message() else {
            return Ok(0);
        };
        let mut answered = HashSet::new();
        let mut effects = Vec::new();
        for entry in &branch[last + 1..] {
            match entry.kind.message() {
                Some(AgentMessage::ToolResult(r)) => {
                    answered.insert(r.tool_call_id.clone());
                }
                // A later prompt: the calls were settled some other way.
                Some(AgentMessage::User(_)) => return Ok(0),
                _ => effects.extend(Effect::of(entry)),
            }
        }
        assistant
            .tool_calls()
            .filter(|c| !answered.contains(&c.id))
            .map(|c| {
                let (status, text, done) = statement(record, &c.name, &c.id, &effects);
                (c.id.clone(), c.name.clone(), status, text, done)
            })
            .collect::<Vec<_>>()
    };
    for (id, name, status, text, done) in &pending {
        if let Some(done) = done {
            record.append(done.clone().into_entry())?;
        }
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
        record.append_message(&AgentMessage::from(result))?;
    }
    Ok(pending.len())
}

/// The status of call `id` of tool `tool`, the words for the model, and for a command cut off
/// with its workspace known before it, the `done` entry of what changed since.
fn statement(
    record: &SessionFile,
    tool: &str,
    id: &str,
    effects: &[Effect],
) -> (Status, String, Option<Effect>) {
    let (status, text) = match cut_off_command(record, tool, id, effects) {
        Some((text, done)) => return (Status::MayHaveHalfRun, text, Some(done)),
        None => call_statement(tool, id, effects),
    };
    (status, text, None)
}

/// A `bash` call with an `intended` entry and no `done`, whose manifest is stored: what changed
/// since it started, as its `done` entry (marked interrupted) and the words for the model.
fn cut_off_command(
    record: &SessionFile,
    tool: &str,
    id: &str,
    effects: &[Effect],
) -> Option<(String, Effect)> {
    let of_call = || effects.iter().filter(|e| e.tool_call_id == id);
    if tool != "bash" || of_call().any(|e| e.phase == Phase::Done) {
        return None;
    }
    let intended = of_call().find(|e| e.phase == Phase::Intended)?;
    let store = super::store_of(record)?;
    let root = std::path::Path::new(record.cwd());
    let git = super::git::GitRepo::discover(root);
    let before = super::manifest::load(&store, root, intended.snapshot.as_deref()?, git.as_ref())?;
    let (mut files, unchecked) = super::manifest::changes_since(root, &before)?;
    keep_befores(git.as_ref(), record.id(), &mut files);
    let listed: Vec<String> = files
        .iter()
        .map(|f| {
            let how = match (&f.before, &f.after, f.before_known) {
                (_, None, _) => "deleted",
                (None, Some(_), true) => "created",
                _ => "modified",
            };
            format!("{} ({how})", f.path)
        })
        .collect();
    let changed = match listed.is_empty() {
        true => "no file of the workspace differs from before it".to_string(),
        false => format!(
            "these files differ from before it: {}; the journal holds their content from before, \
             so the run can be reviewed and reverted",
            listed.join(", ")
        ),
    };
    let unchecked = match unchecked {
        0 => String::new(),
        n => format!(
            " {n} file(s) could not be compared: their content before the command was not kept."
        ),
    };
    let text = format!(
        "The journal says the command was started and did not finish: it may have run partly or wholly. Since it started, {changed}.{unchecked} Check its effects before running it again."
    );
    let done = Effect {
        run: intended.run.clone(),
        interrupted: true,
        ..Effect::new(Phase::Done, id, tool, files)
    };
    Some((text, done))
}

/// Keeps the git blobs of `files`' before-images under the session's name, as a finished
/// command's are; one the repository lost is not revertible, and says why.
fn keep_befores(git: Option<&super::git::GitRepo>, session: &str, files: &mut [super::FileEffect]) {
    let oids: Vec<String> = (files.iter())
        .filter_map(|f| f.before.as_deref()?.strip_prefix("git:"))
        .map(String::from)
        .collect();
    let (Some(repo), false) = (git, oids.is_empty()) else {
        return;
    };
    let missing = match repo.keep(session, &oids) {
        Ok(kept) => kept.missing,
        Err(e) => {
            tracing::warn!(%e, "cannot keep the interrupted command's git blobs");
            return;
        }
    };
    for file in files.iter_mut() {
        let gone = (file.before.as_deref())
            .and_then(|b| b.strip_prefix("git:"))
            .is_some_and(|oid| missing.iter().any(|m| m == oid));
        if gone {
            file.before = None;
            file.before_known = false;
            file.unknown = Some(super::images::Unknown::GitBlobGone);
        }
    }
}

/// The status of call `id` of tool `tool` and the words for the model, from its entries alone.
fn call_statement(tool: &str, id: &str, effects: &[Effect]) -> (Status, String) {
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
        let now = std::fs::read(&file.path).ok();
        if !super::image::is(file.before.as_deref(), now.as_deref()) {
            changed.push(file.path.as_str());
        }
    }
    match changed.is_empty() {
        true => (
            Status::NotRun,
            format!(
                "The journal says it was about to change {} and the file is unchanged on disk: it did not take effect there (an editor may still hold the change unsaved in its buffer).",
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

#[cfg(test)]
mod tests {
    use super::super::blobs::hash;
    use super::*;
    use crate::store::EntryKind;
    use serde_json::json;

    fn effect(phase: &str, id: &str, tool: &str, files: serde_json::Value) -> EntryKind {
        EntryKind::Custom {
            custom_type: super::super::EFFECT.into(),
            data: Some(
                json!({"phase": phase, "run": "r", "toolCallId": id, "tool": tool, "files": files}),
            ),
        }
    }

    /// One call that ran (its result lost), one cut off after its file changed, one never
    /// started, one answered: three statements, in call order.
    #[test]
    fn each_interrupted_call_gets_the_journals_statement() {
        let dir = tempfile::tempdir().unwrap();
        let changed = dir.path().join("changed.txt");
        std::fs::write(&changed, "half\n").unwrap();
        let mut record = SessionFile::create_at(&dir.path().join("s.jsonl"), dir.path()).unwrap();
        let user: AgentMessage =
            serde_json::from_value(json!({"role": "user", "content": "go", "timestamp": 0}))
                .unwrap();
        record.append_message(&user).unwrap();
        let call = |id: &str, name: &str| json!({"type": "toolCall", "id": id, "name": name, "arguments": {}});
        let assistant: AgentMessage = serde_json::from_value(json!({
            "role": "assistant",
            "content": [call("w", "write"), call("e", "edit"), call("b", "bash"), call("r", "read")],
            "api": "openai-completions", "provider": "openai", "model": "m",
            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                      "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}},
            "stopReason": "toolUse", "timestamp": 0
        }))
        .unwrap();
        record.append_message(&assistant).unwrap();
        let path = changed.display().to_string();
        record
            .append(effect(
                "intended",
                "w",
                "write",
                json!([{"path": "/x", "before": null}]),
            ))
            .unwrap();
        record
            .append(effect(
                "done",
                "w",
                "write",
                json!([{"path": "/x", "before": null, "after": "ab"}]),
            ))
            .unwrap();
        record
            .append(effect(
                "intended",
                "e",
                "edit",
                json!([{"path": path, "before": hash(b"whole\n")}]),
            ))
            .unwrap();
        let read: AgentMessage =
            serde_json::from_value(json!({"role": "toolResult", "toolCallId": "r",
            "toolName": "read", "content": [], "isError": false, "timestamp": 0}))
            .unwrap();
        record.append_message(&read).unwrap();

        assert_eq!(settle_interrupted(&mut record).unwrap(), 3);
        let statuses: Vec<(String, String)> = record
            .messages()
            .iter()
            .filter_map(|m| match m {
                AgentMessage::ToolResult(r) if r.is_error => Some((
                    r.tool_call_id.clone(),
                    r.details.as_ref().unwrap()["status"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                )),
                _ => None,
            })
            .collect();
        let expected = [("w", "ran"), ("e", "mayHaveHalfRun"), ("b", "notRun")];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(statuses, expected);
        // Settled once: a second resume adds nothing.
        assert_eq!(settle_interrupted(&mut record).unwrap(), 0);
    }
}
