//! The model APIs: each implements the agent's stream contract
//! ([`crate::agent::stream_contract::StreamFn`]), which never fails: every failure ends the
//! stream with one `error` event.

pub mod anthropic;
pub mod anthropic_event;
pub mod anthropic_request;
pub mod anthropic_stream;
pub mod api_key;
pub mod assembler;
pub mod http_error;
pub mod http_provider;
pub mod openai;
pub mod openai_chunk;
pub mod openai_request;
pub mod openai_responses;
pub mod openai_responses_request;
pub mod openai_responses_stream;
pub mod openai_stream;
pub mod partial_json;
pub mod retry;
pub mod router;
pub mod scripted;
pub mod sse;
pub mod tool_fold;
pub mod transform;
pub mod transport;

pub use router::{ProviderRouter, default_stream_fn};

#[cfg(test)]
mod request_golden_tests;
#[cfg(test)]
mod stream_golden_tests;
