//! `agent-lsp demo`: a complete session with no model, key or network.
//!
//! A scripted model reads a small shell script with a typo, fixes it with `edit`, runs it with
//! `bash`, and answers. The tools, the loop and the output are the real ones, on a fresh
//! temporary project (removed afterwards unless `--keep`).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};

use crate::agent::message::{ContentBlock, StopReason, ToolCall};
use crate::agent::model::Model;
use crate::cli::approve::Approval;
use crate::cli::run::{RunPlan, execute};
use crate::core::SessionSpec;
use crate::model_registry::ResolvedModel;
use crate::provider::scripted::{ScriptedProvider, scripted_message};

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
        api: crate::provider::scripted::API.into(),
        provider: "agent-lsp".into(),
        ..Model::default()
    };
    let plan = RunPlan {
        session: SessionSpec::isolated(
            dir.clone(),
            ResolvedModel {
                model,
                api_key: None,
            },
            Arc::new(demo_model()),
        ),
        approval: Approval::All,
        json: args.json,
        prompt: PROMPT.into(),
        verbose: false,
        trust_project_hooks: false,
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

/// The demo's model: four scripted responses (text, then a tool call), streamed in small deltas.
fn demo_model() -> ScriptedProvider {
    let steps: Vec<(&str, Option<(&str, Value)>)> = vec![
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
            "Fixed: hello.sh now prints \"Hello, world\" (it printed \"Helo, world\"), and \
             running it confirms the output.",
            None,
        ),
    ];
    let responses = steps
        .into_iter()
        .enumerate()
        .map(|(i, (text, call))| {
            let mut content = vec![ContentBlock::text(text)];
            let stop = match call {
                Some((name, arguments)) => {
                    content.push(ContentBlock::ToolCall(ToolCall {
                        id: format!("demo_call_{i}"),
                        name: name.into(),
                        arguments,
                        ..Default::default()
                    }));
                    StopReason::ToolUse
                }
                None => StopReason::Stop,
            };
            scripted_message(content, stop)
        })
        .collect();
    // Paced like a fast model, so the text visibly streams.
    ScriptedProvider::new(responses).with_delay(Duration::from_millis(15))
}
