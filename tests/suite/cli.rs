//! Integration tests: the real `agent-lsp` binary against the loopback mock provider, in a sealed
//! environment (temp HOME and XDG dirs, no inherited variables; see `support::cli_run`).

mod ask_user;
mod beneath;
mod commands;
mod compaction;
mod controls;
mod demo_help;
mod doctor;
mod escapes;
mod gc;
mod git_journal;
mod identity;
mod jobs;
mod login;
mod models;
mod permissions;
mod release;
mod responses;
mod run;
mod sandbox;
mod sessions;
mod signals;
mod subagents;

use agent_lsp::testing::{MockProvider, MockResponse, MockScript};

const MODEL: &str = "openai/mock-model";

async fn mock(responses: Vec<MockResponse>) -> MockProvider {
    MockProvider::start(MockScript { responses }).await.unwrap()
}

/// A response that streams `text` slowly: 4-byte deltas, 80 ms apart.
fn slow_text(text: &str) -> MockResponse {
    MockResponse {
        text: Some(text.into()),
        chunk_size: Some(4),
        delay_ms: Some(80),
        ..Default::default()
    }
}
