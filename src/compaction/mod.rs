//! Compaction (pi's C7): when a session outgrows its model's context window, the older part of
//! the conversation is replaced by a structured summary written by the model itself, stored as
//! pi's `compaction` entry.
//!
//! This module is pure: token estimates, the cut point and what is summarised
//! ([`prepare`](mod@prepare)), the summary request and its texts ([`summary`]), overflow errors
//! ([`overflow`]). Running it inside a session (hooks, events, the session file) is
//! `core/compaction.rs`.

pub mod overflow;
pub mod prepare;
pub mod summary;

use serde::{Deserialize, Serialize};

use crate::agent::message::Usage;

pub use prepare::{Preparation, estimate_context_tokens, estimate_tokens, prepare};

/// pi's `DEFAULT_COMPACTION_SETTINGS`, after the caps for small windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSettings {
    pub enabled: bool,
    pub reserve_tokens: u64,
    pub keep_recent_tokens: u64,
    /// agent-lsp's own (`run --compact-threshold`): compact past this many tokens instead of
    /// past `contextWindow − reserveTokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold_tokens: Option<u64>,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16384,
            keep_recent_tokens: 20000,
            threshold_tokens: None,
        }
    }
}

impl CompactionSettings {
    /// The settings for a model with this window: when reserve and kept tokens do not both
    /// fit (Ollama-sized windows), each is capped at a quarter of the window, as pi does.
    pub fn for_window(&self, context_window: u64) -> CompactionSettings {
        if context_window == 0 || self.reserve_tokens + self.keep_recent_tokens < context_window {
            return *self;
        }
        let quarter = context_window / 4;
        CompactionSettings {
            reserve_tokens: self.reserve_tokens.min(quarter),
            keep_recent_tokens: self.keep_recent_tokens.min(quarter),
            ..*self
        }
    }

    /// pi's `shouldCompact`: the context passed `contextWindow − reserveTokens`.
    pub fn should_compact(&self, context_tokens: u64, context_window: u64) -> bool {
        let limit = match self.threshold_tokens {
            Some(threshold) => threshold,
            None if context_window > 0 => context_window.saturating_sub(self.reserve_tokens),
            None => return false,
        };
        self.enabled && context_tokens > limit
    }

    /// Applies the fields a configuration layer sets.
    pub fn merge(&mut self, layer: &CompactionOptions) {
        if let Some(enabled) = layer.enabled {
            self.enabled = enabled;
        }
        if let Some(reserve) = layer.reserve_tokens {
            self.reserve_tokens = reserve;
        }
        if let Some(keep) = layer.keep_recent_tokens {
            self.keep_recent_tokens = keep;
        }
        if layer.threshold_tokens.is_some() {
            self.threshold_tokens = layer.threshold_tokens;
        }
    }
}

/// One configuration layer (`initializationOptions.compaction`, the user's `settings.json`):
/// the fields it sets.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactionOptions {
    pub enabled: Option<bool>,
    pub reserve_tokens: Option<u64>,
    pub keep_recent_tokens: Option<u64>,
    pub threshold_tokens: Option<u64>,
}

/// What started a compaction (pi's `reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[cfg_attr(test, derive(strum::EnumIter, strum::VariantNames))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum CompactionReason {
    Manual,
    Threshold,
    Overflow,
}

impl CompactionReason {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The files the summarised part touched (pi's `details`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileLists {
    pub read_files: Vec<String>,
    pub modified_files: Vec<String>,
}

/// pi's `CompactionResult`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionResult {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    pub estimated_tokens_after: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    pub details: FileLists,
}

#[cfg(test)]
mod tests {
    #[test]
    fn reason_names_are_the_serde_tags() {
        crate::testing::tags::assert_unit_names_are_serde_tags::<super::CompactionReason>();
    }
}
