//! The run's recorder: persists each finished message before it is shown, and sums usage.

use std::sync::{Arc, Mutex};

use crate::agent::event::AgentEvent;
use crate::agent::message::{AgentMessage, Usage};
use crate::agent::{AgentListener, CallbackError};
use crate::cli::output::Renderer;
use crate::model_registry::priced;
use crate::session::{SessionError, SessionFile};
use crate::session_setup::{SessionControls, SharedRecord};

/// Records every finished message in the session (with its cost) before it is shown, and sums
/// the run's usage.
#[derive(Clone, Default)]
pub struct Recorder {
    inner: Arc<Mutex<RecorderState>>,
}

#[derive(Default)]
struct RecorderState {
    session: Option<SharedRecord>,
    run_usage: Usage,
}

impl Recorder {
    pub fn new(session: SharedRecord) -> Recorder {
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
                    let message = priced(message, |a| controls.model_of(a));
                    let mut state = inner
                        .lock()
                        .map_err(|_| CallbackError::from("recorder lock poisoned"))?;
                    if let AgentMessage::Assistant(a) = &message {
                        state.run_usage.accumulate(&a.usage);
                    }
                    let appended = match &state.session {
                        Some(session) => session
                            .lock()
                            .map_err(|_| SessionError::Refused("session lock poisoned".into()))
                            .and_then(|mut s| s.append_message(&message)),
                        None => Ok(String::new()),
                    };
                    if let Err(e) = appended {
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
        let state = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match &state.session {
            Some(session) => f(&mut session.lock().unwrap_or_else(|e| e.into_inner())),
            None => f(&mut SessionFile::in_memory(std::path::Path::new("."))),
        }
    }

    /// (this run's usage, the whole session's usage).
    pub fn totals(&self) -> (Usage, Usage) {
        match self.inner.lock() {
            Ok(state) => {
                let session = (state.session.as_ref())
                    .and_then(|s| s.lock().ok().map(|s| SessionFile::usage(&s)));
                (
                    state.run_usage.clone(),
                    session.unwrap_or_else(|| state.run_usage.clone()),
                )
            }
            Err(_) => (Usage::default(), Usage::default()),
        }
    }
}
