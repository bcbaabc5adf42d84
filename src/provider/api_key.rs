//! API key resolution for a request: the caller's key, else the provider's environment
//! variable (pi's `getEnvApiKey` map, §A10).

use crate::agent::model::Model;
use crate::agent::stream_contract::StreamOptions;

/// The built-in providers with a key variable ([`env_vars`]; aliases left out).
pub const PROVIDERS: [&str; 15] = [
    "anthropic",
    "openai",
    "groq",
    "cerebras",
    "xai",
    "openrouter",
    "zai",
    "mistral",
    "deepseek",
    "together",
    "fireworks",
    "huggingface",
    "ollama",
    "llama.cpp",
    "lmstudio",
];

/// The environment variables consulted for a provider id, in order.
pub fn env_vars(provider: &str) -> &'static [&'static str] {
    match provider {
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "openai" => &["OPENAI_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "together" => &["TOGETHER_API_KEY"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "ollama" => &["OLLAMA_API_KEY"],
        "llama.cpp" | "llamacpp" => &["LLAMA_API_KEY"],
        "lmstudio" | "lm-studio" => &["LM_STUDIO_API_KEY"],
        _ => &[],
    }
}

/// `options.api_key`, else the first non-empty environment variable for the provider.
pub fn resolve(model: &Model, options: &StreamOptions) -> Option<String> {
    if let Some(key) = options.api_key.as_ref().filter(|k| !k.is_empty()) {
        return Some(key.clone());
    }
    env_vars(&model.provider)
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
}

/// Hosted APIs that always need a key: fail early with pi's message instead of a 401.
pub fn missing_key_error(model: &Model, key: Option<&str>) -> Option<String> {
    let hosted = ["api.openai.com", "api.anthropic.com"]
        .iter()
        .any(|host| model.base_url.contains(host));
    let header_auth = model.headers.iter().flatten().any(|(name, _)| {
        ["authorization", "x-api-key"].contains(&name.to_ascii_lowercase().as_str())
    });
    (hosted && key.is_none() && !header_auth)
        .then(|| format!("No API key for provider: {}", model.provider))
}
