//! How an ACP session decides, asks and shows ([`View`] of [`AcpView`]): its mode as the
//! approval policy and `session/request_permission` to ask (`permission.rs`), questions for the
//! user (`ask_user.rs`), the project's MCP
//! servers asked about before a turn's first request (`trust.rs`), every loop event translated
//! into `session/update`s, and each prompt answered as the run takes the next one or settles.

use std::sync::{Arc, Weak};

use agent_client_protocol_schema::v1 as acp;
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::acp::session::{AcpSession, AcpView, lock};
use crate::acp::updates;
use crate::agent::event::AgentEvent;
use crate::agent::hooks::{BeforeToolCallContext, PrepareRunHook};
use crate::agent::message::AgentMessage;
use crate::core::approval::{Answer, Policy};
use crate::core::session::{Event, View};
use crate::sandbox::MustAsk;
use crate::tools::{Question, UserAnswer};

impl View for AcpView {
    fn policy(&self, session: &AcpSession, tool: &str, _args: &Value) -> Policy {
        crate::acp::permission::policy(session, tool)
    }

    fn ask<'a>(
        &'a self,
        session: &'a Arc<AcpSession>,
        ctx: &'a BeforeToolCallContext,
        _must_ask: Option<&'a MustAsk>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Answer, String>> {
        Box::pin(crate::acp::permission::ask(session, ctx, cancel))
    }

    fn ask_user<'a>(
        &'a self,
        session: &'a Arc<AcpSession>,
        question: &'a Question,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, UserAnswer> {
        Box::pin(crate::acp::ask_user::ask(session, question, cancel))
    }

    fn show(&self, session: &AcpSession, _run: Option<&str>, event: Event<'_>) {
        match event {
            Event::Agent(event) => self.show_agent_event(session, event),
            Event::Delivered(message_id) => self.delivered(message_id),
            Event::Compaction(event) => {
                tracing::info!(?event, "compaction");
                session.show_compaction(event);
            }
            Event::Plan(update) => session.show_plan(&update.todos),
            Event::Hook(run) => session.show_hook(run),
            Event::Settled(end) => self.settled(&end.outcome, end.stop.is_some()),
            Event::Job(job) => {
                if let Ok(started) = session.jobs.get(&job.job_id) {
                    let update = updates::job_update(&started.call_id, job);
                    self.job_update(&job.job_id, update);
                }
            }
            Event::Queues(_) | Event::Guard(_) | Event::Allowed(_) | Event::RunEnded(_) => {}
            Event::Child(child) => {
                if let Some(update) = self.children.note(&session.look(), child) {
                    self.notify(update);
                }
            }
        }
    }

    fn follow<'a>(
        &'a self,
        session: &'a Arc<AcpSession>,
        _run: Option<&'a str>,
        event: Event<'a>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            match event {
                // A call that may run is marked `in_progress`; an `edit` or `write` keeps the
                // file's text from before, so its final update carries the whole-file diff.
                Event::Allowed(ctx) => {
                    let call = &ctx.tool_call;
                    self.remember_before(session, &call.id, &call.name, &ctx.args)
                        .await;
                    self.notify(updates::status(&call.id, acp::ToolCallStatus::InProgress));
                }
                Event::Agent(event) => {
                    if let AgentEvent::ToolExecutionEnd {
                        tool_call_id,
                        result,
                        is_error,
                        ..
                    } = event.as_ref()
                    {
                        let diff = self.diff_of(session, tool_call_id, *is_error).await;
                        let terminal = self.link.terminal_of(tool_call_id);
                        let update =
                            updates::finished(tool_call_id, &result.content, *is_error, diff);
                        let update = updates::with_terminal(update, terminal);
                        let steps = self.children.take(tool_call_id);
                        self.notify(updates::with_steps(update, steps));
                    }
                }
                // A call that never reached its end event (the run failed around it) keeps no
                // view.
                Event::RunEnded(_) => self.link.views.close_all(),
                _ => {}
            }
        })
    }

    fn prepare_run(
        session: Weak<AcpSession>,
        inner: Option<PrepareRunHook>,
    ) -> Option<PrepareRunHook> {
        Some(crate::acp::trust::ask_first(session, inner))
    }

    fn keeps_queues_on_abort(&self) -> bool {
        false
    }
}

impl AcpView {
    /// A loop event as `session/update`s (a tool call's end waits for its diff: `follow`).
    fn show_agent_event(&self, session: &AcpSession, event: &AgentEvent) {
        match event {
            AgentEvent::ToolExecutionEnd { .. } => return,
            AgentEvent::MessageEnd {
                message: AgentMessage::User(_),
            } => session.announce_title(),
            _ => {}
        }
        // The model that wrote a finished message prices it (the session may have switched).
        let model_of = |a: &_| session.controls.model_of(a);
        let shown = lock(&self.translator).updates(event, &session.look(), model_of);
        for update in shown {
            self.notify(update);
        }
    }
}
