//! What `agent-lsp run` prints on stdout: a human transcript, or one JSON event per line.
//!
//! Human: the assistant's text as it streams, one line per tool call with its status, errors on
//! stderr, and a usage/cost line at the end. JSON (`--json`): every [`AgentEvent`] exactly as the
//! daemon sends it (`message_update` carries only the delta), then one `agent_settled` line.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::agent::event::AgentEvent;
use crate::agent::message::{AgentMessage, ContentBlock, Usage};
use crate::agent::stream_contract::AssistantMessageEvent;
use crate::core::commands::BuiltinOutcome;
use crate::core::loop_guard::{Guard, GuardEvent};
use crate::core::subagent::ChildEvent;
use crate::core::{CompactionEvent, HookRun, PlanUpdate};
use crate::tools::{JobInfo, JobStatus};

/// A sink for run events. Write errors (a closed pipe) are ignored: output is best effort,
/// the session file is the record.
pub trait Renderer: Send + Sync {
    fn event(&self, event: &AgentEvent);
    /// A loop guard warned or stopped the run.
    fn loop_guard(&self, event: &GuardEvent);
    /// A compaction started or ended.
    fn compaction(&self, event: &CompactionEvent);
    /// The model replaced its plan (`todo_write`).
    fn plan(&self, update: &PlanUpdate);
    /// Called once after the run: whether it was aborted or stopped by a guard, the run's and
    /// the session's usage.
    fn settled(&self, aborted: bool, stopped: Option<Guard>, run: &Usage, session: &Usage);
    /// A built-in command (`/model`) ran instead of a prompt.
    fn command(&self, outcome: &BuiltinOutcome);
    /// A background job started, ended or was stopped.
    fn job(&self, job: &JobInfo);
    /// A hook ran.
    fn hook(&self, run: &HookRun);
    /// A subagent's event (a `task` call's child): only `--json` shows them.
    fn child(&self, _event: &ChildEvent) {}
}

/// `--json`. Lines are collected and written to stdout in batches: whenever the async runtime
/// runs out of work ([`flush_json_lines`], the CLI runtime's park hook), when a batch passes
/// [`BATCH_BYTES`], and when the run settles. A fast stream then costs one `write` per burst of
/// events instead of one per delta (BENCH.md, scenario 2), without a thread to wake per line,
/// and an idle stream still shows every event at once.
#[derive(Default)]
pub struct JsonRenderer;

/// Lines waiting for the next flush (one run per process: the CLI's stdout is global too).
static PENDING: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// A batch this large is written at once, even while the runtime stays busy.
pub const BATCH_BYTES: usize = 64 * 1024;

/// Writes the pending JSON lines to stdout. Cheap when there are none.
pub fn flush_json_lines() {
    let Ok(mut pending) = PENDING.lock() else {
        return;
    };
    if pending.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&pending);
    let _ = out.flush();
    pending.clear();
}

impl JsonRenderer {
    /// One line `{"type": kind, …value's fields}`.
    fn push_typed(&self, kind: &str, value: &impl serde::Serialize) {
        let mut line = json!({ "type": kind });
        if let (Value::Object(line), Ok(Value::Object(fields))) =
            (&mut line, serde_json::to_value(value))
        {
            line.extend(fields);
        }
        self.push(|out| {
            out.extend_from_slice(line.to_string().as_bytes());
            out.push(b'\n');
        });
    }

    fn push(&self, encode: impl FnOnce(&mut Vec<u8>)) {
        let full = match PENDING.lock() {
            Ok(mut pending) => {
                encode(&mut pending);
                pending.len() >= BATCH_BYTES
            }
            Err(_) => return,
        };
        if full {
            flush_json_lines();
        }
    }
}

impl Renderer for JsonRenderer {
    fn event(&self, event: &AgentEvent) {
        self.push(|out| {
            let mark = out.len();
            match serde_json::to_writer(&mut *out, event) {
                Ok(()) => out.push(b'\n'),
                Err(e) => {
                    out.truncate(mark);
                    tracing::error!("cannot serialise a {} event: {e}", event.kind());
                }
            }
        });
    }

    fn loop_guard(&self, event: &GuardEvent) {
        self.push_typed("loop_guard", event);
    }

    fn plan(&self, update: &PlanUpdate) {
        self.push_typed("plan_update", update);
    }

    fn child(&self, event: &ChildEvent) {
        self.push_typed("subagent_event", event);
    }

    fn compaction(&self, event: &CompactionEvent) {
        let line = serde_json::to_string(event);
        self.push(|out| {
            if let Ok(line) = line {
                out.extend_from_slice(line.as_bytes());
                out.push(b'\n');
            }
        });
    }

    fn settled(&self, aborted: bool, stopped: Option<Guard>, _run: &Usage, _session: &Usage) {
        let mut line = json!({"type": "agent_settled", "aborted": aborted});
        if let Some(guard) = stopped {
            line["stopReason"] = json!(guard);
        }
        let line = line.to_string();
        self.push(|out| {
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        });
        // Everything is on stdout before `run` returns.
        flush_json_lines();
    }

    fn command(&self, outcome: &BuiltinOutcome) {
        self.push_typed("command", outcome);
        flush_json_lines();
    }

    /// `{"type": "job_update", "job": …}`, as the daemon's event.
    fn job(&self, job: &JobInfo) {
        self.push_typed("job_update", &json!({ "job": job }));
    }

    /// `{"type": "hook", …}`, as the daemon's event.
    fn hook(&self, run: &HookRun) {
        self.push_typed("hook", run);
    }
}

/// The default, for people.
#[derive(Default)]
pub struct HumanRenderer {
    /// Whether the cursor is mid-line after streamed text.
    mid_line: Mutex<bool>,
    /// A short form of each running call's arguments, by tool call id.
    calls: Mutex<HashMap<String, String>>,
}

impl HumanRenderer {
    fn write(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        if let Some(last) = text.chars().last()
            && let Ok(mut mid) = self.mid_line.lock()
        {
            *mid = last != '\n';
        }
    }

    fn line(&self, text: &str) {
        let needs_break = self.mid_line.lock().map(|m| *m).unwrap_or(false);
        let prefix = if needs_break { "\n" } else { "" };
        self.write(&format!("{prefix}{text}\n"));
    }
}

impl Renderer for HumanRenderer {
    fn event(&self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageUpdate {
                assistant_message_event: AssistantMessageEvent::TextDelta { delta, .. },
            } => self.write(delta),
            // Errors are reported once, on stderr, when the run settles.
            AgentEvent::MessageEnd { message }
                if matches!(message, AgentMessage::Assistant(_))
                    && self.mid_line.lock().map(|m| *m).unwrap_or(false) =>
            {
                self.write("\n")
            }
            AgentEvent::ProviderRetry {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => eprintln!(
                "retrying ({attempt}/{max_attempts}) in {:.1}s: {error_message}",
                *delay_ms as f64 / 1000.0
            ),
            AgentEvent::ToolExecutionStart {
                tool_call_id, args, ..
            } => {
                if let Ok(mut calls) = self.calls.lock() {
                    calls.insert(tool_call_id.clone(), args_summary(args));
                }
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                duration_ms,
                ..
            } => {
                let status = if *is_error {
                    let text = first_text(&result.content);
                    if text.contains("was not run") {
                        format!("refused: {}", hint(&text))
                    } else {
                        format!("failed: {}", clip(&text, 160))
                    }
                } else {
                    match duration_ms {
                        Some(ms) => format!("ok ({ms} ms)"),
                        None => "ok".to_string(),
                    }
                };
                let args = self
                    .calls
                    .lock()
                    .ok()
                    .and_then(|mut calls| calls.remove(tool_call_id))
                    .unwrap_or_default();
                self.line(&format!("[{tool_name}{args}] {status}"));
            }
            _ => {}
        }
    }

    fn plan(&self, update: &PlanUpdate) {
        self.line(&crate::core::plan::checklist(&update.todos));
    }

    fn loop_guard(&self, event: &GuardEvent) {
        // A stop is reported once, on stderr, when the run settles.
        if event.action == crate::core::loop_guard::GuardAction::Warned {
            eprintln!("loop guard: {}", event.message);
        }
    }

    fn compaction(&self, event: &CompactionEvent) {
        match event {
            CompactionEvent::CompactionStart { reason } => {
                eprintln!("compacting the session ({})…", reason.as_str());
            }
            CompactionEvent::CompactionEnd(end) => match (&end.result, &end.error_message) {
                (Some(result), _) => eprintln!(
                    "compacted: about {} tokens before, {} after",
                    result.tokens_before, result.estimated_tokens_after
                ),
                (None, Some(error)) => eprintln!("{error}"),
                (None, None) => eprintln!("compaction cancelled"),
            },
        }
    }

    /// A subagent's tool calls, each a line as the run's own with the agent's name before the
    /// tool's: `[explore › read notes.txt] ok`. Its text is the `task` call's result.
    fn child(&self, child: &ChildEvent) {
        let mut event = child.event.as_ref().clone();
        match &mut event {
            AgentEvent::ToolExecutionStart { .. } => {}
            AgentEvent::ToolExecutionEnd { tool_name, .. } => {
                *tool_name = format!("{} › {tool_name}", child.agent);
            }
            _ => return,
        }
        self.event(&event);
    }

    fn job(&self, job: &JobInfo) {
        let id = &job.job_id;
        let line = match (job.status, job.exit_code) {
            (JobStatus::Running, _) => format!("[{id} started in the background: {}]", job.command),
            (JobStatus::Exited, Some(code)) => format!("[{id} exited with code {code}]"),
            (status, _) => format!("[{id} {}]", status.as_str()),
        };
        self.line(&line);
    }

    /// A hook that decided something (or failed), on stderr; a silent one is not shown.
    fn hook(&self, run: &HookRun) {
        if run.decided() {
            eprintln!("hook: {}", run.summary());
        }
    }

    fn settled(&self, aborted: bool, _stopped: Option<Guard>, run: &Usage, session: &Usage) {
        if aborted {
            self.line("[aborted]");
        }
        self.line(&usage_line(run, session));
    }

    fn command(&self, outcome: &BuiltinOutcome) {
        match outcome {
            BuiltinOutcome::Model(settings) => self.line(&format!(
                "model: {}/{} (thinking {})",
                settings.model.provider,
                settings.model.id,
                serde_json::to_value(settings.thinking_level)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            )),
            // The compaction's own events said what happened; the summary is the result.
            BuiltinOutcome::Compacted(result) => self.line(&result.summary),
            BuiltinOutcome::CompactStarted => {}
            BuiltinOutcome::McpTrust { .. } => {}
        }
    }
}

/// ` notes.txt`, ` cargo test`, ` https://docs.rs`: the argument a person recognises a call by.
fn args_summary(args: &Value) -> String {
    ["path", "command", "pattern", "url", "query"]
        .iter()
        .find_map(|key| args.get(key).and_then(Value::as_str))
        .map(|v| format!(" {}", clip(v, 80)))
        .unwrap_or_default()
}

/// `tokens 1.2k in (300 cached) · 450 out · $0.0123 · session $0.0456`.
pub fn usage_line(run: &Usage, session: &Usage) -> String {
    let input = run.input + run.cache_read + run.cache_write;
    let mut line = format!("tokens: {} in", compact(input));
    if run.cache_read > 0 {
        line.push_str(&format!(" ({} cached)", compact(run.cache_read)));
    }
    line.push_str(&format!(
        ", {} out · cost ${:.4} · session ${:.4}",
        compact(run.output),
        run.cost.total,
        session.cost.total
    ));
    line
}

fn compact(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.2}M", n as f64 / 1_000_000.0),
    }
}

fn first_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .find_map(ContentBlock::as_text)
        .unwrap_or_default()
        .to_string()
}

/// The part of a refusal that tells the user what to do.
fn hint(text: &str) -> String {
    const FIX: &str = "run again with ";
    match text.find(FIX) {
        Some(at) => text[at..].trim_end_matches('.').to_string(),
        None => clip(text, 160),
    }
}

fn clip(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() <= max {
        return line.to_string();
    }
    let cut: String = line.chars().take(max).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_lines_are_compact() {
        let mut run = Usage {
            input: 12_000,
            cache_read: 3_000,
            output: 450,
            ..Default::default()
        };
        run.cost.total = 0.01234;
        let mut session = run.clone();
        session.cost.total = 0.5;
        assert_eq!(
            usage_line(&run, &session),
            "tokens: 15.0k in (3000 cached), 450 out · cost $0.0123 · session $0.5000"
        );
    }

    #[test]
    fn refusals_show_the_fix() {
        let text = crate::cli::approve::Approval::ReadOnly
            .refusal("bash")
            .unwrap();
        assert_eq!(hint(&text), "run again with --approve all");
    }
}
