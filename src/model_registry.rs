//! The model registry: finds an [`crate::agent::model::Model`] by `provider/id` among the
//! built-in models and the user's models.json, with its API key.
//!
//! Resolution order for the model: `--model`, else `AGENT_LSP_MODEL`, else the first provider with
//! a key in the environment (Anthropic, then OpenAI), else `OPENAI_BASE_URL` alone (a local
//! OpenAI-compatible server), else the first model in models.json. When nothing is configured the
//! error says exactly what to set, and suggests Ollama when it answers on its port.
//!
//! The environment is an explicit [`EnvSource`] so tests never mutate the process environment.

mod builtin;
mod config;
mod ollama;

use std::collections::HashMap;
use std::path::PathBuf;

use crate::agent::message::{AgentMessage, AssistantMessage, ThinkingLevel, Usage};
use crate::agent::model::Model;

pub use builtin::builtin_models;
pub use config::{ModelsFile, ProviderConfig};

/// A snapshot of environment variables.
#[derive(Clone, Debug, Default)]
pub struct EnvSource {
    vars: HashMap<String, String>,
}

impl EnvSource {
    /// The current process environment.
    pub fn from_process() -> EnvSource {
        EnvSource {
            vars: std::env::vars().collect(),
        }
    }

    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> EnvSource {
        EnvSource {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// The value if set and not blank.
    pub fn get_nonempty(&self, name: &str) -> Option<&str> {
        self.get(name).filter(|v| !v.trim().is_empty())
    }

    /// A key variable's value: the environment's, else the key `agent-lsp login` stored under
    /// that name (read each time, so a login in another terminal counts at once).
    pub fn key(&self, var: &str) -> Option<String> {
        self.key_origin(var).map(|(key, _)| key)
    }

    /// [`EnvSource::key`] and where it came from.
    pub fn key_origin(&self, var: &str) -> Option<(String, KeyOrigin)> {
        if let Some(value) = self.get_nonempty(var) {
            return Some((value.to_string(), KeyOrigin::Environment));
        }
        let stored = crate::credentials::Credentials::of(self.config_dir())
            .ok()?
            .read()
            .ok()?;
        let key = stored.get(var)?.clone();
        Some((key, KeyOrigin::Stored))
    }

    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(name.into(), value.into());
    }

    /// `$XDG_CONFIG_HOME/agent-lsp`, else `~/.config/agent-lsp`.
    pub fn config_dir(&self) -> Option<PathBuf> {
        let var = |name: &str| self.get(name).map(str::to_owned);
        crate::credentials::config_dir(var("XDG_CONFIG_HOME"), var("HOME"))
    }
}

/// Where a key came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOrigin {
    Environment,
    /// `agent-lsp login`'s store ([`crate::credentials`]).
    Stored,
}

/// A model ready to stream: its description and the key to send (if any).
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedModel {
    pub model: Model,
    pub api_key: Option<String>,
}

impl ResolvedModel {
    /// `provider/id`.
    pub fn spec(&self) -> String {
        format!("{}/{}", self.model.provider, self.model.id)
    }
}

/// Why no model could be resolved. Every message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{0}")]
    NotConfigured(String),
    #[error("unknown provider {provider:?} in {spec:?}; known providers: {known}")]
    UnknownProvider {
        spec: String,
        provider: String,
        known: String,
    },
    #[error(
        "no model {0:?}: give it as provider/id, e.g. openai/gpt-4.1 or anthropic/claude-sonnet-4-5"
    )]
    NotFound(String),
    #[error("model {spec:?} is ambiguous: {candidates}; give it as provider/id")]
    Ambiguous { spec: String, candidates: String },
    #[error("no API key for provider {provider}: set {hint}")]
    MissingKey { provider: String, hint: String },
    #[error("cannot read {path}: {message}")]
    Config { path: PathBuf, message: String },
}

/// Resolves a model spec (`provider/id`, a bare id, or `None` for the default) with its key.
pub fn resolve_model(spec: Option<&str>, env: &EnvSource) -> Result<ResolvedModel, ModelError> {
    let registry = Registry::load(env)?;
    let spec = spec
        .map(str::to_string)
        .or_else(|| env.get_nonempty("AGENT_LSP_MODEL").map(str::to_string));
    let mut model = match spec {
        Some(spec) => registry.find(&spec)?,
        None => registry.default_model(env)?,
    };
    // Header values resolve like keys (`$VAR`, `!command`), as pi resolves them.
    if let Some(headers) = &mut model.headers {
        for value in headers.values_mut() {
            if let serde_json::Value::String(raw) = value {
                *raw = config::resolve_value(raw, env)?;
            }
        }
    }
    let api_key = registry.api_key(&model, env)?;
    Ok(ResolvedModel { model, api_key })
}

/// Why the default model (no `--model`, no `AGENT_LSP_MODEL`) is the one it is, as
/// [`resolve_model`] picks it: `OPENAI_API_KEY is set`, `the first provider of models.json`.
pub fn default_model_reason(env: &EnvSource) -> Result<String, ModelError> {
    Ok(Registry::load(env)?.default_choice(env)?.1)
}

/// Every model known from built-ins and models.json (for listings).
pub fn available_models(env: &EnvSource) -> Result<Vec<Model>, ModelError> {
    Ok(Registry::load(env)?.models)
}

/// Every model the user can use now: the built-ins and models.json entries whose provider has a
/// key (or needs none), then the models a local Ollama has installed.
pub fn usable_models(env: &EnvSource) -> Result<Vec<Model>, ModelError> {
    let registry = Registry::load(env)?;
    let mut models: Vec<Model> = (registry.models.iter())
        .filter(|m| registry.has_key(m, env))
        .cloned()
        .collect();
    for name in ollama::probe(&registry.env_ollama_host).unwrap_or_default() {
        if !models
            .iter()
            .any(|m| m.provider == "ollama" && m.id == name)
        {
            let mut model = builtin::ollama_template(&registry.env_ollama_host);
            (model.id, model.name) = (name.clone(), name);
            models.push(model);
        }
    }
    Ok(models)
}

/// Fills `usage.cost` from the model's per-million prices (pi's `calculateCost`), unless the
/// provider already reported a cost.
/// The message as a session records it: an assistant's priced by the model that wrote it
/// (`model_of`) when it carries no cost yet. When pricing adds nothing (a free model, the
/// provider's own figures) it is the same shared message, so the record holds no copy of it.
pub fn priced(
    message: &AgentMessage,
    model_of: impl FnOnce(&AssistantMessage) -> Model,
) -> AgentMessage {
    let AgentMessage::Assistant(assistant) = message else {
        return message.clone();
    };
    let mut usage = assistant.usage.clone();
    apply_cost(&model_of(assistant), &mut usage);
    if usage == assistant.usage {
        return message.clone();
    }
    AssistantMessage {
        usage,
        ..(**assistant).clone()
    }
    .into()
}

/// Prices `usage` at the model's rates, unless it already has a cost (the provider reported one).
pub fn apply_cost(model: &Model, usage: &mut Usage) {
    if usage.cost.total > 0.0 || usage.cost.total_from_provider == Some(true) {
        return;
    }
    model.cost.charge(usage);
}

/// The thinking levels a model accepts: only `off` without reasoning; OpenAI reasoning models
/// take `minimal`..`high`; Anthropic takes budgets up to `xhigh`; others `low`..`high`. The wire
/// form of a level (effort string, token budget) is the provider's business (`provider/`).
pub fn thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    use ThinkingLevel::*;
    if !model.reasoning {
        return vec![Off];
    }
    match model.api.as_str() {
        "anthropic-messages" => vec![Off, Minimal, Low, Medium, High, Xhigh],
        _ if model.provider == "openai" => vec![Off, Minimal, Low, Medium, High],
        _ => vec![Off, Low, Medium, High],
    }
}

/// The closest level the model accepts at or below `requested` (never silently above it).
pub fn clamp_thinking(model: &Model, requested: ThinkingLevel) -> ThinkingLevel {
    let levels = thinking_levels(model);
    levels
        .iter()
        .copied()
        // Variants are declared from least to most effort, so the discriminant orders them.
        .filter(|l| (*l as u8) <= (requested as u8))
        .max_by_key(|l| *l as u8)
        .unwrap_or(ThinkingLevel::Off)
}

/// Built-ins plus models.json, with the provider configs that carry keys and base URLs.
struct Registry {
    models: Vec<Model>,
    providers: HashMap<String, ProviderConfig>,
    models_path: Option<PathBuf>,
    /// `provider/id` of the first model listed in models.json.
    first_custom: Option<String>,
    env_ollama_host: String,
}

impl Registry {
    fn load(env: &EnvSource) -> Result<Registry, ModelError> {
        let mut models = builtin_models(env);
        let models_path = env.config_dir().map(|d| d.join("models.json"));
        let mut providers = HashMap::new();
        let mut first_custom = None;
        if let Some(path) = &models_path
            && path.is_file()
        {
            let file = ModelsFile::read(path)?;
            file.merge_into(&mut models);
            first_custom = file
                .providers
                .iter()
                .find_map(|(name, config)| Some(format!("{name}/{}", config.models.first()?.id)));
            providers = file.providers.into_iter().collect();
        }
        Ok(Registry {
            models,
            providers,
            models_path,
            first_custom,
            env_ollama_host: ollama::host(env),
        })
    }

    fn known_providers(&self) -> Vec<String> {
        let mut names: Vec<String> = self.models.iter().map(|m| m.provider.clone()).collect();
        names.extend(self.providers.keys().cloned());
        names.push("ollama".into());
        names.sort();
        names.dedup();
        names
    }

    fn find(&self, spec: &str) -> Result<Model, ModelError> {
        if let Some((provider, id)) = spec.split_once('/') {
            if let Some(m) = self
                .models
                .iter()
                .find(|m| m.provider == provider && m.id == id)
            {
                return Ok(m.clone());
            }
            // Unknown ids on a known provider are allowed (new models, local servers): they get
            // the provider's defaults and no prices.
            return match self.provider_template(provider) {
                Some(mut template) => {
                    template.id = id.to_string();
                    template.name = id.to_string();
                    Ok(template)
                }
                None => Err(ModelError::UnknownProvider {
                    spec: spec.into(),
                    provider: provider.into(),
                    known: self.known_providers().join(", "),
                }),
            };
        }
        let candidates: Vec<&Model> = self.models.iter().filter(|m| m.id == spec).collect();
        match candidates.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(ModelError::NotFound(spec.into())),
            many => Err(ModelError::Ambiguous {
                spec: spec.into(),
                candidates: many
                    .iter()
                    .map(|m| format!("{}/{}", m.provider, m.id))
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// A model shell for `provider` with its API, base URL and generic limits.
    fn provider_template(&self, provider: &str) -> Option<Model> {
        if let Some(config) = self.providers.get(provider) {
            return Some(config.template(provider));
        }
        if provider == "ollama" {
            return Some(builtin::ollama_template(&self.env_ollama_host));
        }
        let mut template = self.models.iter().find(|m| m.provider == provider)?.clone();
        // Limits and prices of a sibling model would be guesses: use pi's generic defaults.
        template.cost = Default::default();
        template.context_window = config::DEFAULT_CONTEXT_WINDOW;
        template.max_tokens = config::DEFAULT_MAX_TOKENS;
        template.reasoning = false;
        Some(template)
    }

    fn default_model(&self, env: &EnvSource) -> Result<Model, ModelError> {
        let (spec, _) = self.default_choice(env)?;
        self.find(&spec)
    }

    /// The default model's `provider/id` and why it is the one: a built-in provider's key, else
    /// the first provider of models.json, else `OPENAI_BASE_URL`.
    fn default_choice(&self, env: &EnvSource) -> Result<(String, String), ModelError> {
        let set = |var: &str| env.get_nonempty(var).is_some();
        let found = |var: &str| {
            env.key_origin(var).map(|(_, origin)| match origin {
                KeyOrigin::Environment => format!("{var} is set"),
                KeyOrigin::Stored => format!("{var} is stored (agent-lsp login)"),
            })
        };
        let chosen = |provider: &str, id: &str, why: String| (format!("{provider}/{id}"), why);
        if let Some(why) = ["ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"]
            .into_iter()
            .find_map(found)
        {
            return Ok(chosen("anthropic", builtin::DEFAULT_ANTHROPIC, why));
        }
        if let Some(why) = found("OPENAI_API_KEY") {
            return Ok(chosen("openai", builtin::DEFAULT_OPENAI, why));
        }
        if let Some(first) = &self.first_custom {
            return Ok((first.clone(), "the first provider of models.json".into()));
        }
        if set("OPENAI_BASE_URL") {
            return Ok(chosen(
                "openai",
                builtin::DEFAULT_OPENAI,
                "OPENAI_BASE_URL is set".into(),
            ));
        }
        Err(ModelError::NotConfigured(self.not_configured_text(env)))
    }

    fn not_configured_text(&self, env: &EnvSource) -> String {
        let models_json = self
            .models_path
            .as_ref()
            .map_or("models.json".to_string(), |p| p.display().to_string());
        let mut text = format!(
            "no model is configured. Store a key with `agent-lsp login`, or set one of:\n  \
             ANTHROPIC_API_KEY=…   (uses anthropic/{})\n  \
             OPENAI_API_KEY=…      (uses openai/{})\n  \
             OPENAI_BASE_URL=http://host:port/v1 with --model openai/<id> for an OpenAI-compatible server\n  \
             or add a provider to {models_json}\n\
             and pick a model with --model provider/id (or AGENT_LSP_MODEL).\n\
             Try agent-lsp without a model: agent-lsp demo; see what it finds here: agent-lsp doctor.",
            builtin::DEFAULT_ANTHROPIC,
            builtin::DEFAULT_OPENAI,
        );
        let host = ollama::host(env);
        match ollama::probe(&host) {
            Some(models) if !models.is_empty() => text.push_str(&format!(
                "\nOllama is running at {host}: try --model ollama/{} (installed: {}).",
                models[0],
                models.join(", ")
            )),
            Some(_) => text.push_str(&format!(
                "\nOllama is running at {host}: pull a model (`ollama pull qwen3`) and use --model ollama/<name>."
            )),
            None => {}
        }
        text
    }

    /// Whether the model's key is there, without running a configured key command.
    fn has_key(&self, model: &Model, env: &EnvSource) -> bool {
        let configured = (self.providers.get(&model.provider)).is_some_and(|c| c.api_key.is_some());
        configured || self.api_key(model, env).is_ok()
    }

    fn api_key(&self, model: &Model, env: &EnvSource) -> Result<Option<String>, ModelError> {
        if let Some(config) = self.providers.get(&model.provider)
            && let Some(key) = &config.api_key
        {
            return config::resolve_value(key, env).map(Some);
        }
        let (vars, base_var, default_base): (&[&str], &str, &str) = match model.provider.as_str() {
            "anthropic" => (
                &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
                "ANTHROPIC_BASE_URL",
                builtin::ANTHROPIC_BASE_URL,
            ),
            "openai" => (
                &["OPENAI_API_KEY"],
                "OPENAI_BASE_URL",
                builtin::OPENAI_BASE_URL,
            ),
            "ollama" => return Ok(env.key("OLLAMA_API_KEY")),
            provider => {
                let vars = crate::provider::api_key::env_vars(provider);
                return Ok(vars.iter().find_map(|v| env.key(v)));
            }
        };
        if let Some(key) = vars.iter().find_map(|v| env.key(v)) {
            return Ok(Some(key));
        }
        // A custom endpoint (a local server or a proxy) may need no key.
        if model.base_url != default_base {
            return Ok(None);
        }
        Err(ModelError::MissingKey {
            provider: model.provider.clone(),
            hint: format!(
                "{} (or {base_var} for a server that needs no key)",
                vars[vars.len() - 1]
            ),
        })
    }
}

#[cfg(test)]
mod tests;

/// The key variables of the web search services (`web_search`: Brave, Tavily).
pub const SEARCH_KEY_VARS: [&str; 2] = ["BRAVE_API_KEY", "TAVILY_API_KEY"];

/// The environment variables that hold the daemon's keys: every built-in provider's key
/// variable, the web search services' ([`SEARCH_KEY_VARS`]), and the variables `models.json`
/// names for keys and headers (`$VAR`, `${VAR}`, or a bare name that is set). Sandboxed
/// commands do not get them (issue 30).
pub fn secret_env_names(env: &EnvSource) -> Vec<String> {
    let mut names: Vec<String> = crate::provider::api_key::PROVIDERS
        .iter()
        .flat_map(|p| {
            crate::provider::api_key::env_vars(p)
                .iter()
                .map(|v| v.to_string())
        })
        .collect();
    names.extend(SEARCH_KEY_VARS.iter().map(|v| v.to_string()));
    let file = env
        .config_dir()
        .map(|d| d.join("models.json"))
        .filter(|p| p.is_file())
        .and_then(|p| ModelsFile::read(&p).ok());
    for (_, provider) in file.iter().flat_map(|f| f.providers.iter()) {
        let headers = provider
            .headers
            .iter()
            .flatten()
            .filter_map(|(_, v)| v.as_str());
        for raw in provider.api_key.as_deref().into_iter().chain(headers) {
            if let Some(name) = config::referenced_var(raw, env) {
                names.push(name);
            }
        }
    }
    names.sort();
    names.dedup();
    names
}
