//! Built-in OpenAI and Anthropic models: context windows, output limits and prices (USD per
//! million tokens, as published by the vendors; cache write is Anthropic's 5-minute rate).
//! OpenAI's reasoning models speak `openai-responses`, the others `openai-completions`.

use crate::agent::model::{Model, ModelCost};

use super::EnvSource;

pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// Anthropic clients append `/v1/messages` to this.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_OPENAI: &str = "gpt-4.1";
pub const DEFAULT_ANTHROPIC: &str = "claude-sonnet-4-5";

/// (id, name, reasoning, image input, context window, max output, input, output, cache read, cache write)
/// id, name, reasoning, image input, context window, max output tokens, prices.
type Row = (&'static str, &'static str, bool, bool, u64, u64, ModelCost);

/// Prices per million tokens: input, output, cache read, cache write.
const fn cost(input: f64, output: f64, cache_read: f64, cache_write: f64) -> ModelCost {
    ModelCost {
        input,
        output,
        cache_read,
        cache_write,
    }
}

/// Claude Sonnet 4 and 4.5 cost the same.
const SONNET: ModelCost = cost(3.0, 15.0, 0.3, 3.75);

#[rustfmt::skip] // one model per line: a table reads best as one
const OPENAI: &[Row] = &[
    ("gpt-4.1", "GPT-4.1", false, true, 1_047_576, 32_768, cost(2.0, 8.0, 0.5, 0.0)),
    ("gpt-4.1-mini", "GPT-4.1 mini", false, true, 1_047_576, 32_768, cost(0.4, 1.6, 0.1, 0.0)),
    ("gpt-4.1-nano", "GPT-4.1 nano", false, true, 1_047_576, 32_768, cost(0.1, 0.4, 0.025, 0.0)),
    ("gpt-4o", "GPT-4o", false, true, 128_000, 16_384, cost(2.5, 10.0, 1.25, 0.0)),
    ("gpt-4o-mini", "GPT-4o mini", false, true, 128_000, 16_384, cost(0.15, 0.6, 0.075, 0.0)),
    ("o3", "o3", true, true, 200_000, 100_000, cost(2.0, 8.0, 0.5, 0.0)),
    ("o4-mini", "o4-mini", true, true, 200_000, 100_000, cost(1.1, 4.4, 0.275, 0.0)),
    ("gpt-5", "GPT-5", true, true, 400_000, 128_000, cost(1.25, 10.0, 0.125, 0.0)),
    ("gpt-5-mini", "GPT-5 mini", true, true, 400_000, 128_000, cost(0.25, 2.0, 0.025, 0.0)),
    ("gpt-5-nano", "GPT-5 nano", true, true, 400_000, 128_000, cost(0.05, 0.4, 0.005, 0.0)),
];

#[rustfmt::skip] // one model per line: a table reads best as one
const ANTHROPIC: &[Row] = &[
    ("claude-sonnet-4-5", "Claude Sonnet 4.5", true, true, 200_000, 64_000, SONNET),
    ("claude-opus-4-1", "Claude Opus 4.1", true, true, 200_000, 32_000, cost(15.0, 75.0, 1.5, 18.75)),
    ("claude-haiku-4-5", "Claude Haiku 4.5", true, true, 200_000, 64_000, cost(1.0, 5.0, 0.1, 1.25)),
    ("claude-sonnet-4-0", "Claude Sonnet 4", true, true, 200_000, 64_000, SONNET),
    ("claude-3-5-haiku-latest", "Claude Haiku 3.5", false, true, 200_000, 8_192, cost(0.8, 4.0, 0.08, 1.0)),
];

/// The built-in models, with base URLs from `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` if set.
pub fn builtin_models(env: &EnvSource) -> Vec<Model> {
    let openai_base = env
        .get_nonempty("OPENAI_BASE_URL")
        .unwrap_or(OPENAI_BASE_URL);
    let anthropic_base = env
        .get_nonempty("ANTHROPIC_BASE_URL")
        .unwrap_or(ANTHROPIC_BASE_URL);
    // OpenAI's reasoning models use the Responses API, as in pi: their encrypted reasoning
    // is replayed across tool turns, which Chat Completions cannot do.
    let openai_api = |row: &Row| {
        if row.2 {
            "openai-responses"
        } else {
            "openai-completions"
        }
    };
    let mut models: Vec<Model> = OPENAI
        .iter()
        .map(|row| model(row, "openai", openai_api(row), openai_base))
        .collect();
    models.extend(
        ANTHROPIC
            .iter()
            .map(|row| model(row, "anthropic", "anthropic-messages", anthropic_base)),
    );
    models
}

fn model(row: &Row, provider: &str, api: &str, base_url: &str) -> Model {
    let &(id, name, reasoning, image, context_window, max_tokens, ref cost) = row;
    let mut inputs = vec!["text".to_string()];
    if image {
        inputs.push("image".into());
    }
    Model {
        id: id.into(),
        name: name.into(),
        api: api.into(),
        provider: provider.into(),
        base_url: base_url.trim_end_matches('/').into(),
        reasoning,
        input: inputs,
        cost: cost.clone(),
        context_window,
        max_tokens,
        headers: None,
        compat: None,
    }
}

/// An Ollama model over its OpenAI-compatible endpoint (`<host>/v1`), any installed model id.
/// pi's defaults for Ollama: 8192-token context unless configured, no developer role, no
/// `reasoning_effort`.
pub fn ollama_template(host: &str) -> Model {
    let mut compat = serde_json::Map::new();
    compat.insert("supportsDeveloperRole".into(), false.into());
    compat.insert("supportsReasoningEffort".into(), false.into());
    Model {
        id: String::new(),
        name: String::new(),
        api: "openai-completions".into(),
        provider: "ollama".into(),
        base_url: format!("{}/v1", host.trim_end_matches('/')),
        reasoning: false,
        input: vec!["text".into()],
        cost: ModelCost::default(),
        context_window: 8192,
        max_tokens: 4096,
        headers: None,
        compat: Some(compat),
    }
}
