//! A session's live settings: the model and thinking level, switched while the session lives
//! (also in the middle of a run: the switch applies from the next request), recorded as pi
//! records them (`model_change`, `thinking_level_change`).
//!
//! The loop takes its model when a run starts; the `prepareRequest` hook hands it the session's
//! current one before every request, and `getApiKey` the key that goes with it (the request
//! template carries no key, so a key never reaches another provider's server).

use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;

use crate::agent::Agent;
use crate::agent::hooks::{AgentRequestUpdate, GetApiKeyHook, PrepareRequestHook};
use crate::agent::message::{AssistantMessage, ThinkingLevel};
use crate::agent::model::{Model, ModelCost};
use crate::model_registry::{
    EnvSource, ModelError, ResolvedModel, clamp_thinking, resolve_model, thinking_levels,
};
use crate::store::{SessionError, SessionFile};

/// A model as listings and events show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    pub provider: String,
    pub id: String,
    pub name: String,
    pub api: String,
    pub context_window: u64,
    pub max_tokens: u64,
    pub reasoning: bool,
    pub thinking_levels: Vec<ThinkingLevel>,
    pub input: Vec<String>,
    /// USD per million tokens.
    pub cost: ModelCost,
}

impl From<&Model> for ModelInfo {
    fn from(m: &Model) -> Self {
        ModelInfo {
            provider: m.provider.clone(),
            id: m.id.clone(),
            name: m.name.clone(),
            api: m.api.clone(),
            context_window: m.context_window,
            max_tokens: m.max_tokens,
            reasoning: m.reasoning,
            thinking_levels: thinking_levels(m),
            input: m.input.clone(),
            cost: m.cost.clone(),
        }
    }
}

/// The model and level a session uses now.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveSettings {
    pub model: ModelInfo,
    pub thinking_level: ThinkingLevel,
}

/// Why a switch was refused.
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("cannot record the change: {0}")]
    Record(#[from] SessionError),
}

struct Current {
    resolved: ResolvedModel,
    thinking: ThinkingLevel,
    /// Every model the session used (latest last), so a message is priced by the model that
    /// wrote it and a request is sent with the key of its own provider.
    used: Vec<ResolvedModel>,
}

/// The session's model and thinking level, shared by its hooks and its front end.
pub struct SessionControls {
    current: Mutex<Current>,
    env: EnvSource,
}

impl SessionControls {
    pub fn new(resolved: ResolvedModel, thinking: ThinkingLevel, env: EnvSource) -> Self {
        let used = vec![resolved.clone()];
        SessionControls {
            current: Mutex::new(Current {
                resolved,
                thinking,
                used,
            }),
            env,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Current> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn model(&self) -> Model {
        self.lock().resolved.model.clone()
    }

    pub fn settings(&self) -> LiveSettings {
        let current = self.lock();
        LiveSettings {
            model: ModelInfo::from(&current.resolved.model),
            thinking_level: current.thinking,
        }
    }

    /// The model whose prices apply to `message` (the one that wrote it, else the current one).
    pub fn model_of(&self, message: &AssistantMessage) -> Model {
        let current = self.lock();
        let wrote = |r: &&ResolvedModel| {
            r.model.provider == message.provider && r.model.id == message.model
        };
        (current.used.iter().rev().find(wrote))
            .map_or(&current.resolved.model, |r| &r.model)
            .clone()
    }

    /// Switches the session to `spec` (`provider/id`, or a bare id) from its next request,
    /// also in the middle of a run. Records a `model_change`, and a `thinking_level_change`
    /// when the level had to be clamped to what the new model accepts (as pi's `setModel`).
    pub fn set_model(
        &self,
        agent: &Agent,
        record: &mut SessionFile,
        spec: &str,
    ) -> Result<LiveSettings, SwitchError> {
        let resolved = resolve_model(Some(spec), &self.env)?;
        let model = resolved.model.clone();
        record.append_model_change(&model.provider, &model.id)?;
        let thinking = {
            let mut current = self.lock();
            current.used.push(resolved.clone());
            current.resolved = resolved;
            current.thinking
        };
        agent.set_model(model);
        self.set_thinking_level(agent, record, thinking)
    }

    /// Sets the thinking level (clamped to the model's) from the next request; records a
    /// `thinking_level_change` when it changes.
    pub fn set_thinking_level(
        &self,
        agent: &Agent,
        record: &mut SessionFile,
        requested: ThinkingLevel,
    ) -> Result<LiveSettings, SwitchError> {
        let (level, changed) = {
            let mut current = self.lock();
            let level = clamp_thinking(&current.resolved.model, requested);
            let changed = level != current.thinking;
            current.thinking = level;
            (level, changed)
        };
        if changed {
            record.append_thinking_level(level)?;
        }
        agent.set_thinking_level(level);
        Ok(self.settings())
    }

    /// Before every request: the session's current model and level, when the run's differ.
    pub fn prepare_request_hook(self: &Arc<Self>) -> PrepareRequestHook {
        let controls = self.clone();
        Arc::new(move |request, _cancel| {
            let current = controls.lock();
            let update = (request.model != current.resolved.model
                || request.thinking_level != current.thinking)
                .then(|| AgentRequestUpdate {
                    model: Some(current.resolved.model.clone()),
                    thinking_level: Some(current.thinking),
                    context: None,
                });
            Box::pin(std::future::ready(Ok(update)))
        })
    }

    /// The key of this provider as the session last resolved it.
    pub fn api_key_for(&self, provider: &str) -> Option<String> {
        let current = self.lock();
        let of_provider = current
            .used
            .iter()
            .rev()
            .find(|r| r.model.provider == provider);
        of_provider.and_then(|r| r.api_key.clone())
    }

    /// Per request, the key of the request's provider as the session last resolved it.
    pub fn api_key_hook(self: &Arc<Self>) -> GetApiKeyHook {
        let controls = self.clone();
        Arc::new(move |provider, _cancel| {
            let key = controls.api_key_for(&provider);
            Box::pin(std::future::ready(Ok(key)))
        })
    }
}
