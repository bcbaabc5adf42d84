//! Starting and spawning runs (pi's `runWithLifecycle`).

use tokio_util::sync::CancellationToken;

use super::{Agent, AgentError, RunGuard, RunHandle, RunOutcome, emitter, lock, run_inputs};
use crate::agent::loop_::{run_agent_loop, run_agent_loop_continue};
use crate::agent::message::AgentMessage;

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
        let shared = self.shared.clone();
        let join = tokio::spawn(async move {
            let _guard = guard;
            let (context, config, stream_fn) = run_inputs(&shared, skip_initial_steering);
            let emit = emitter(&shared, &cancel);
            RunOutcome::from(
                run_agent_loop(prompts, context, config, emit, cancel, stream_fn).await,
            )
        });
        RunHandle { join }
    }

    pub(super) fn spawn_continue(&self, guard: RunGuard, cancel: CancellationToken) -> RunHandle {
        let shared = self.shared.clone();
        let join = tokio::spawn(async move {
            let _guard = guard;
            let (context, config, stream_fn) = run_inputs(&shared, false);
            let emit = emitter(&shared, &cancel);
            match run_agent_loop_continue(context, config, emit, cancel, stream_fn).await {
                Ok(outcome) => RunOutcome::from(outcome),
                Err(e) => RunOutcome {
                    error: Some(e.to_string()),
                    ..RunOutcome::default()
                },
            }
        });
        RunHandle { join }
    }
}
