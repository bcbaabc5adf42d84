//! One module per area; `support` holds the shared test clients and fixtures.

mod acp;
mod agent_core;
mod bench_smoke;
mod cli;
mod daemon;
mod hooks;
mod loop_conformance;
mod mcp;
mod pi_interop;
mod providers;
mod sessions;
mod support;
mod tools;
