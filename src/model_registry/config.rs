//! The user's `models.json`, in pi's shape:
//! `{"providers": {"<id>": {baseUrl, api, apiKey, headers, compat, models: [...], modelOverrides}}}`.
//!
//! A provider entry with only `baseUrl` re-points a built-in provider and keeps its models;
//! custom `models` upsert by id; provider-level `compat` is merged under model-level `compat`.
//!
//! Example (`$XDG_CONFIG_HOME/agent-lsp/models.json`; the models are then `ollama/qwen3:8b`,
//! `vllm/Qwen/Qwen2.5-Coder-32B-Instruct` and `llamacpp/local`; `ollama/<any installed model>`
//! also works without this file):
//!
//! ```json
//! {"providers": {
//!   "ollama": {"baseUrl": "http://127.0.0.1:11434/v1", "api": "openai-completions",
//!              "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
//!              "models": [{"id": "qwen3:8b", "contextWindow": 32768, "maxTokens": 8192}]},
//!   "vllm": {"baseUrl": "http://gpu-box:8000/v1", "apiKey": "VLLM_API_KEY",
//!            "models": [{"id": "Qwen/Qwen2.5-Coder-32B-Instruct", "contextWindow": 32768}]},
//!   "llamacpp": {"baseUrl": "http://127.0.0.1:8080/v1",
//!                "models": [{"id": "local", "reasoning": true,
//!                            "compat": {"thinkingTokenBudgetField": "thinking_budget_tokens"}}]}
//! }}
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::agent::model::{Model, ModelCost};

use super::{EnvSource, ModelError};

/// pi's defaults for a models.json model without limits.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
pub const DEFAULT_MAX_TOKENS: u64 = 16_384;

/// A parsed models.json; providers in file order.
#[derive(Clone, Debug, Default)]
pub struct ModelsFile {
    pub providers: Vec<(String, ProviderConfig)>,
}

/// A provider of models.json; every field is optional.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProviderConfig {
    pub base_url: Option<String>,
    pub api: Option<String>,
    /// A literal key, an environment variable name, `$VAR`/`${VAR}`, or `!command`.
    pub api_key: Option<String>,
    pub headers: Option<Map<String, Value>>,
    pub compat: Option<Map<String, Value>>,
    pub models: Vec<ModelEntry>,
    pub model_overrides: Map<String, Value>,
}

/// A model of a models.json provider; only `id` is required (serde reads a missing `Option` as
/// `None`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelEntry {
    pub id: String,
    pub name: Option<String>,
    pub api: Option<String>,
    pub base_url: Option<String>,
    pub reasoning: Option<bool>,
    pub input: Option<Vec<String>>,
    pub context_window: Option<u64>,
    pub max_tokens: Option<u64>,
    pub cost: Option<ModelCost>,
    pub headers: Option<Map<String, Value>>,
    pub compat: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
struct RawFile {
    #[serde(default)]
    providers: Map<String, Value>,
}

impl ModelsFile {
    pub fn read(path: &Path) -> Result<ModelsFile, ModelError> {
        let config_error = |message: String| ModelError::Config {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| config_error(e.to_string()))?;
        Self::parse(&text).map_err(config_error)
    }

    pub fn parse(text: &str) -> Result<ModelsFile, String> {
        let raw: RawFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let mut providers = Vec::new();
        for (name, value) in raw.providers {
            let config: ProviderConfig =
                serde_json::from_value(value).map_err(|e| format!("provider {name:?}: {e}"))?;
            providers.push((name, config));
        }
        Ok(ModelsFile { providers })
    }

    /// Applies every provider to the model list (see the module doc).
    pub fn merge_into(&self, models: &mut Vec<Model>) {
        for (name, config) in &self.providers {
            for model in models.iter_mut().filter(|m| &m.provider == name) {
                config.apply_provider_fields(model);
            }
            for entry in &config.models {
                let model = config.model_from_entry(name, entry);
                match models
                    .iter_mut()
                    .find(|m| &m.provider == name && m.id == entry.id)
                {
                    Some(existing) => *existing = model,
                    None => models.push(model),
                }
            }
            for (id, overrides) in &config.model_overrides {
                if let Some(model) = models
                    .iter_mut()
                    .find(|m| &m.provider == name && &m.id == id)
                {
                    apply_override(model, overrides);
                }
            }
        }
    }

    pub fn path_in(config_dir: &Path) -> PathBuf {
        config_dir.join("models.json")
    }
}

impl ProviderConfig {
    /// A model shell for an id models.json does not list.
    pub fn template(&self, provider: &str) -> Model {
        self.model_from_entry(
            provider,
            &ModelEntry {
                id: String::new(),
                ..Default::default()
            },
        )
    }

    fn default_api(&self, provider: &str) -> String {
        match (&self.api, provider) {
            (Some(api), _) => api.clone(),
            (None, "anthropic") => "anthropic-messages".into(),
            _ => "openai-completions".into(),
        }
    }

    fn apply_provider_fields(&self, model: &mut Model) {
        if let Some(base) = &self.base_url {
            model.base_url = base.trim_end_matches('/').to_string();
        }
        if let Some(api) = &self.api {
            model.api = api.clone();
        }
        if let Some(headers) = &self.headers {
            model.headers = Some(headers.clone());
        }
        model.compat = merge_maps(self.compat.as_ref(), model.compat.as_ref());
    }

    fn model_from_entry(&self, provider: &str, entry: &ModelEntry) -> Model {
        let mut model = Model {
            id: entry.id.clone(),
            name: entry.name.clone().unwrap_or_else(|| entry.id.clone()),
            api: entry
                .api
                .clone()
                .unwrap_or_else(|| self.default_api(provider)),
            provider: provider.to_string(),
            base_url: entry
                .base_url
                .clone()
                .or_else(|| self.base_url.clone())
                .unwrap_or_default()
                .trim_end_matches('/')
                .to_string(),
            reasoning: entry.reasoning.unwrap_or(false),
            input: entry.input.clone().unwrap_or_else(|| vec!["text".into()]),
            cost: entry.cost.clone().unwrap_or_default(),
            context_window: entry.context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW),
            max_tokens: entry.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            headers: entry.headers.clone().or_else(|| self.headers.clone()),
            compat: None,
        };
        model.compat = merge_maps(self.compat.as_ref(), entry.compat.as_ref());
        model
    }
}

/// `base` with `top` laid over it; `None` when both are absent.
fn merge_maps(
    base: Option<&Map<String, Value>>,
    top: Option<&Map<String, Value>>,
) -> Option<Map<String, Value>> {
    match (base, top) {
        (None, None) => None,
        (base, top) => {
            let mut merged = base.cloned().unwrap_or_default();
            merged.extend(top.cloned().unwrap_or_default());
            Some(merged)
        }
    }
}

/// Lays partial model fields (pi's `modelOverrides`) over a model via its JSON form.
fn apply_override(model: &mut Model, overrides: &Value) {
    let (Ok(Value::Object(mut base)), Value::Object(patch)) =
        (serde_json::to_value(&*model), overrides)
    else {
        return;
    };
    for (key, value) in patch {
        if key == "id" || key == "provider" {
            continue;
        }
        base.insert(key.clone(), value.clone());
    }
    match serde_json::from_value::<Model>(Value::Object(base)) {
        Ok(patched) => *model = patched,
        Err(e) => {
            tracing::warn!(model = %model.id, "ignoring an invalid modelOverrides entry: {e}")
        }
    }
}

/// pi's `resolveConfigValue`: `!command` runs the command (stdout, trimmed); `$VAR` / `${VAR}`
/// reads the environment; a bare name that is set in the environment reads it; anything else is
/// a literal.
pub fn resolve_value(raw: &str, env: &EnvSource) -> Result<String, ModelError> {
    if let Some(command) = raw.strip_prefix('!') {
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| {
                ModelError::NotConfigured(format!("models.json command {command:?}: {e}"))
            })?;
        if !output.status.success() {
            return Err(ModelError::NotConfigured(format!(
                "models.json command {command:?} failed ({})",
                output.status
            )));
        }
        return Ok(String::from_utf8_lossy(&output.stdout).trim().to_string());
    }
    let braced = raw
        .strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .or_else(|| raw.strip_prefix('$'));
    if let Some(name) = braced {
        return env.get(name).map(str::to_string).ok_or_else(|| {
            ModelError::NotConfigured(format!("models.json refers to ${name}, which is not set"))
        });
    }
    Ok(env.get(raw).unwrap_or(raw).to_string())
}

/// The environment variable a config value reads, as [`resolve_value`] reads it: `$VAR`,
/// `${VAR}`, or a bare name that is set.
pub fn referenced_var(raw: &str, env: &EnvSource) -> Option<String> {
    if raw.starts_with('!') {
        return None;
    }
    let braced = raw
        .strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .or_else(|| raw.strip_prefix('$'));
    match braced {
        Some(name) => Some(name.to_string()),
        None => env.get(raw).map(|_| raw.to_string()),
    }
}
