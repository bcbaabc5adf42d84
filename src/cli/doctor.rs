//! `agent-lsp doctor`: what agent-lsp would use here and what stands in its way — the model and
//! where that choice came from, the providers' keys, the model's endpoint when asked
//! (`--online`), the command sandbox, the session directory, web search, the MCP servers and
//! their trust, the hooks and theirs, and how editors find the binary. Each problem says how to fix it; any problem exits 1.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Serialize;
use serde_json::{Value, json};

use crate::credentials::Credentials;
use crate::mcp::trust::Trust;
use crate::model_registry::{
    EnvSource, KeyOrigin, ModelError, ResolvedModel, default_model_reason, resolve_model,
};
use crate::provider::{api_key, transport};
use crate::store::SessionStore;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The model to check, as `run --model` takes it (default: the one agent-lsp would pick).
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// The project directory whose `.mcp.json` is checked (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Also ask the model's endpoint whether it answers (one request, no prompt).
    #[arg(long)]
    pub online: bool,
    /// One JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    Ok,
    /// Works, with less than it could (said, with how to get the rest).
    Warning,
    /// Stands in the way: `doctor` exits 1.
    Problem,
}

/// One line of the report.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub detail: String,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    fn ok(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn warning(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::with_fix(name, Status::Warning, detail.into(), fix.into())
    }

    fn problem(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::with_fix(name, Status::Problem, detail.into(), fix.into())
    }

    fn with_fix(name: &'static str, status: Status, detail: String, fix: String) -> Check {
        Check {
            name,
            status,
            detail,
            fix: Some(fix),
        }
    }
}

/// The providers whose keys the report names when unset (the default model's); any other
/// built-in provider's key is named when set.
const MAIN_PROVIDERS: [&str; 2] = ["anthropic", "openai"];

/// Runs every check and prints the report; exit 1 when any check found a problem.
pub async fn run(args: DoctorArgs, env: EnvSource) -> ExitCode {
    let cwd = match args.cwd.clone().map_or_else(std::env::current_dir, Ok) {
        Ok(cwd) => cwd,
        Err(e) => {
            eprintln!("agent-lsp: cannot read the current directory: {e}");
            return ExitCode::FAILURE;
        }
    };
    let checks = checks(&args, &env, &cwd).await;
    let failed = checks.iter().any(|c| c.status == Status::Problem);
    if args.json {
        println!("{}", to_json(&checks));
    } else {
        print!("{}", text(&checks));
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Every check, in the report's order.
pub async fn checks(args: &DoctorArgs, env: &EnvSource, cwd: &Path) -> Vec<Check> {
    let resolved = resolve_model(args.model.as_deref(), env);
    let mut checks = vec![model_check(args.model.as_deref(), env, &resolved)];
    checks.push(keys_check(env));
    if args.online
        && let Ok(model) = &resolved
    {
        checks.push(online_check(model).await);
    }
    checks.push(sandbox_check(env));
    checks.push(sessions_check(env));
    checks.push(web_search_check(env));
    checks.extend(mcp_checks(cwd, env));
    checks.extend(hooks_checks(cwd, env));
    checks.push(binary_check(env));
    checks.push(editors_check(env));
    checks
}

/// The model agent-lsp would use, and where the choice came from.
fn model_check(
    requested: Option<&str>,
    env: &EnvSource,
    resolved: &Result<ResolvedModel, ModelError>,
) -> Check {
    match resolved {
        Ok(model) => {
            let from = match (requested, env.get_nonempty("AGENT_LSP_MODEL")) {
                (Some(_), _) => "--model".to_string(),
                (None, Some(_)) => "AGENT_LSP_MODEL".to_string(),
                (None, None) => match default_model_reason(env) {
                    Ok(why) => format!("the default: {why}"),
                    Err(_) => "the default".to_string(),
                },
            };
            Check::ok(
                "model",
                format!("{} at {} (from {from})", model.spec(), model.model.base_url),
            )
        }
        Err(ModelError::NotConfigured(text)) => {
            Check::problem("model", "no model is configured", fix_of(text))
        }
        Err(ModelError::MissingKey { provider, hint }) => Check::problem(
            "model",
            format!("no API key for provider {provider}"),
            format!("set {hint}, or store it with `agent-lsp login --provider {provider}`"),
        ),
        Err(e) => Check::problem(
            "model",
            e.to_string(),
            "give the model as provider/id (agent-lsp doctor --model provider/id checks one)",
        ),
    }
}

/// The not-configured text without its first line (which the detail says).
fn fix_of(text: &str) -> String {
    let rest = text.split_once(". ").map_or(text, |(_, rest)| rest);
    rest.trim().to_string()
}

/// Which providers' keys are set or stored (never their values), and whether the store is as
/// private as it must be.
fn keys_check(env: &EnvSource) -> Check {
    let mut present = Vec::new();
    let mut absent = Vec::new();
    let mut stored = false;
    for provider in api_key::PROVIDERS {
        let vars = api_key::env_vars(provider);
        match vars.iter().find_map(|v| Some((v, env.key_origin(v)?.1))) {
            Some((var, KeyOrigin::Environment)) => present.push(format!("{provider} ({var})")),
            Some((var, KeyOrigin::Stored)) => {
                stored = true;
                present.push(format!("{provider} ({var}, stored by agent-lsp login)"));
            }
            None if MAIN_PROVIDERS.contains(&provider) => absent.push(provider),
            None => {}
        }
    }
    if stored && let Some(check) = stored_keys_problem(env) {
        return check;
    }
    let detail = match (present.is_empty(), absent.is_empty()) {
        (false, true) => format!("set: {}", present.join(", ")),
        (false, false) => format!(
            "set: {}; not set: {}",
            present.join(", "),
            absent.join(", ")
        ),
        (true, _) => format!(
            "none set ({}); `agent-lsp login` stores one",
            absent.join(", ")
        ),
    };
    Check::ok("keys", detail)
}

/// A stored key others could read: a widened file, or a machine whose sandbox cannot hide it.
fn stored_keys_problem(env: &EnvSource) -> Option<Check> {
    let store = Credentials::of(env.config_dir()).ok()?;
    if store.too_open() {
        return Some(Check::problem(
            "keys",
            format!("{} can be read by other users", store.file().display()),
            format!("chmod 600 {}", store.file().display()),
        ));
    }
    let layers = crate::sandbox::machine_layers(env);
    if layers.unavailable().is_none() && layers.namespaces.is_err() {
        return Some(Check::problem(
            "keys",
            "a stored key is readable by sandboxed commands here: without namespaces the \
             sandbox cannot hide it",
            "set the key in the agent's environment instead and run `agent-lsp logout`, or \
             allow unprivileged user namespaces",
        ));
    }
    None
}

/// One request to the model's endpoint: its list of models.
async fn online_check(model: &ResolvedModel) -> Check {
    let url = format!("{}/models", model.model.base_url.trim_end_matches('/'));
    // The crate's TLS set-up, and proxies but for loopback, as a run's requests have them.
    let loopback = reqwest::Url::parse(&url).is_ok_and(|u| transport::is_loopback(&u));
    let builder = transport::client_builder().timeout(Duration::from_secs(10));
    let builder = if loopback {
        builder.no_proxy()
    } else {
        builder
    };
    let client = match builder.build() {
        Ok(client) => client,
        Err(e) => return Check::problem("endpoint", e.to_string(), "report this as a bug"),
    };
    let mut request = client.get(&url);
    if let Some(key) = &model.api_key {
        request = match model.model.provider.as_str() {
            "anthropic" => request
                .header("x-api-key", key)
                .header("anthropic-version", "2023-06-01"),
            _ => request.bearer_auth(key),
        };
    }
    match request.send().await {
        Ok(response) if matches!(response.status().as_u16(), 401 | 403) => Check::problem(
            "endpoint",
            format!(
                "{url} refused the key (HTTP {})",
                response.status().as_u16()
            ),
            "check the key: it may be revoked, mistyped or for another provider",
        ),
        Ok(response) => Check::ok(
            "endpoint",
            format!("{url} answers (HTTP {})", response.status().as_u16()),
        ),
        Err(e) => Check::problem(
            "endpoint",
            format!("cannot reach {url}: {e}"),
            "check the network, a proxy, or the provider's base URL (OPENAI_BASE_URL, \
             ANTHROPIC_BASE_URL, models.json)",
        ),
    }
}

/// Whether this machine can sandbox commands, and with which layers.
fn sandbox_check(env: &EnvSource) -> Check {
    let layers = crate::sandbox::machine_layers(env);
    if let Some(reason) = layers.unavailable() {
        return Check::warning(
            "sandbox",
            format!("unavailable: {reason}"),
            "commands that would run sandboxed ask first; a kernel with Landlock (5.13+) and \
             seccomp sandboxes them",
        );
    }
    match &layers.namespaces {
        Ok(()) => Check::ok("sandbox", "Landlock, seccomp and namespaces"),
        Err(why) => Check::warning(
            "sandbox",
            format!("Landlock and seccomp, without namespaces ({why})"),
            "allow unprivileged user namespaces (kernel.unprivileged_userns_clone=1, or the \
             AppArmor rule that restricts them) for the network and process isolation",
        ),
    }
}

/// Where sessions are stored, and whether that directory can be written.
fn sessions_check(env: &EnvSource) -> Check {
    let Some(dir) = SessionStore::default_dir(env) else {
        return Check::problem(
            "sessions",
            "no session directory: HOME, XDG_DATA_HOME and AGENT_LSP_SESSION_DIR are unset",
            "set HOME (or XDG_DATA_HOME, or AGENT_LSP_SESSION_DIR)",
        );
    };
    // The nearest folder that exists is where the directory would be made.
    let existing = dir.ancestors().find(|p| p.exists()).unwrap_or(&dir);
    let writable =
        existing.is_dir() && nix::unistd::access(existing, nix::unistd::AccessFlags::W_OK).is_ok();
    if writable {
        Check::ok("sessions", dir.display().to_string())
    } else {
        Check::problem(
            "sessions",
            format!(
                "{} cannot be written ({} is not a writable folder)",
                dir.display(),
                existing.display()
            ),
            "make it writable, or set AGENT_LSP_SESSION_DIR to a folder that is",
        )
    }
}

/// Whether `web_search` is offered, and through which service (information: without one, the
/// agent still fetches pages). A broken configuration is a warning.
fn web_search_check(env: &EnvSource) -> Check {
    const HOW: &str = "set AGENT_LSP_SEARXNG_URL (or webSearch.searxngUrl in settings.json) to a \
                       SearXNG instance, or BRAVE_API_KEY or TAVILY_API_KEY";
    let config = crate::tools::web::search_config(env);
    match (config.backend, config.warnings.into_iter().next()) {
        (_, Some(warning)) => Check::warning("web search", warning, HOW),
        (Some(backend), None) => Check::ok(
            "web search",
            format!("{} at {}", backend.name(), backend.endpoint()),
        ),
        (None, None) => Check::ok(
            "web search",
            format!("not configured: web_search is not offered ({HOW} to offer it)"),
        ),
    }
}

/// The MCP servers configured for `cwd` (the user's file and the project's `.mcp.json`), and
/// whether the project's may start.
fn mcp_checks(cwd: &Path, env: &EnvSource) -> Vec<Check> {
    let configured = crate::core::mcp::configured(cwd, env);
    let mut checks: Vec<Check> = (configured.errors.iter())
        .map(|e| {
            Check::problem(
                "mcp",
                e.to_string(),
                "fix the entry (protocol.md §3.10 shows the shape); the other servers still start",
            )
        })
        .collect();
    let names: Vec<String> = configured.servers.keys().cloned().collect();
    if names.is_empty() && checks.is_empty() {
        checks.push(Check::ok("mcp", "no servers configured"));
        return checks;
    }
    let project: Vec<&str> = configured.project.iter().map(String::as_str).collect();
    if !project.is_empty() && configured.trust != Trust::Allowed {
        let answer = match configured.trust {
            Trust::Denied => "refused",
            _ => "not allowed yet",
        };
        checks.push(Check::warning(
            "mcp",
            format!(
                "{} configured; the project's .mcp.json servers ({}) are {answer}",
                names.join(", "),
                project.join(", ")
            ),
            "an editor asks when a session starts (`/mcp-trust` asks again); agent-lsp run starts \
             them with --trust-project-mcp",
        ));
    } else if !names.is_empty() {
        checks.push(Check::ok("mcp", format!("{} configured", names.join(", "))));
    }
    checks
}

/// The hooks configured for `cwd` (the user's settings and the project's), and whether the
/// project's may run.
fn hooks_checks(cwd: &Path, env: &EnvSource) -> Vec<Check> {
    use crate::hooks::config::load;
    use crate::hooks::trust::ProjectTrust;
    let (files, problems) = load(cwd, env.config_dir().as_deref());
    let fix = "fix the entry (protocol.md §3.22 shows the shape); the other hooks still run";
    let mut checks: Vec<Check> = (problems.into_iter())
        .map(|p| Check::problem("hooks", p, fix))
        .collect();
    let count = files.iter().map(|f| f.hooks.len()).sum::<usize>();
    let mut events: Vec<&str> = Vec::new();
    for hook in files.iter().flat_map(|f| &f.hooks) {
        if !events.contains(&hook.event.name()) {
            events.push(hook.event.name());
        }
    }
    let configured = format!("{count} configured ({})", events.join(", "));
    let trust = ProjectTrust::new(env, cwd, &files).remembered().trust;
    let check = match (count, files.iter().any(|f| f.disable_all), trust) {
        (0, _, _) if checks.is_empty() => Check::ok("hooks", "none configured"),
        (0, _, _) => return checks,
        (_, true, _) => Check::ok("hooks", format!("{configured}; all off (disableAllHooks)")),
        (_, false, Trust::Allowed) => Check::ok("hooks", configured),
        (_, false, answer) => Check::warning(
            "hooks",
            format!(
                "{configured}; the project's (.agent-lsp/settings*.json) are {}",
                if answer == Trust::Denied {
                    "refused"
                } else {
                    "not allowed yet"
                }
            ),
            "an editor asks when a session starts; agent-lsp run runs them with \
             --trust-project-hooks",
        ),
    };
    checks.push(check);
    checks
}

/// How editors find the binary: on PATH, as the clients start it by default.
fn binary_check(env: &EnvSource) -> Check {
    let on_path = env.get("PATH").and_then(|path| {
        std::env::split_paths(path)
            .map(|dir| dir.join("agent-lsp"))
            .find(|candidate| candidate.is_file())
    });
    match on_path {
        Some(path) => Check::ok("binary", format!("{} (on PATH)", path.display())),
        None => Check::warning(
            "binary",
            "agent-lsp is not on PATH: editors that start `agent-lsp` will not find it",
            "install it: curl --proto '=https' --tlsv1.2 -LsSf \
             https://github.com/agent-lsp/agent-lsp/releases/latest/download/agent-lsp-installer.sh \
             | sh (or cargo binstall agent-lsp), or give its path to the editor (Neovim: `cmd` in \
             vim.lsp.config('agent_lsp'); VS Code's extension carries its own)",
        ),
    }
}

/// Where each editor's agent-lsp set-up lives, relative to the home, data and config folders.
enum Base {
    Home,
    Data,
    Config,
}

/// The editors' set-ups: a folder whose entries start with a prefix (an installed extension or
/// plugin), or a settings file that names agent-lsp.
const EDITORS: [(&str, Base, &str, &str); 7] = [
    (
        "VS Code",
        Base::Home,
        ".vscode/extensions",
        "agent-lsp.agent-lsp-",
    ),
    (
        "VS Code Server",
        Base::Home,
        ".vscode-server/extensions",
        "agent-lsp.agent-lsp-",
    ),
    (
        "code-server",
        Base::Data,
        "code-server/extensions",
        "agent-lsp.agent-lsp-",
    ),
    ("Neovim (lazy.nvim)", Base::Data, "nvim/lazy", "agent-lsp"),
    (
        "Neovim (vim.pack)",
        Base::Data,
        "nvim/site/pack/core/opt",
        "agent-lsp",
    ),
    (
        "Zed extension",
        Base::Data,
        "zed/extensions/installed",
        "agent-lsp",
    ),
    ("Zed settings", Base::Config, "zed/settings.json", ""),
];

/// The editors set up for agent-lsp in this home folder (information only: an editor not set
/// up is a choice).
fn editors_check(env: &EnvSource) -> Check {
    let home = env.get_nonempty("HOME").map(PathBuf::from);
    let xdg = |var: &str, fallback: &str| {
        env.get_nonempty(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(fallback)))
    };
    let (data, config) = (
        xdg("XDG_DATA_HOME", ".local/share"),
        xdg("XDG_CONFIG_HOME", ".config"),
    );
    let found: Vec<&str> = EDITORS
        .iter()
        .filter(|(_, base, rel, prefix)| {
            let base = match base {
                Base::Home => home.as_ref(),
                Base::Data => data.as_ref(),
                Base::Config => config.as_ref(),
            };
            let Some(path) = base.map(|b| b.join(rel)) else {
                return false;
            };
            if prefix.is_empty() {
                return std::fs::read_to_string(&path).is_ok_and(|t| t.contains("agent-lsp"));
            }
            let entries = std::fs::read_dir(&path).into_iter().flatten().flatten();
            entries
                .map(|e| e.file_name())
                .any(|name| name.to_string_lossy().starts_with(prefix))
        })
        .map(|(name, ..)| *name)
        .collect();
    match found.is_empty() {
        true => Check::ok(
            "editors",
            "no editor set-up found here (README \"Install\": one line per editor)",
        ),
        false => Check::ok("editors", format!("set up: {}", found.join(", "))),
    }
}

/// The report as text: one line per check, the fix indented below a warning or a problem.
pub fn text(checks: &[Check]) -> String {
    let mut out = String::new();
    for check in checks {
        let mark = match check.status {
            Status::Ok => "ok",
            Status::Warning => "warning",
            Status::Problem => "PROBLEM",
        };
        let detail = printable(&check.detail);
        out.push_str(&format!("{mark:>7}  {:<9} {detail}\n", check.name));
        for line in check.fix.iter().flat_map(|f| f.lines()) {
            out.push_str(&format!("{:>18}{}\n", "", printable(line)));
        }
    }
    let problems = checks
        .iter()
        .filter(|c| c.status == Status::Problem)
        .count();
    out.push_str(&match problems {
        0 => "No problems found.\n".to_string(),
        1 => "1 problem found.\n".to_string(),
        n => format!("{n} problems found.\n"),
    });
    out
}

/// `text` with control characters escaped: a project's `.mcp.json` names its servers, and a
/// hostile one must not drive the user's terminal (escape sequences) through the report.
fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c.is_control() {
            true => c.escape_default().collect::<Vec<_>>(),
            false => vec![c],
        })
        .collect()
}

/// The report as JSON: `{ok, checks: [{name, status, detail, fix?}]}`.
pub fn to_json(checks: &[Check]) -> Value {
    json!({"ok": !checks.iter().any(|c| c.status == Status::Problem), "checks": checks})
}
