//! Starting and spawning runs (pi's `runWithLifecycle`).

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::FutureExt;

use tokio_util::sync::CancellationToken;

use super::{Agent, AgentError, RunGuard, RunHandle, RunOutcome, Shared, lock};
use crate::agent::config::{AgentLoopConfig, Emit, RunFailure};
use crate::agent::event::AgentEvent;
use crate::agent::hooks::{AgentContext, QueuePollHook};
use crate::agent::message::AgentMessage;
use crate::agent::run_loop::{run_agent_loop, run_agent_loop_continue};
use crate::agent::stream_contract::StreamFn;
use crate::agent::tool_exec::panic_text;

impl Agent {
    /// The busy check and run registration, atomically; the guard ends the run when dropped.
    pub(super) fn begin(&self, busy: &str) -> Result<(RunGuard, CancellationToken), AgentError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(AgentError::NoRuntime);
        }
        let mut active = lock(&self.shared.active);
        if active.is_some() {
            return Err(AgentError::Busy(busy.to_string()));
        }
        let cancel = CancellationToken::new();
        *active = Some(cancel.clone());
        drop(active);
        {
            let mut state = lock(&self.shared.state);
            state.is_streaming = true;
            state.streaming_message = None;
            state.error_message = None;
        }
        self.shared.running.send_replace(true);
        Ok((RunGuard(self.shared.clone()), cancel))
    }

    pub(super) fn spawn_prompt(
        &self,
        guard: RunGuard,
        cancel: CancellationToken,
        prompts: Vec<AgentMessage>,
        skip_initial_steering: bool,
    ) -> RunHandle {
        self.spawn_run(
            guard,
            cancel,
            skip_initial_steering,
            |context, config, emit, cancel, stream_fn| async move {
                run_agent_loop(prompts, context, config, emit, cancel, stream_fn).await
            },
        )
    }

    pub(super) fn spawn_continue(&self, guard: RunGuard, cancel: CancellationToken) -> RunHandle {
        self.spawn_run(
            guard,
            cancel,
            false,
            |context, config, emit, cancel, stream_fn| async move {
                match run_agent_loop_continue(context, config, emit, cancel, stream_fn).await {
                    Ok(outcome) => outcome,
                    Err(e) => RunOutcome {
                        error: Some(e.to_string()),
                        ..RunOutcome::default()
                    },
                }
            },
        )
    }

    /// Spawns a run holding `guard`: the `prepareRun` hook, then `run` drives the loop over
    /// the agent's current inputs.
    fn spawn_run<F, Fut>(
        &self,
        guard: RunGuard,
        cancel: CancellationToken,
        skip_initial_steering: bool,
        run: F,
    ) -> RunHandle
    where
        F: FnOnce(AgentContext, AgentLoopConfig, Emit, CancellationToken, Arc<dyn StreamFn>) -> Fut
            + Send
            + 'static,
        Fut: Future<Output = RunOutcome> + Send,
    {
        let shared = self.shared.clone();
        let join = tokio::spawn(async move {
            let _guard = guard;
            prepare_run(&shared, &cancel).await;
            let (context, config, stream_fn) = run_inputs(&shared, skip_initial_steering);
            let emit = emitter(&shared, &cancel);
            run(context, config, emit, cancel, stream_fn).await
        });
        RunHandle { join }
    }
}

/// Builds the loop's steering poll; `skip_first` makes the first poll return nothing.
fn steering_poll(shared: &Arc<Shared>, skip_first: bool) -> QueuePollHook {
    let shared = shared.clone();
    let skip = Arc::new(AtomicBool::new(skip_first));
    Arc::new(move || {
        let shared = shared.clone();
        let skip = skip.clone();
        Box::pin(async move {
            if skip.swap(false, Ordering::SeqCst) {
                return Ok(Vec::new());
            }
            Ok(lock(&shared.steering).drain())
        })
    })
}

fn follow_up_poll(shared: &Arc<Shared>) -> QueuePollHook {
    let shared = shared.clone();
    Arc::new(move || {
        let shared = shared.clone();
        Box::pin(async move { Ok(lock(&shared.follow_up).drain()) })
    })
}

/// The run's emit: reduce state first, then await every listener in subscription order.
fn emitter(shared: &Arc<Shared>, cancel: &CancellationToken) -> Emit {
    // One shared pair per run: an event then costs one reference count, where cloning the
    // token itself takes a lock (listeners borrow it; one that keeps it clones it).
    let run = Arc::new((shared.clone(), cancel.clone()));
    Arc::new(move |event: AgentEvent| {
        let run = run.clone();
        Box::pin(async move {
            let (shared, cancel) = &*run;
            lock(&shared.state).reduce(&event);
            let event = Arc::new(event);
            let listeners = lock(&shared.listeners).clone();
            for (_, listener) in listeners.iter() {
                // A panicking listener fails the run like a listener returning `Err`.
                AssertUnwindSafe(listener(event.clone(), cancel))
                    .catch_unwind()
                    .await
                    .map_err(|p| RunFailure::Panic(panic_text(p.as_ref())))?
                    .map_err(RunFailure::Listener)?;
            }
            Ok(())
        })
    })
}

/// The context snapshot and loop configuration of a new run.
/// Runs the `prepare_run` hook, if any, and takes the tools it gives (an abort ends the wait).
async fn prepare_run(shared: &Arc<Shared>, cancel: &CancellationToken) {
    let Some(hook) = lock(&shared.settings).hooks.prepare_run.clone() else {
        return;
    };
    let tools = tokio::select! {
        tools = hook(cancel.clone()) => tools,
        () = cancel.cancelled() => None,
    };
    if let Some(tools) = tools {
        lock(&shared.state).tools = tools;
    }
}

fn run_inputs(
    shared: &Arc<Shared>,
    skip_initial_steering: bool,
) -> (AgentContext, AgentLoopConfig, Arc<dyn StreamFn>) {
    let state = lock(&shared.state).clone();
    let settings = lock(&shared.settings).clone();
    let mut config = AgentLoopConfig::new(state.model);
    config.set_thinking_level(state.thinking_level);
    config.stream_options = settings.stream_options;
    config.hooks = settings.hooks;
    config.tool_execution = settings.tool_execution;
    config.abort_grace = settings.abort_grace;
    config.protocol_repair = settings.protocol_repair;
    config.get_steering_messages = Some(steering_poll(shared, skip_initial_steering));
    config.get_follow_up_messages = Some(follow_up_poll(shared));
    let context = AgentContext::new(state.messages, state.tools);
    (context, config, settings.stream_fn)
}
