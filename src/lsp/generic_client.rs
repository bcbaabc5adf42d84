//! The LSP-standard surface for clients without the agent protocol (Helix, Zed's LSP mode):
//! work-done progress, `window/showMessage` for the answer, a Markdown transcript opened with
//! `window/showDocument`, and approvals through `window/showMessageRequest` or a diagnostic with
//! "Approve"/"Reject" code actions.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ls_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, Command, Diagnostic, DiagnosticSeverity,
    MessageActionItem, MessageType, NumberOrString, ProgressParams, ProgressParamsValue,
    PublishDiagnosticsParams, ShowDocumentParams, ShowMessageParams, ShowMessageRequestParams, Uri,
    WorkDoneProgress, WorkDoneProgressBegin, WorkDoneProgressCreateParams, WorkDoneProgressEnd,
    WorkDoneProgressReport,
};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::agent::RunOutcome;
use crate::agent::event::AgentEvent;
use crate::agent::message::{AgentMessage, ContentBlock, MessageContent};
use crate::lsp::conn::{ConnCtx, PendingApproval};
use crate::lsp::live_session::{LiveSession, new_id};
use crate::lsp::protocol::{
    BeforeToolCallParams, BeforeToolCallResult as Answer, Decision, Preview, command,
};
use crate::rpc::outgoing::{Outgoing, RequestError};

const ACTIONS: [(&str, Decision); 4] = [
    ("Allow", Decision::Allow),
    ("Allow always", Decision::AllowAlways),
    ("Block", Decision::Block),
    ("Block always", Decision::BlockAlways),
];

fn token(run_id: &str) -> NumberOrString {
    NumberOrString::String(format!("{TOKEN_PREFIX}{run_id}"))
}

fn progress(run_id: &str, value: WorkDoneProgress) -> ProgressParams {
    ProgressParams {
        token: token(run_id),
        value: ProgressParamsValue::WorkDone(value),
    }
}

fn report(message: String) -> WorkDoneProgress {
    WorkDoneProgress::Report(WorkDoneProgressReport {
        message: Some(message),
        ..Default::default()
    })
}

fn show_message(typ: MessageType, message: String) -> ShowMessageParams {
    ShowMessageParams { typ, message }
}

/// Work-done progress tokens are this prefix plus the run id.
pub const TOKEN_PREFIX: &str = "agent-lsp/";

/// Progress for generic clients, from the run's events.
pub async fn on_event(session: &LiveSession, run_id: &str, event: &AgentEvent) {
    let config = &session.view.ctx.config;
    if !config.is_generic() || !config.work_done_progress {
        return;
    }
    let out = &session.view.ctx.out;
    let value = match event {
        AgentEvent::AgentStart => {
            let params = WorkDoneProgressCreateParams {
                token: token(run_id),
            };
            let method = "window/workDoneProgress/create";
            request_best_effort(out, method, params, "client refused work-done progress").await;
            WorkDoneProgress::Begin(WorkDoneProgressBegin {
                title: "agent-lsp".into(),
                cancellable: Some(true),
                message: Some("thinking…".into()),
                percentage: None,
            })
        }
        AgentEvent::ToolExecutionStart {
            tool_name, args, ..
        } => report(format!("{tool_name} {}", short(args))),
        AgentEvent::TurnStart => report("thinking…".into()),
        _ => return,
    };
    out.notify("$/progress", progress(run_id, value));
}

fn short(args: &Value) -> String {
    let text = args
        .get("command")
        .or_else(|| args.get("path"))
        .or_else(|| args.get("pattern"))
        .and_then(Value::as_str)
        .map_or_else(|| args.to_string(), str::to_owned);
    text.chars().take(80).collect()
}

/// Ends progress, shows the answer and the transcript (generic clients only).
pub async fn run_finished(session: &LiveSession, run_id: &str, outcome: &RunOutcome) {
    let ctx = &session.view.ctx;
    if !ctx.config.is_generic() {
        return;
    }
    if ctx.config.work_done_progress {
        let end = WorkDoneProgress::End(WorkDoneProgressEnd { message: None });
        ctx.out.notify("$/progress", progress(run_id, end));
    }
    let (typ, text) = match (&outcome.error, outcome.aborted) {
        (_, true) => (MessageType::WARNING, "agent-lsp: aborted".to_owned()),
        (Some(error), _) => (MessageType::ERROR, format!("agent-lsp: {error}")),
        (None, false) => (MessageType::INFO, final_text(&outcome.new_messages)),
    };
    ctx.out
        .notify("window/showMessage", show_message(typ, text));
    let Some(path) = write_transcript(session).await else {
        return;
    };
    let uri = crate::lsp::documents::path_to_uri(&path).and_then(|u| u.parse::<Uri>().ok());
    if ctx.config.show_document
        && let Some(uri) = uri
    {
        let params = ShowDocumentParams {
            uri,
            external: None,
            take_focus: Some(false),
            selection: None,
        };
        let method = "window/showDocument";
        request_best_effort(&ctx.out, method, params, "showDocument failed").await;
    }
}

/// A request whose answer only matters as a log line (`failed` and why) when it fails.
async fn request_best_effort<P: serde::Serialize>(
    out: &Outgoing,
    method: &str,
    params: P,
    failed: &str,
) {
    let never = CancellationToken::new();
    let reply: Result<Value, RequestError> = out
        .request(method, params, Duration::from_secs(5), &never)
        .await;
    if let Err(e) = reply {
        tracing::info!(%e, "{failed}");
    }
}

fn final_text(messages: &[AgentMessage]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            AgentMessage::Assistant(a) => {
                let text = blocks_text(&a.content);
                (!text.is_empty()).then_some(text)
            }
            _ => None,
        })
        .unwrap_or_else(|| "agent-lsp: done".to_owned())
}

fn blocks_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn state_dir() -> Option<PathBuf> {
    let env = |n: &str| {
        std::env::var_os(n)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("XDG_STATE_HOME").or_else(|| env("HOME").map(|h| h.join(".local/state")))
}

/// Renders the session as Markdown under the state dir; returns the file.
async fn write_transcript(session: &LiveSession) -> Option<PathBuf> {
    let dir = state_dir()?.join("agent-lsp").join("transcripts");
    let mut md = format!("# agent-lsp session {}\n\n", session.id);
    for message in &session.agent.state().messages {
        match message {
            AgentMessage::User(u) => {
                let text = match &u.content {
                    MessageContent::Text(t) => t.clone(),
                    MessageContent::Blocks(b) => blocks_text(b),
                };
                md.push_str(&format!("## You\n\n{text}\n\n"));
            }
            AgentMessage::Assistant(a) => {
                md.push_str(&format!("## Agent\n\n{}\n\n", blocks_text(&a.content)));
                for call in a.content.iter().filter_map(ContentBlock::as_tool_call) {
                    md.push_str(&format!("- tool `{}` {}\n", call.name, call.arguments));
                }
            }
            AgentMessage::ToolResult(r) => {
                let text: String = blocks_text(&r.content).chars().take(2000).collect();
                md.push_str(&format!("\n```\n{text}\n```\n\n"));
            }
            AgentMessage::System(_) | AgentMessage::Custom(_) => {}
        }
    }
    let path = dir.join(format!("{}.md", session.id));
    let written = async {
        tokio::fs::create_dir_all(&dir).await?;
        tokio::fs::write(&path, md).await
    };
    match written.await {
        Ok(()) => Some(path),
        Err(e) => {
            tracing::warn!(%e, "cannot write the transcript");
            None
        }
    }
}

/// Asks a generic client (a matter of the connection, not of the session): a message request
/// with buttons, else a diagnostic with code actions.
pub async fn ask(
    ctx: &Arc<ConnCtx>,
    request: &BeforeToolCallParams,
    cancel: &CancellationToken,
) -> Result<Answer, String> {
    let timeout = ctx.config.approval_timeout();
    let mut detail = match &request.preview {
        Some(Preview::Command { command, cwd }) => format!("{command}\n(in {cwd})"),
        Some(Preview::Diff { diff, .. }) => diff.chars().take(1500).collect(),
        Some(Preview::Fetch { url, host, local }) => {
            crate::tools::web::fetch_note(url, host, *local)
        }
        None => String::new(),
    };
    if let Some(sandbox) = &request.sandbox {
        detail.push('\n');
        detail.push_str(&sandbox.note());
    }
    if ctx.config.message_actions {
        let actions = ACTIONS.iter().map(|(title, _)| MessageActionItem {
            title: (*title).to_owned(),
            properties: Default::default(),
        });
        let params = ShowMessageRequestParams {
            typ: MessageType::WARNING,
            message: format!("agent-lsp: {}\n{detail}", request.title),
            actions: Some(actions.collect()),
        };
        let reply: Result<Option<MessageActionItem>, RequestError> = ctx
            .out
            .request("window/showMessageRequest", params, timeout, cancel)
            .await;
        let title = match reply {
            Ok(Some(item)) => Some(item.title),
            Ok(None) => None,
            Err(e) => return Err(format!("Approval failed ({e}): the tool call was not run")),
        };
        let decision = ACTIONS
            .iter()
            .find(|(t, _)| Some(*t) == title.as_deref())
            .map(|(_, d)| *d);
        return Ok(Answer {
            decision: decision.unwrap_or(Decision::Block),
            reason: None,
            terminate: None,
            scope: None,
        });
    }
    ask_with_diagnostic(ctx, request, &detail, cancel).await
}

async fn ask_with_diagnostic(
    ctx: &Arc<ConnCtx>,
    request: &BeforeToolCallParams,
    detail: &str,
    cancel: &CancellationToken,
) -> Result<Answer, String> {
    let target = match &request.preview {
        Some(Preview::Diff { path, .. }) => {
            crate::lsp::documents::path_to_uri(std::path::Path::new(path))
                .filter(|uri| ctx.docs.get(uri).is_some())
        }
        _ => None,
    };
    let Some(uri) = target.or_else(|| ctx.docs.open_uris().into_iter().next()) else {
        return Err(format!(
            "Tool \"{}\" needs approval, but this client can show neither message actions nor a \
             diagnostic (no open document). It was not run.",
            request.tool_name
        ));
    };
    let id = new_id();
    let (tx, rx) = oneshot::channel();
    let title = format!("agent-lsp wants to: {}. {detail}", request.title);
    ctx.pending().insert(
        id.clone(),
        PendingApproval {
            uri: uri.clone(),
            line: 0,
            title,
            reply: tx,
        },
    );
    publish(ctx, &uri);
    let outcome = tokio::select! {
        r = rx => r.map_err(|_| "the approval was dropped".to_owned()),
        () = cancel.cancelled() => Err("The run was aborted before the tool call was approved".to_owned()),
        () = tokio::time::sleep(ctx.config.approval_timeout()) => Err("No approval in time: the tool call was not run".to_owned()),
    };
    ctx.pending().remove(&id);
    publish(ctx, &uri);
    outcome.map(|decision| Answer {
        decision,
        reason: None,
        terminate: None,
        scope: None,
    })
}

/// Publishes the pending-approval diagnostics of `uri` (none clears them).
fn publish(ctx: &ConnCtx, uri: &str) {
    let Ok(parsed) = uri.parse::<Uri>() else {
        return;
    };
    let diagnostics = ctx
        .pending()
        .iter()
        .filter(|(_, p)| p.uri == uri)
        .map(|(id, p)| Diagnostic {
            range: ls_types::Range::new(
                ls_types::Position::new(p.line, 0),
                ls_types::Position::new(p.line, 0),
            ),
            severity: Some(DiagnosticSeverity::INFORMATION),
            code: Some(NumberOrString::String(id.clone())),
            source: Some("agent-lsp".into()),
            message: p.title.clone(),
            ..Default::default()
        })
        .collect();
    let params = PublishDiagnosticsParams {
        uri: parsed,
        diagnostics,
        version: None,
    };
    ctx.out.notify("textDocument/publishDiagnostics", params);
}

/// "Approve"/"Reject" code actions for the pending approvals of a document.
pub fn code_actions(ctx: &ConnCtx, uri: &str) -> Vec<CodeActionOrCommand> {
    ctx.pending()
        .iter()
        .filter(|(_, p)| p.uri == uri)
        .flat_map(|(id, p)| {
            [("Approve", command::APPROVE), ("Reject", command::REJECT)].map(|(label, cmd)| {
                let title: String = p.title.chars().take(60).collect();
                CodeActionOrCommand::CodeAction(CodeAction {
                    title: format!("{label}: {title}"),
                    kind: Some(CodeActionKind::QUICKFIX),
                    command: Some(Command {
                        title: label.into(),
                        command: cmd.into(),
                        arguments: Some(vec![Value::String(id.clone())]),
                    }),
                    ..Default::default()
                })
            })
        })
        .collect()
}

/// Resolves a pending generic approval; `false` when the id is unknown (already resolved).
pub fn resolve(ctx: &ConnCtx, id: &str, decision: Decision) -> bool {
    match ctx.pending().remove(id) {
        Some(p) => p.reply.send(decision).is_ok(),
        None => false,
    }
}
