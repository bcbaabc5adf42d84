//! Context-overflow errors (pi-ai's `isContextOverflow`): the texts providers answer when a
//! request does not fit the model's window, pi's patterns verbatim.

use std::sync::LazyLock;

use regex::RegexSet;

use crate::agent::message::{AssistantMessage, StopReason};

/// pi's `OVERFLOW_PATTERNS` (case-insensitive), with the provider each one is for.
const OVERFLOW_PATTERNS: &[&str] = &[
    r"prompt (?:is )?too long",               // Anthropic, z.ai
    r"prompt exceeds max length",             // z.ai CN
    r"request_too_large",                     // Anthropic request size (413)
    r"input is too long for requested model", // Amazon Bedrock
    r"exceeds the context window",            // OpenAI (Completions and Responses)
    r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))", // OpenAI-compatible (LiteLLM, vLLM)
    r"context window exceeded",                // LiteLLM
    r"input token count.*exceeds the maximum", // Google
    r"maximum prompt length is \d+",           // xAI
    r"reduce the length of the messages",      // Groq
    r"maximum context length is \d+ tokens",   // OpenRouter, vLLM
    r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?", // OpenRouter/Poolside
    r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)", // Together
    r"exceeds the limit of \d+",               // GitHub Copilot
    r"exceeds the available context size",     // llama.cpp server
    r"greater than the context length",        // LM Studio
    r"context window exceeds limit",           // MiniMax
    r"exceeded model token limit",             // Kimi
    r"too large for model with \d+ maximum context length", // Mistral
    r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?", // DS4
    r"model_context_window_exceeded",          // z.ai finish reason
    r"prompt too long; exceeded (?:max )?context length", // Ollama
    r"range of input length should be",        // DashScope / Qwen
    r"context[_ ]length[_ ]exceeded",          // generic
    r"too many tokens",                        // generic
    r"token limit exceeded",                   // generic
    r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))", // any HTTP 413
];

/// pi's `NON_OVERFLOW_PATTERNS`: rate limits that mention tokens.
const NON_OVERFLOW_PATTERNS: &[&str] = &[
    r"^(Throttling error|Service unavailable):",
    r"rate limit",
    r"too many requests",
];

fn set(patterns: &[&str]) -> RegexSet {
    let patterns = patterns.iter().map(|p| format!("(?i){p}"));
    // The patterns are constants checked by the tests; an empty set only disables detection.
    RegexSet::new(patterns).unwrap_or_else(|_| RegexSet::empty())
}

static OVERFLOW: LazyLock<RegexSet> = LazyLock::new(|| set(OVERFLOW_PATTERNS));
static NON_OVERFLOW: LazyLock<RegexSet> = LazyLock::new(|| set(NON_OVERFLOW_PATTERNS));

/// Whether this error text says the request did not fit the context window.
pub fn is_overflow_text(text: &str) -> bool {
    !NON_OVERFLOW.is_match(text) && OVERFLOW.is_match(text)
}

/// pi's `isContextOverflow`: an error with an overflow text, or (with a window) a successful
/// response whose input alone exceeds the window (providers that truncate silently).
pub fn is_context_overflow(message: &AssistantMessage, context_window: u64) -> bool {
    if message.stop_reason == StopReason::Error
        && let Some(text) = &message.error_message
        && is_overflow_text(text)
    {
        return true;
    }
    let input = message.usage.input + message.usage.cache_read;
    context_window > 0 && message.stop_reason == StopReason::Stop && input > context_window
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        assert_eq!(OVERFLOW.len(), OVERFLOW_PATTERNS.len());
        assert_eq!(NON_OVERFLOW.len(), NON_OVERFLOW_PATTERNS.len());
    }

    #[test]
    fn providers_overflow_texts_are_recognised() {
        for text in [
            "prompt is too long: 213462 tokens > 200000 maximum",
            "Your input exceeds the context window of this model",
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            "the request exceeds the available context size, try increasing it",
            "prompt too long; exceeded max context length by 100 tokens",
            "Requested token count exceeds the model's maximum context length of 131072 tokens",
            "413 Request Entity Too Large",
        ] {
            assert!(is_overflow_text(text), "{text}");
        }
    }

    #[test]
    fn rate_limits_and_other_errors_are_not_overflow() {
        for text in [
            "Throttling error: Too many tokens, please wait",
            "Rate limit reached: too many tokens per minute",
            "Internal server error",
            "the body mentions 413 somewhere",
        ] {
            assert!(!is_overflow_text(text), "{text}");
        }
    }
}
