//! The live controls of a session (models, thinking level, queue modes, stats) and the stored
//! sessions (list, fork, rename), as agent methods. The behaviour is the session core's
//! (`core::controls`, `store::SessionStore`); this module only maps it to the wire.

use std::path::PathBuf;
use std::sync::Arc;

use crate::core::stats::{SessionStats, session_stats};
use crate::core::{LiveSettings, ModelInfo, SwitchError};
use crate::lsp::live_session::LiveSession;
use crate::lsp::protocol::{
    ForkSessionResult, ListModelsResult, ListSessionsResult, QueueModesResult, RenameSessionParams,
    SessionInfo, SetModelParams, SetQueueModesParams, SetSandboxParams, SetThinkingLevelParams,
};
use crate::lsp::session_table::{SessionTable, store, stored_record};
use crate::model_registry::{EnvSource, usable_models};
use crate::rpc::jsonrpc::ResponseError;
use crate::store::time::iso_from_ms;
use crate::store::{ForkPoint, SessionFile, SessionSummary};

type Result<T> = std::result::Result<T, ResponseError>;

fn switch_error(e: SwitchError) -> ResponseError {
    match e {
        SwitchError::Model(e) => ResponseError::invalid_params(e.to_string()),
        SwitchError::Record(e) => ResponseError::internal(e.to_string()),
    }
}

/// What a session listing shows of one stored session.
pub fn session_info(s: &SessionSummary) -> SessionInfo {
    SessionInfo {
        session_id: s.id.clone(),
        title: s.title(),
        name: s.name.clone(),
        cwd: s.cwd.clone(),
        created: s.created.clone(),
        modified: iso_from_ms(s.updated_ms),
        message_count: s.message_count,
        file: s.path.display().to_string(),
    }
}

impl SessionTable {
    /// `agent/listModels`: every model the user can use now.
    pub fn list_models(&self) -> Result<ListModelsResult> {
        let models = usable_models(&EnvSource::from_process())
            .map_err(|e| ResponseError::internal(e.to_string()))?;
        Ok(ListModelsResult {
            models: models.iter().map(ModelInfo::from).collect(),
        })
    }

    /// `agent/setModel`: from the session's next request on, also mid-run.
    pub fn set_model(&self, p: SetModelParams) -> Result<LiveSettings> {
        let session = self.get(&p.session_id)?;
        let settings = (session.controls)
            .set_model(&session.agent, &mut session.record(), &p.model)
            .map_err(switch_error)?;
        Ok(model_update(&session, settings))
    }

    /// `agent/setThinkingLevel`: clamped to what the model accepts.
    pub fn set_thinking_level(&self, p: SetThinkingLevelParams) -> Result<LiveSettings> {
        let session = self.get(&p.session_id)?;
        let settings = (session.controls)
            .set_thinking_level(&session.agent, &mut session.record(), p.level)
            .map_err(switch_error)?;
        Ok(model_update(&session, settings))
    }

    /// `agent/setQueueModes`: pi's `set_steering_mode` / `set_follow_up_mode`, live.
    pub fn set_queue_modes(&self, p: SetQueueModesParams) -> Result<QueueModesResult> {
        let agent = &self.get(&p.session_id)?.agent;
        if let Some(mode) = p.steering {
            agent.set_steering_mode(mode);
        }
        if let Some(mode) = p.follow_up {
            agent.set_follow_up_mode(mode);
        }
        let (steering, follow_up) = agent.queue_modes();
        Ok(QueueModesResult {
            steering,
            follow_up,
        })
    }

    /// `agent/setSandbox`: the session's command sandbox from its next command on; the result
    /// is `agent/getState`'s `sandbox`.
    pub fn set_sandbox(&self, p: SetSandboxParams) -> Result<serde_json::Value> {
        let sandbox = &self.get(&p.session_id)?.sandbox;
        sandbox.set(p.sandbox, p.sandbox_network);
        Ok(serde_json::json!({"sessionId": p.session_id, "sandbox": sandbox.status_json()}))
    }

    /// `agent/getStats`: pi's `get_session_stats`.
    pub fn stats(&self, session_id: &str) -> Result<SessionStats> {
        let session = self.get(session_id)?;
        let context = session.agent.state().messages;
        let model = session.controls.model();
        Ok(session_stats(&session.record(), &context, &model))
    }

    /// `agent/listSessions`: the stored sessions (of `cwd`, if given), newest first.
    pub fn list_sessions(&self, cwd: Option<String>) -> Result<ListSessionsResult> {
        let Some(store) = store() else {
            return Ok(ListSessionsResult { sessions: vec![] });
        };
        let cwd = cwd.map(|c| std::fs::canonicalize(&c).unwrap_or_else(|_| PathBuf::from(c)));
        let listed = match &cwd {
            Some(cwd) => store.list_for_cwd(cwd),
            None => store.list(),
        };
        let sessions = listed.map_err(|e| ResponseError::internal(e.to_string()))?;
        Ok(ListSessionsResult {
            sessions: sessions.iter().map(session_info).collect(),
        })
    }

    /// `agent/forkSession`: a new session holding the conversation before that user message,
    /// as pi forks; the source (live or stored) is unchanged.
    pub fn fork_session(&self, session_id: &str, message_id: &str) -> Result<ForkSessionResult> {
        let store = store()
            .ok_or_else(|| ResponseError::invalid_params("there is no session directory"))?;
        let at = ForkPoint::BeforeUserMessage(message_id);
        let forked = match self.get(session_id) {
            Ok(live) => store.fork(&live.record(), at),
            Err(_) => store.fork(&stored_record(session_id)?, at),
        };
        let (fork, text) = forked.map_err(|e| {
            ResponseError::invalid_params(format!("cannot fork at {message_id:?}: {e}"))
        })?;
        let session = self.resume_record(fork)?;
        Ok(ForkSessionResult {
            session_id: session.id.clone(),
            cwd: session.cwd.display().to_string(),
            text,
        })
    }

    /// `agent/renameSession`: pi's `session_info` entry, in a live or a stored session.
    pub fn rename_session(&self, p: RenameSessionParams) -> Result<RenameSessionParams> {
        let rename = |record: &mut SessionFile| {
            record
                .set_name(&p.name)
                .map_err(|e| ResponseError::invalid_params(e.to_string()))?;
            Ok(RenameSessionParams {
                session_id: record.id().to_string(),
                name: record.name().unwrap_or_default(),
            })
        };
        match self.get(&p.session_id) {
            Ok(live) => rename(&mut live.record()),
            Err(_) => rename(&mut stored_record(&p.session_id)?),
        }
    }
}

/// Sends `model_update` and returns the settings.
fn model_update(session: &Arc<LiveSession>, settings: LiveSettings) -> LiveSettings {
    crate::lsp::live_session::announce_settings(session, &settings);
    settings
}
