//! `agent-lsp login` and `logout`: store a provider's key for the user, or forget it
//! ([`crate::credentials`]). Also what an ACP client runs for the `terminal` auth method
//! (`agent-lsp acp login`).
//!
//! In a terminal `login` asks for the provider and reads the key with echo off; from a pipe it
//! takes `--provider` (else the first line) and the key's line (scripts, tests).

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use clap::Args;

use crate::credentials::{Credentials, checked_key};
use crate::model_registry::EnvSource;
use crate::provider::api_key::{PROVIDERS, env_vars};

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The provider whose key to store (anthropic, openai, groq, …); asked when omitted in a
    /// terminal.
    #[arg(long)]
    pub provider: Option<String>,
}

#[derive(Debug, Args)]
pub struct LogoutArgs {
    /// Forget only this provider's key [default: every stored key].
    #[arg(long)]
    pub provider: Option<String>,
}

/// The variable a provider's stored key stands in for: its API key variable (Anthropic's
/// OAuth token variable is for tokens, not pasted keys).
pub fn key_var(provider: &str) -> Option<&'static str> {
    env_vars(provider).last().copied()
}

/// The providers `login` offers, with their key variables.
fn offered() -> Vec<(&'static str, &'static str)> {
    PROVIDERS
        .iter()
        .filter_map(|p| Some((*p, key_var(p)?)))
        .collect()
}

pub fn login(args: LoginArgs, env: &EnvSource) -> ExitCode {
    match try_login(args, env) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent-lsp login: {e}");
            ExitCode::FAILURE
        }
    }
}

fn try_login(args: LoginArgs, env: &EnvSource) -> anyhow::Result<()> {
    let store = Credentials::of(env.config_dir())?;
    let interactive = std::io::stdin().is_terminal();
    let stdin = std::io::stdin();
    let mut lines = stdin.lock();
    let provider = match args.provider {
        Some(p) => p,
        None if interactive => ask_provider(&mut lines)?,
        // From a pipe: the provider's name on the first line, the key on the next.
        None => {
            let mut line = String::new();
            lines.read_line(&mut line)?;
            match line.trim() {
                "" => anyhow::bail!(
                    "give --provider (one of {}), or the provider's name on the first line",
                    PROVIDERS.join(", ")
                ),
                name => name.to_string(),
            }
        }
    };
    let Some(var) = key_var(&provider) else {
        anyhow::bail!(
            "unknown provider {provider:?}: one of {} (other providers take their key from models.json)",
            PROVIDERS.join(", ")
        );
    };
    let key = if interactive {
        eprint!("Paste the {var} for {provider} (input hidden): ");
        let key = read_hidden(&mut lines)?;
        eprintln!();
        key
    } else {
        let mut line = String::new();
        lines.read_line(&mut line)?;
        line
    };
    store.store(var, checked_key(&key)?)?;
    println!(
        "Stored {var} in {} (readable only by you). agent-lsp uses it when {var} is not set; \
         `agent-lsp logout` forgets it.",
        store.file().display()
    );
    let layers = crate::sandbox::machine_layers(env);
    if layers.namespaces.is_err() {
        println!(
            "Warning: this machine has no user namespaces, so sandboxed commands run with \
             Landlock alone, which cannot hide the stored key from them. Prefer setting {var} \
             in the editor's environment for the agent, or enable unprivileged user namespaces."
        );
    }
    if env.get_nonempty(var).is_some() {
        println!("Note: {var} is also set in this environment; there it takes precedence.");
    }
    Ok(())
}

fn ask_provider(lines: &mut impl BufRead) -> anyhow::Result<String> {
    let offered = offered();
    eprintln!("Which provider's key do you want to store?");
    for (n, (provider, var)) in offered.iter().enumerate() {
        eprintln!("  {:>2}. {provider:<12} {var}", n + 1);
    }
    eprint!("Provider [1]: ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    lines.read_line(&mut answer)?;
    let answer = answer.trim();
    if answer.is_empty() {
        return Ok(offered[0].0.to_string());
    }
    if let Ok(n) = answer.parse::<usize>() {
        return offered
            .get(n.wrapping_sub(1))
            .map(|(p, _)| p.to_string())
            .ok_or_else(|| anyhow::anyhow!("no provider number {n}"));
    }
    Ok(answer.to_string())
}

/// One line from the terminal with echo off, restored whatever happens.
fn read_hidden(lines: &mut impl BufRead) -> anyhow::Result<String> {
    use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
    std::io::stderr().flush()?;
    let stdin = std::io::stdin();
    let saved = tcgetattr(&stdin)?;
    let mut quiet = saved.clone();
    quiet.local_flags.remove(LocalFlags::ECHO);
    quiet.local_flags.insert(LocalFlags::ECHONL);
    tcsetattr(&stdin, SetArg::TCSANOW, &quiet)?;
    let mut line = String::new();
    let read = lines.read_line(&mut line);
    tcsetattr(&stdin, SetArg::TCSANOW, &saved)?;
    read?;
    Ok(line)
}

pub fn logout(args: LogoutArgs, env: &EnvSource) -> ExitCode {
    let result = (|| -> anyhow::Result<Vec<String>> {
        let store = Credentials::of(env.config_dir())?;
        let Some(provider) = args.provider else {
            return Ok(store.remove(None)?);
        };
        let var =
            key_var(&provider).ok_or_else(|| anyhow::anyhow!("unknown provider {provider:?}"))?;
        Ok(store.remove(Some(&[var]))?)
    })();
    match result {
        Ok(removed) if removed.is_empty() => {
            println!("No stored key to forget.");
            ExitCode::SUCCESS
        }
        Ok(removed) => {
            println!("Forgot {}.", removed.join(", "));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("agent-lsp logout: {e}");
            ExitCode::FAILURE
        }
    }
}
