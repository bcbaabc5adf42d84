//! One child agent: built from the parent's parts, run to completion, recorded in a pi session
//! file of its own (`<parent file without .jsonl>/subagents/<time>_<id>.jsonl`, its header's
//! `parentSession` the parent's file).

use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::agents::AgentDef;
use super::parts::{ChildParts, TaskArgs};
use super::{ChildEvent, Parent, SubagentStop};
use crate::agent::event::AgentEvent;
use crate::agent::hooks::{BeforeToolCallHook, GetApiKeyHook};
use crate::agent::message::{AgentMessage, ContentBlock, StopReason, ThinkingLevel};
use crate::agent::stream_contract::StreamOptions;
use crate::agent::tool::{AgentToolResult, ToolError, ToolRef};
use crate::agent::tool_exec::OPERATION_ABORTED as ABORTED;
use crate::agent::{Agent, AgentListener, AgentOptions, RunOutcome, max_turns};
use crate::core::journal::Journal;
use crate::model_registry::{ResolvedModel, clamp_thinking, resolve_model};
use crate::store::SessionFile;

type ChildRecord = Arc<Mutex<SessionFile>>;

/// At most this many times in a row a `SubagentStop` hook keeps a child going (Claude Code's
/// `stop_hook_active` lets a hook stop itself; this bounds one that never does).
const MAX_CONTINUATIONS: usize = 8;

/// Runs `agent` on the call's prompt; the result is its final answer. `cancel` (the parent's
/// abort) aborts the child.
pub(super) async fn run(
    parts: &ChildParts,
    agent: &AgentDef,
    call_id: &str,
    args: &TaskArgs,
    cancel: CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let Some(parent) = parts.parent.get().cloned() else {
        return Err(ToolError::new("The task tool has no session to run in."));
    };
    let own = own_model(parts, agent)?;
    let settings = parts.controls.settings();
    let model = (own.as_ref()).map_or_else(|| parts.controls.model(), |o| o.model.clone());
    let thinking = clamp_thinking(&model, settings.thinking_level);
    let record = open_record(parts, agent, &model, thinking);
    let session_file = record
        .lock()
        .ok()
        .and_then(|r| r.path().map(Path::to_path_buf));
    let child_id = record.lock().map(|r| r.id().to_owned()).unwrap_or_default();
    let mut options = AgentOptions::new(parts.stream_fn.clone());
    options.model = model;
    options.thinking_level = thinking;
    options.system_prompt = Some(system_prompt(agent, &parts.cwd));
    options.tools = tools(parts, agent);
    match own {
        // An agent of its own model keeps it, with that provider's key.
        Some(own) => options.hooks.get_api_key = Some(fixed_key(own.api_key)),
        // Else the session's live model: a switch reaches the child at its next request too.
        None => {
            options.hooks.get_api_key = Some(parts.controls.api_key_hook());
            options.hooks.prepare_request = Some(parts.controls.prepare_request_hook());
        }
    }
    options.hooks.finish_turn = Some(max_turns(parts.max_turns));
    options.hooks.before_tool_call = Some(approval_hook(
        Arc::downgrade(&parent),
        parts.journal.clone(),
        call_id,
    ));
    options.stream_options = StreamOptions {
        session_id: Some(child_id.clone()),
        ..StreamOptions::default()
    };
    let child = Agent::new(options);
    child.subscribe(listener(parent.clone(), record, call_id, &agent.name));
    let mut outcome = run_once(&child, &args.prompt, &cancel).await?;
    let mut turns_taken = turns(&outcome);
    // The session's `SubagentStop` hooks may keep the child going, with their reason.
    for continued in 0..MAX_CONTINUATIONS {
        if outcome.aborted || outcome.error.is_some() {
            break;
        }
        let stop = SubagentStop {
            agent: &agent.name,
            agent_id: &child_id,
            stop_hook_active: continued > 0,
            last_message: &last_words(&outcome),
        };
        let Some(reason) = parent.subagent_stop(stop, &cancel).await else {
            break;
        };
        let text = format!("A SubagentStop hook did not let you stop yet:\n{reason}");
        outcome = run_once(&child, &text, &cancel).await?;
        turns_taken += turns(&outcome);
    }
    let details = json!({
        "agent": agent.name,
        "description": args.description,
        "sessionFile": session_file,
        "turns": turns_taken,
    });
    let mut result = answer(&outcome, agent, parts.max_turns)?;
    result.details = Some(details);
    Ok(result)
}

/// One run of the child on `text`, aborted with the parent's call.
async fn run_once(
    child: &Agent,
    text: &str,
    cancel: &CancellationToken,
) -> Result<RunOutcome, ToolError> {
    let handle = child
        .prompt_text(text)
        .map_err(|e| ToolError::new(e.to_string()))?;
    let wait = handle.wait();
    tokio::pin!(wait);
    Ok(tokio::select! {
        outcome = &mut wait => outcome,
        () = cancel.cancelled() => {
            child.abort();
            wait.await
        }
    })
}

/// The text of the run's last assistant message.
fn last_words(outcome: &RunOutcome) -> String {
    let last = outcome.new_messages.iter().rev().find_map(|m| match m {
        AgentMessage::Assistant(a) => Some(a),
        _ => None,
    });
    let text: Vec<&str> = (last.iter().flat_map(|a| a.content.iter()))
        .filter_map(ContentBlock::as_text)
        .collect();
    text.join("\n")
}

/// The agent's own model, resolved now (a change of `models.json` or a key is seen at once).
fn own_model(parts: &ChildParts, agent: &AgentDef) -> Result<Option<ResolvedModel>, ToolError> {
    let Some(name) = &agent.model else {
        return Ok(None);
    };
    resolve_model(Some(name), &parts.env)
        .map(Some)
        .map_err(|e| {
            ToolError::new(format!(
                "The {} agent's model {name} cannot be used: {e}",
                agent.name
            ))
        })
}

fn fixed_key(key: Option<String>) -> GetApiKeyHook {
    Arc::new(move |_provider, _cancel| Box::pin(std::future::ready(Ok(key.clone()))))
}

/// The child's final answer, or why there is none.
fn answer(
    outcome: &RunOutcome,
    agent: &AgentDef,
    limit: usize,
) -> Result<AgentToolResult, ToolError> {
    if outcome.aborted {
        return Err(ToolError::new(ABORTED));
    }
    let last = outcome.new_messages.iter().rev().find_map(|m| match m {
        AgentMessage::Assistant(a) => Some(a),
        _ => None,
    });
    if let Some(error) = &outcome.error {
        return Ok(AgentToolResult::error(format!(
            "The {} agent failed: {error}",
            agent.name
        )));
    }
    let text = last_words(outcome);
    let stopped = last.is_some_and(|a| a.stop_reason == StopReason::ToolUse);
    Ok(match (text.trim().is_empty(), stopped) {
        (_, true) => AgentToolResult::error(format!(
            "The {} agent stopped at its limit of {limit} turns before it finished. Its last \
             words: {}",
            agent.name,
            if text.trim().is_empty() {
                "(none)"
            } else {
                &text
            }
        )),
        (true, false) => AgentToolResult::text(format!(
            "The {} agent finished without an answer.",
            agent.name
        )),
        (false, false) => AgentToolResult::text(text),
    })
}

fn turns(outcome: &RunOutcome) -> usize {
    (outcome.new_messages.iter())
        .filter(|m| matches!(m, AgentMessage::Assistant(_)))
        .count()
}

/// The parent's tools the agent may use (as they are now, MCP servers' included).
fn tools(parts: &ChildParts, agent: &AgentDef) -> Vec<ToolRef> {
    let current = (parts.tools.get().and_then(Weak::upgrade)).map(|t| t.current());
    (current.unwrap_or_default().into_iter())
        .filter(|t| agent.allows(t.name()))
        .collect()
}

fn system_prompt(agent: &AgentDef, cwd: &Path) -> String {
    let date = crate::store::time::iso_now();
    let today = date.get(..10).unwrap_or(&date);
    format!(
        "{}\n\nCurrent working directory: {}\nToday's date: {today}",
        agent.prompt,
        cwd.display()
    )
}

/// The child's session file next to the parent's, or in memory when the parent's is (or when
/// it cannot be created: the child still runs, unrecorded).
fn open_record(
    parts: &ChildParts,
    agent: &AgentDef,
    model: &crate::agent::model::Model,
    thinking: ThinkingLevel,
) -> ChildRecord {
    let parent = (parts.record.lock().ok()).and_then(|r| r.path().map(Path::to_path_buf));
    let created = parent.as_deref().map(|parent| {
        let dir = parent.with_extension("").join("subagents");
        let parent = Some(parent.display().to_string());
        SessionFile::create_in(&dir, &parts.cwd, parent)
    });
    let mut file = match created {
        Some(Ok(file)) => file,
        Some(Err(e)) => {
            tracing::warn!(
                agent = agent.name,
                "cannot create the subagent's session file: {e}"
            );
            SessionFile::in_memory(&parts.cwd)
        }
        None => SessionFile::in_memory(&parts.cwd),
    };
    // pi reads the model and thinking level from these entries.
    let recorded = file
        .append_model_change(&model.provider, &model.id)
        .and_then(|_| match thinking {
            ThinkingLevel::Off => Ok(()),
            level => file.append_thinking_level(level).map(drop),
        });
    if let Err(e) = recorded {
        tracing::warn!(
            agent = agent.name,
            "cannot record the subagent's model: {e}"
        );
    }
    Arc::new(Mutex::new(file))
}

/// The child's calls go through the parent's approval gate; each is journaled as the `task`
/// call's (`task`).
fn approval_hook(
    parent: Weak<dyn Parent>,
    journal: Arc<Journal>,
    task: &str,
) -> BeforeToolCallHook {
    let task = task.to_owned();
    Arc::new(move |ctx, cancel| {
        let parent = parent.clone();
        journal.assign(&ctx.tool_call.id, &task);
        Box::pin(async move {
            let Some(parent) = parent.upgrade() else {
                return Ok(Some(crate::core::approval::blocked(
                    "The session is closed".into(),
                )));
            };
            Ok(parent.decide(&ctx, &cancel).await)
        })
    })
}

/// Records each finished message of the child and shows every event under the `task` call.
fn listener(
    parent: Arc<dyn Parent>,
    record: ChildRecord,
    call_id: &str,
    agent: &str,
) -> AgentListener {
    let (call_id, agent) = (call_id.to_owned(), agent.to_owned());
    Arc::new(move |event: Arc<AgentEvent>, _cancel| {
        if let AgentEvent::MessageEnd { message } = event.as_ref()
            && let Ok(mut record) = record.lock()
            && let Err(e) = record.append_message(message)
        {
            tracing::warn!(agent, "cannot record the subagent's session: {e}");
        }
        parent.show(&ChildEvent {
            parent_tool_call_id: call_id.clone(),
            agent: agent.clone(),
            event,
        });
        Box::pin(std::future::ready(Ok(())))
    })
}
