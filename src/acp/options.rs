//! A session's modes and config options as ACP shows them: the four modes, the `model` select
//! (the model registry's list) and the `thought_level` select.

use agent_client_protocol_schema::v1 as acp;

use crate::acp::session::{AcpSession, Mode};
use crate::agent::message::ThinkingLevel;
use crate::model_registry::{EnvSource, available_models};

pub const MODEL: &str = "model";
pub const THOUGHT_LEVEL: &str = "thought_level";

const LEVELS: [ThinkingLevel; 6] = [
    ThinkingLevel::Off,
    ThinkingLevel::Minimal,
    ThinkingLevel::Low,
    ThinkingLevel::Medium,
    ThinkingLevel::High,
    ThinkingLevel::Xhigh,
];

pub fn modes(current: Mode) -> acp::SessionModeState {
    let available = Mode::ALL
        .into_iter()
        .map(|mode| {
            let (name, description) = mode.describe();
            acp::SessionMode::new(mode.id(), name).description(description.to_owned())
        })
        .collect();
    acp::SessionModeState::new(current.id(), available)
}

/// The session's config options with their current values.
pub fn config_options(session: &AcpSession, env: &EnvSource) -> Vec<acp::SessionConfigOption> {
    let settings = session.controls.settings();
    let current = format!("{}/{}", settings.model.provider, settings.model.id);
    let mut models: Vec<acp::SessionConfigSelectOption> = available_models(env)
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            let spec = format!("{}/{}", m.provider, m.id);
            let name = if m.name.is_empty() {
                spec.clone()
            } else {
                m.name
            };
            acp::SessionConfigSelectOption::new(spec, name)
        })
        .collect();
    if !models.iter().any(|o| *o.value.0 == *current) {
        models.insert(
            0,
            acp::SessionConfigSelectOption::new(current.clone(), current.clone()),
        );
    }
    let levels = LEVELS
        .iter()
        .map(|l| acp::SessionConfigSelectOption::new(l.as_str(), l.as_str()))
        .collect::<Vec<_>>();
    vec![
        acp::SessionConfigOption::select(MODEL, "Model", current, models)
            .category(acp::SessionConfigOptionCategory::Model),
        acp::SessionConfigOption::select(
            THOUGHT_LEVEL,
            "Thinking",
            settings.thinking_level.as_str(),
            levels,
        )
        .category(acp::SessionConfigOptionCategory::ThoughtLevel),
    ]
}
