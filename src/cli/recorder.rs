//! The run's recorder: persists each finished message before it is shown, and sums usage.

use std::sync::{Arc, Mutex};

use crate::agent::event::AgentEvent;
use crate::agent::message::{AgentMessage, Usage};
use crate::agent::{AgentListener, CallbackError};
use crate::cli::output::Renderer;
use crate::model_registry::apply_cost;
use crate::session::SessionFile;
use crate::session_setup::SessionControls;

/// Records every finished message in the session (with its cost) before it is shown, and sums
/// the run's usage.
#[derive(Clone, Default)]
pub struct Recorder {
    inner: Arc<Mutex<RecorderState>>,
}

#[derive(Default)]
struct RecorderState {
    session: Option<SessionFile>,
    run_usage: Usage,
}

impl Recorder {
    pub fn new(session: SessionFile) -> Recorder {
        Recorder {
            inner: Arc::new(Mutex::new(RecorderState {
                session: Some(session),
                ..Default::default()
            })),
        }
    }

    /// Records with the costs of the model that wrote each message, and shows events through
    /// `renderer`.
    pub fn listener(
        &self,
        controls: Arc<SessionControls>,
        renderer: Arc<dyn Renderer>,
    ) -> AgentListener {
        let inner = self.inner.clone();
        Arc::new(move |event: Arc<AgentEvent>, _cancel| {
            if !matches!(&*event, AgentEvent::MessageEnd { .. }) {
                // Nothing to record: show it now (one event per delta takes this path).
                renderer.event(&event);
                return Box::pin(std::future::ready(Ok(())));
            }
            let inner = inner.clone();
            let controls = controls.clone();
            let renderer = renderer.clone();
            Box::pin(async move {
                if let AgentEvent::MessageEnd { message } = &*event {
                    let mut message = (**message).clone();
                    let mut state = inner
                        .lock()
                        .map_err(|_| CallbackError::from("recorder lock poisoned"))?;
                    if let AgentMessage::Assistant(a) = &mut message {
                        apply_cost(&controls.model_of(a), &mut a.usage);
                        state.run_usage.accumulate(&a.usage);
                    }
                    if let Some(session) = &mut state.session
                        && let Err(e) = session.append_owned_message(message)
                    {
                        return Err(format!("cannot record the session: {e}").into());
                    }
                }
                renderer.event(&event);
                Ok(())
            })
        })
    }

    /// Runs `f` on the session file (an in-memory one when the run is not recorded).
    pub fn with_session<T>(&self, f: impl FnOnce(&mut SessionFile) -> T) -> T {
        let mut state = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match &mut state.session {
            Some(session) => f(session),
            None => f(&mut SessionFile::in_memory(std::path::Path::new("."))),
        }
    }

    /// (this run's usage, the whole session's usage).
    pub fn totals(&self) -> (Usage, Usage) {
        match self.inner.lock() {
            Ok(state) => {
                let session = state.session.as_ref().map(SessionFile::usage);
                (
                    state.run_usage.clone(),
                    session.unwrap_or_else(|| state.run_usage.clone()),
                )
            }
            Err(_) => (Usage::default(), Usage::default()),
        }
    }
}
