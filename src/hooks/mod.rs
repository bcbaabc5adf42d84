//! Hooks: the user's own commands, run at points of a session, in Claude Code's configuration
//! and input/output shapes (`hooks` in the settings files), so hook scripts written for Claude
//! Code run here unchanged.
//!
//! This folder knows hooks as such: what is configured (`config.rs`: the settings files, events,
//! matchers, timeouts), which tool names a matcher sees (`names.rs`), how one command runs
//! (`command.rs`: unsandboxed, in the project directory, with its timeout, its process group
//! killed when it ends or is given up), what its exit code and output say (`output.rs`), and
//! whether a project's hooks may run (`trust.rs`). When each event fires, and what its answer
//! does to a session, is the session core's (`core::hooks`).

pub mod command;
pub mod config;
pub mod matcher;
pub mod names;
pub mod output;
pub mod trust;

pub use config::{HookCommand, HookEvent, HookSource, SettingsHooks};
pub use matcher::Matcher;
pub use output::{Outcome, Said};
