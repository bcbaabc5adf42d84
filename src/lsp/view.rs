//! How the daemon decides, asks and shows for a session ([`View`] of [`LspView`]): approvals by
//! `initializationOptions.approval` and `agent/beforeToolCall` (`approval.rs`), questions for the
//! user as `agent/askUser` or a generic client's message (`ask_user.rs`), every event as a
//! numbered `$/agentEvent`, and for generic clients work-done progress and messages
//! (`generic_client.rs`); a run's changes as `changes_update` when it ends.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::hooks::BeforeToolCallContext;
use crate::core::approval::{Answer, Policy};
use crate::core::journal::review::{self, Selection};
use crate::core::session::{Event, Session, View};
use crate::lsp::live_session::{LiveSession, LspView};
use crate::lsp::protocol::{EventBody, SessionEvent};
use crate::mcp::server::State;
use crate::sandbox::MustAsk;
use crate::tools::{Question, UserAnswer};

impl View for LspView {
    fn policy(&self, session: &LiveSession, tool: &str, args: &Value) -> Policy {
        crate::lsp::approval::policy(session, tool, args)
    }

    fn ask<'a>(
        &'a self,
        session: &'a Arc<LiveSession>,
        ctx: &'a BeforeToolCallContext,
        _must_ask: Option<&'a MustAsk>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Answer, String>> {
        Box::pin(crate::lsp::approval::ask(session, ctx, cancel))
    }

    fn ask_user<'a>(
        &'a self,
        session: &'a Arc<LiveSession>,
        question: &'a Question,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, UserAnswer> {
        Box::pin(crate::lsp::ask_user::ask(session, question, cancel))
    }

    fn show(&self, _session: &LiveSession, run: Option<&str>, event: Event<'_>) {
        let body = match event {
            Event::Agent(event) => EventBody::Agent(event.clone()),
            Event::Queues(queues) => EventBody::Session(SessionEvent::QueueUpdate(queues.clone())),
            Event::Compaction(event) => EventBody::Session(SessionEvent::from(event.clone())),
            Event::Guard(event) => EventBody::Session(SessionEvent::LoopGuard(event.clone())),
            Event::Plan(plan) => EventBody::Session(SessionEvent::PlanUpdate(plan.clone())),
            Event::Job(job) => EventBody::Session(SessionEvent::JobUpdate { job: job.clone() }),
            Event::Hook(run) => {
                if run.decided() && self.ctx.config.is_generic() {
                    let text = format!("agent-lsp: {}", run.summary());
                    self.ctx.show(ls_types::MessageType::INFO, text);
                }
                EventBody::Session(SessionEvent::Hook(run.clone()))
            }
            Event::Child(child) => EventBody::Session(SessionEvent::SubagentEvent(child.clone())),
            Event::Settled(end) => {
                if let Some(stop) = end.stop.as_ref().filter(|_| self.ctx.config.is_generic()) {
                    let text = format!("agent-lsp: {}", stop.message);
                    self.ctx.show(ls_types::MessageType::WARNING, text);
                }
                EventBody::Session(SessionEvent::AgentSettled {
                    aborted: end.outcome.aborted,
                    stop_reason: end.stop.as_ref().map(|s| s.guard),
                })
            }
            Event::Allowed(_) | Event::RunEnded(_) | Event::Delivered(_) => return,
        };
        self.emitter.emit(run, body);
    }

    fn follow<'a>(
        &'a self,
        session: &'a Arc<LiveSession>,
        run: Option<&'a str>,
        event: Event<'a>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(run) = run else { return };
            match event {
                Event::Agent(event) => {
                    crate::lsp::generic_client::on_event(session, run, event).await
                }
                Event::RunEnded(end) => {
                    crate::lsp::generic_client::run_finished(session, run, &end.outcome).await;
                    tell_changes(session, run).await;
                }
                _ => {}
            }
        })
    }
}

/// After a run: `changes_update` when it changed files (the diffs left out;
/// `agent/runChanges` has them).
async fn tell_changes(session: &LiveSession, run_id: &str) {
    session.journal.settled().await;
    let selection = Selection::Run(Some(run_id.to_string()));
    let changes = review::run_changes(&session.record, &session.workspace, &selection, false);
    let Ok(changes) = changes.await else {
        return;
    };
    if changes.files.is_empty() {
        return;
    }
    let event = SessionEvent::ChangesUpdate(changes);
    (session.view.emitter).emit(Some(run_id), EventBody::Session(event));
}

/// Follows the session's MCP servers: an `mcp_update` event at every change (and one now),
/// a generic client's message when a server fails, and the question whether the project's
/// `.mcp.json` may start its servers.
pub fn watch_mcp(session: &Arc<Session<LspView>>) {
    if session.tools.mcp.is_empty() {
        return;
    }
    let weak = Arc::downgrade(session);
    let mut watch = session.tools.mcp.watch();
    tokio::spawn(async move {
        let mut failed = std::collections::HashSet::new();
        loop {
            let Some(session) = weak.upgrade() else {
                return;
            };
            let servers = session.tools.mcp.status();
            let ctx = &session.view.ctx;
            for server in &servers {
                if server.state != State::Failed {
                    failed.remove(&server.name);
                } else if failed.insert(server.name.clone()) && ctx.config.is_generic() {
                    let why = server.error.as_deref().unwrap_or("it stopped");
                    let text = format!("agent-lsp: MCP server {} failed: {why}", server.name);
                    ctx.show(ls_types::MessageType::ERROR, text);
                }
            }
            // A session's servers belong to no run: `runId` is null.
            let update = SessionEvent::McpUpdate { servers };
            (session.view.emitter).emit(None, EventBody::Session(update));
            drop(session);
            watch.changed().await;
        }
    });
    if session.tools.needs_trust() {
        tokio::spawn(crate::lsp::approval::ask_project_trust(session.clone()));
    }
}
