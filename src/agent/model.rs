//! A model as the loop sees it (pi-ai's `Model`): which API, which endpoint, what it accepts and
//! costs. The registry that finds models by `provider/id` is [`crate::model_registry`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agent::message::Usage;

/// Per-million-token prices in USD (a price not given is 0).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ModelCost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl ModelCost {
    /// Sets `usage.cost` (each part and the total) to what its tokens cost at these prices.
    pub fn charge(&self, usage: &mut Usage) {
        let per = |rate: f64, tokens: u64| rate / 1_000_000.0 * tokens as f64;
        usage.cost.input = per(self.input, usage.input);
        usage.cost.output = per(self.output, usage.output);
        usage.cost.cache_read = per(self.cache_read, usage.cache_read);
        usage.cost.cache_write = per(self.cache_write, usage.cache_write);
        usage.cost.total =
            usage.cost.input + usage.cost.output + usage.cost.cache_read + usage.cost.cache_write;
    }
}

/// A model as pi describes it (`Model` in pi-ai; the shape of models.json entries).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    pub id: String,
    #[serde(default)]
    pub name: String,
    /// Wire API: `openai-completions`, `openai-responses`, `anthropic-messages`, or `scripted`.
    pub api: String,
    pub provider: String,
    #[serde(default)]
    pub base_url: String,
    #[serde(default)]
    pub reasoning: bool,
    #[serde(default)]
    pub input: Vec<String>,
    #[serde(default)]
    pub cost: ModelCost,
    #[serde(default)]
    pub context_window: u64,
    #[serde(default)]
    pub max_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Map<String, Value>>,
    /// Provider quirks (pi's `compat` flags), passed to the API implementation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<Map<String, Value>>,
}

impl Default for Model {
    /// pi's default model: everything `unknown`.
    fn default() -> Self {
        Model {
            id: "unknown".into(),
            name: "unknown".into(),
            api: "unknown".into(),
            provider: "unknown".into(),
            base_url: String::new(),
            reasoning: false,
            input: Vec::new(),
            cost: ModelCost::default(),
            context_window: 0,
            max_tokens: 0,
            headers: None,
            compat: None,
        }
    }
}
