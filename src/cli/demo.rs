//! `agent-lsp demo`: a complete session with no model, key or network.
//!
//! A scripted model reads a small shell script with a typo, fixes it with `edit`, runs it with
//! `bash`, and answers. The tools, the loop and the output are the real ones, on a fresh
//! temporary project (removed afterwards unless `--keep`).

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use clap::Args;
use serde_json::{Value, json};

use crate::agent::message::{AssistantMessage, ContentBlock, StopReason, ToolCall, Usage, now_ms};
use crate::cli::approve::Approval;
use crate::cli::run::{RunPlan, execute};
use crate::models::ResolvedModel;
use crate::provider::{
    AssistantEventStream, AssistantMessageEvent, LlmContext, Model, StreamFn, StreamOptions,
};
use crate::session::Session;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Print JSON events instead of text.
    #[arg(long)]
    pub json: bool,
    /// Keep the temporary project and print its path.
    #[arg(long)]
    pub keep: bool,
}

const SCRIPT: &str = "#!/bin/sh\n# Greets the world.\necho \"Helo, world\"\n";
const PROMPT: &str = "hello.sh prints a typo. Fix it and check that it works.";

pub async fn demo(args: DemoArgs) -> ExitCode {
    let dir = match tempfile_dir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("agent-lsp: cannot create the demo project: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::write(dir.join("hello.sh"), SCRIPT) {
        eprintln!("agent-lsp: cannot create the demo project: {e}");
        return ExitCode::FAILURE;
    }
    if !args.json {
        println!("demo project: {}\n> {PROMPT}\n", dir.display());
    }
    let model = Model {
        id: "demo".into(),
        name: "Scripted demo model".into(),
        api: "scripted".into(),
        provider: "agent-lsp".into(),
        ..Model::default()
    };
    let plan = RunPlan {
        session: Session::in_memory(&dir),
        resolved: ResolvedModel {
            model,
            api_key: None,
        },
        thinking: Default::default(),
        cwd: dir.clone(),
        approval: Approval::All,
        json: args.json,
        stream_fn: Arc::new(DemoModel::new()),
        prompt: PROMPT.into(),
    };
    let code = execute(plan).await;
    if args.keep {
        if !args.json {
            println!("kept: {}", dir.display());
        }
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    code
}

/// A fresh directory under the system temp dir.
fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("agent-lsp-demo-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    std::fs::canonicalize(&dir)
}

/// The demo's model: four scripted responses, streamed as a provider would stream them.
struct DemoModel {
    step: Mutex<usize>,
}

impl DemoModel {
    fn new() -> DemoModel {
        DemoModel {
            step: Mutex::new(0),
        }
    }
}

fn steps() -> Vec<(&'static str, Option<(&'static str, Value)>)> {
    vec![
        (
            "Let me look at the script first.",
            Some(("read", json!({"path": "hello.sh"}))),
        ),
        (
            "It prints \"Helo\" instead of \"Hello\". Fixing the typo.",
            Some((
                "edit",
                json!({"path": "hello.sh", "edits": [{"oldText": "Helo, world", "newText": "Hello, world"}]}),
            )),
        ),
        (
            "Now let me run it to check.",
            Some(("bash", json!({"command": "sh hello.sh"}))),
        ),
        (
            "Fixed: hello.sh now prints \"Hello, world\" (it printed \"Helo, world\"), and running \
             it confirms the output.",
            None,
        ),
    ]
}

impl StreamFn for DemoModel {
    fn stream(
        &self,
        model: &Model,
        _context: LlmContext,
        _options: StreamOptions,
    ) -> AssistantEventStream {
        let step = {
            let mut step = self.step.lock().unwrap_or_else(|e| e.into_inner());
            *step += 1;
            *step - 1
        };
        let mut message = AssistantMessage {
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            timestamp: now_ms(),
            ..Default::default()
        };
        let Some((text, call)) = steps().into_iter().nth(step) else {
            message.stop_reason = StopReason::Error;
            message.error_message = Some("the demo script has no more responses".into());
            return AssistantEventStream::from_events(vec![AssistantMessageEvent::Error {
                reason: StopReason::Error,
                error: message,
            }]);
        };
        let mut events = vec![AssistantMessageEvent::Start {
            partial: message.clone(),
        }];
        events.push(AssistantMessageEvent::TextStart { content_index: 0 });
        for word in text.split_inclusive(' ') {
            events.push(AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: word.into(),
            });
        }
        events.push(AssistantMessageEvent::TextEnd {
            content_index: 0,
            content: text.into(),
        });
        message.content.push(ContentBlock::text(text));
        message.stop_reason = StopReason::Stop;
        if let Some((name, arguments)) = call {
            let call = ToolCall {
                id: format!("demo_call_{step}"),
                name: name.into(),
                arguments: arguments.clone(),
                ..Default::default()
            };
            events.push(AssistantMessageEvent::ToolCallStart {
                content_index: 1,
                id: call.id.clone(),
                tool_name: name.into(),
            });
            events.push(AssistantMessageEvent::ToolCallDelta {
                content_index: 1,
                delta: arguments.to_string(),
            });
            events.push(AssistantMessageEvent::ToolCallEnd {
                content_index: 1,
                tool_call: call.clone(),
            });
            message.content.push(ContentBlock::ToolCall(call));
            message.stop_reason = StopReason::ToolUse;
        }
        message.usage = demo_usage(step, text);
        events.push(AssistantMessageEvent::Done {
            reason: message.stop_reason,
            message,
        });
        AssistantEventStream::from_events(events)
    }
}

/// Plausible token counts (chars / 4), so the usage line has something to show.
fn demo_usage(step: usize, text: &str) -> Usage {
    let input = 900 + 150 * step as u64;
    let output = (text.len() as u64).div_ceil(4) + 20;
    Usage {
        input,
        output,
        total_tokens: input + output,
        ..Default::default()
    }
}
