//! How `agent-lsp run` decides, asks and shows ([`View`] of [`CliView`]): `--approve` as the
//! approval policy and no one to ask about a call, questions for the user on the terminal
//! (`ask.rs`), every event through the renderer, the run's usage summed,
//! and a record that cannot be written failing the run (a script's record is its output).

use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::RunOutcome;
use crate::agent::event::AgentEvent;
use crate::agent::hooks::BeforeToolCallContext;
use crate::agent::message::{AgentMessage, Usage};
use crate::cli::approve::{Approval, no_one_to_ask};
use crate::cli::output::Renderer;
use crate::core::GuardEvent;
use crate::core::approval::{Answer, Policy};
use crate::core::session::{Event, Session, View};
use crate::sandbox::MustAsk;
use crate::tools::{Question, UserAnswer};

/// What `agent-lsp run` keeps of its session besides the core.
pub struct CliView {
    pub renderer: Arc<dyn Renderer>,
    pub approval: Approval,
    run_usage: Mutex<Usage>,
    settled: Mutex<Option<(RunOutcome, Option<GuardEvent>)>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl CliView {
    pub fn new(renderer: Arc<dyn Renderer>, approval: Approval) -> CliView {
        CliView {
            renderer,
            approval,
            run_usage: Mutex::default(),
            settled: Mutex::default(),
        }
    }

    /// The run's usage so far.
    pub fn run_usage(&self) -> Usage {
        lock(&self.run_usage).clone()
    }

    /// How the last run ended, once it settled: its outcome and the loop guard's stop.
    pub fn take_settled(&self) -> Option<(RunOutcome, Option<GuardEvent>)> {
        lock(&self.settled).take()
    }
}

impl View for CliView {
    fn policy(&self, session: &Session<Self>, tool: &str, _args: &Value) -> Policy {
        self.approval.policy(&session.tools, tool)
    }

    fn ask<'a>(
        &'a self,
        session: &'a Arc<Session<Self>>,
        ctx: &'a BeforeToolCallContext,
        must_ask: Option<&'a MustAsk>,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Answer, String>> {
        let tool = &ctx.tool_call.name;
        // `--approve`'s own words when it is why the call asks (no allow rule covered it).
        let why = match must_ask {
            None => self.approval.refusal_of(&session.tools, tool),
            Some(_) => None,
        };
        let why = why.unwrap_or_else(|| no_one_to_ask(tool, must_ask));
        Box::pin(std::future::ready(Err(why)))
    }

    fn ask_user<'a>(
        &'a self,
        _session: &'a Arc<Session<Self>>,
        question: &'a Question,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, UserAnswer> {
        Box::pin(crate::cli::ask::ask(question, cancel))
    }

    fn show(&self, session: &Session<Self>, _run: Option<&str>, event: Event<'_>) {
        match event {
            Event::Agent(event) => {
                if let AgentEvent::MessageEnd { message } = event.as_ref()
                    && let AgentMessage::Assistant(a) =
                        crate::model_registry::priced(message, |a| session.controls.model_of(a))
                {
                    // Priced by the model that wrote it, as it is recorded.
                    lock(&self.run_usage).accumulate(&a.usage);
                }
                self.renderer.event(event);
            }
            Event::Compaction(event) => self.renderer.compaction(event),
            Event::Guard(event) => self.renderer.loop_guard(event),
            Event::Plan(update) => self.renderer.plan(update),
            Event::Job(job) => self.renderer.job(job),
            Event::Hook(run) => self.renderer.hook(run),
            Event::Child(child) => self.renderer.child(child),
            Event::Settled(end) => {
                *lock(&self.settled) = Some((end.outcome.clone(), end.stop.clone()));
            }
            Event::Queues(_) | Event::Delivered(_) | Event::Allowed(_) | Event::RunEnded(_) => {}
        }
    }

    fn record_failed(&self, _session_id: &str, error: String) -> Result<(), String> {
        Err(error)
    }
}
