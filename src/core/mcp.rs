//! A session's MCP servers: which configuration applies, whether the project's servers may start,
//! and the session's tools as they change (the coding tools plus the ready servers' tools).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::agent::hooks::{AgentLoopTurnUpdate, PrepareNextTurnHook, PrepareRunHook};
use crate::agent::tool::ToolRef;
use crate::agent::transcript::declarations_equal;
use crate::mcp::config::{self, ConfigError, McpConfig, Origin, ServerConfig};
use crate::mcp::tool::McpToolInfo;
use crate::mcp::trust::{SessionTrust, Trust, TrustQuestion, TrustStore, with_changes};
use crate::mcp::{McpHub, McpSession};
use crate::model_registry::EnvSource;
use crate::tools::AskHandle;

/// What a front end says about MCP servers.
#[derive(Clone, Default)]
pub struct McpSpec {
    /// The connection's (or process's) running servers; `None`: no MCP servers at all.
    pub hub: Option<McpHub>,
    /// The front end's own sources, after the user's file and the project's `.mcp.json`.
    pub sources: Vec<McpSource>,
    /// Start the project's servers without asking (`run --trust-project-mcp`).
    pub trust_project: bool,
}

/// A source of `mcpServers`, later ones overriding earlier ones by name.
#[derive(Clone, Debug)]
pub enum McpSource {
    /// A file holding `{"mcpServers": …}` (`run --mcp-config FILE`).
    File(PathBuf),
    /// The editor's `initializationOptions.mcpServers`.
    Editor(Value),
    /// The list an ACP client sent with the session.
    Client(Value),
}

/// How many changes the title names; the listing and `args` name them all.
const CHANGES_IN_TITLE: usize = 3;

/// A session's tools: the fixed ones and those of its MCP servers.
pub struct SessionTools {
    base: Vec<ToolRef>,
    pub mcp: McpSession,
    /// Where the project's trust is remembered, and for which project.
    trust: (TrustStore, PathBuf),
    /// The project's servers as the session found them: what an answer is remembered for (all
    /// of them, so the next session compares the same set, disabled ones included).
    project_servers: Vec<ServerConfig>,
    /// What is remembered for the project's servers and what changed since: at the session's
    /// start, then the answer (which nothing changed since); whether the question is open.
    trust_state: SessionTrust,
}

impl SessionTools {
    /// The fixed tools (coding tools and the front end's).
    pub fn base(&self) -> &[ToolRef] {
        &self.base
    }

    /// The tools now: the fixed ones, then the ready servers' tools.
    pub fn current(&self) -> Vec<ToolRef> {
        let mut tools = self.base.clone();
        tools.extend(self.mcp.tool_refs());
        tools
    }

    /// What an MCP tool is (for approvals); `None` for the fixed tools.
    pub fn mcp_info(&self, name: &str) -> Option<McpToolInfo> {
        self.mcp.info(name)
    }

    /// The project's servers waiting for the user's trust (empty when none wait).
    pub fn untrusted(&self) -> Vec<ServerConfig> {
        self.mcp.untrusted()
    }

    /// Whether the user should be asked about the project's servers: some wait, and no answer
    /// for them is remembered.
    pub fn needs_trust(&self) -> bool {
        self.trust_state.trust() == Trust::Unknown && !self.mcp.untrusted().is_empty()
    }

    /// The project directory whose `.mcp.json` the trust is about.
    pub fn project(&self) -> &Path {
        &self.trust.1
    }

    /// The question about the project's waiting servers, worded once for every front end: each
    /// server with its command line, and what changed since the last answer (so a yes given
    /// before is not taken for this file's). Its args: `{project, servers: [{name, command}],
    /// changes: [text]}`.
    pub fn trust_question(&self) -> TrustQuestion {
        let servers = self.mcp.untrusted();
        let project = self.project().display().to_string();
        let changes = self.trust_state.changes(ToString::to_string);
        let listing = (servers.iter())
            .map(|s| format!("{}: {}", s.name, s.describe()))
            .collect::<Vec<_>>()
            .join("\n");
        let listing = with_changes(listing, &changes);
        TrustQuestion {
            title: trust_title(&project, &changes),
            listing,
            args: serde_json::json!({"project": project, "servers": servers.iter()
                .map(|s| serde_json::json!({"name": s.name, "command": s.describe()}))
                .collect::<Vec<_>>(), "changes": changes}),
            project,
        }
    }

    /// Claims the one open trust question: `false` when one is open already.
    pub fn begin_trust_question(&self) -> bool {
        self.trust_state.begin_question()
    }

    /// The trust question closed (answered or not).
    pub fn end_trust_question(&self) {
        self.trust_state.end_question();
    }

    /// Records the user's answer for the project's servers; on yes they start.
    pub fn decide_trust(&self, allowed: bool) {
        let (store, root) = &self.trust;
        if let Err(e) = store.remember(root, &self.project_servers, allowed) {
            tracing::warn!(%e, "cannot remember the MCP trust decision");
        }
        self.trust_state.answered(allowed);
        if allowed {
            self.mcp.trust();
        }
    }

    /// Waits for starting servers when a run starts, so its first request declares their tools.
    pub fn prepare_run_hook(self: &Arc<Self>) -> PrepareRunHook {
        let tools = self.clone();
        Arc::new(move |_cancel| {
            let tools = tools.clone();
            Box::pin(async move {
                tools.mcp.ready().await;
                Some(tools.current())
            })
        })
    }

    /// Before each further turn: servers that exited get their next use, and a change of tools
    /// becomes the context's, which the loop then declares through the transcript.
    pub fn next_turn_hook(self: &Arc<Self>) -> PrepareNextTurnHook {
        let tools = self.clone();
        Arc::new(move |turn, _cancel| {
            let tools = tools.clone();
            Box::pin(async move {
                tools.mcp.ready().await;
                let current = tools.current();
                let same = current.len() == turn.context.tools.len()
                    && current
                        .iter()
                        .zip(&turn.context.tools)
                        .all(|(a, b)| declarations_equal(a.declaration(), b.declaration()));
                if same {
                    return Ok(None);
                }
                let mut context = turn.context;
                context.tools = current;
                Ok(Some(AgentLoopTurnUpdate {
                    context: Some(context),
                    ..Default::default()
                }))
            })
        })
    }
}

/// The session's MCP servers, started (those of an untrusted project wait), and the problems
/// found in the configuration; their elicitations ask the user through `ask`.
pub fn attach(
    spec: &McpSpec,
    cwd: &Path,
    env: &EnvSource,
    base: Vec<ToolRef>,
    ask: &AskHandle,
) -> (SessionTools, Vec<ConfigError>) {
    let store = TrustStore::new(env);
    let (config, errors) = load(spec, cwd, env);
    let project_servers: Vec<ServerConfig> = config.project_servers().cloned().collect();
    let remembered = store.decision(cwd, &project_servers);
    let session = match &spec.hub {
        Some(hub) => {
            let trusted = spec.trust_project || remembered.trust == Trust::Allowed;
            hub.attach(cwd, &config, trusted).asking(ask.clone())
        }
        None => McpSession::default(),
    };
    let tools = SessionTools {
        base,
        mcp: session,
        trust: (store, cwd.to_path_buf()),
        project_servers,
        trust_state: SessionTrust::new(remembered),
    };
    (tools, errors)
}

/// `Start the MCP servers of <project>/.mcp.json?`, naming the first changes since the last
/// answer.
fn trust_title(project: &str, changes: &[String]) -> String {
    let title = format!("Start the MCP servers of {project}/.mcp.json?");
    if changes.is_empty() {
        return title;
    }
    let mut named = changes[..changes.len().min(CHANGES_IN_TITLE)].join("; ");
    if changes.len() > CHANGES_IN_TITLE {
        named.push_str(&format!("; and {} more", changes.len() - CHANGES_IN_TITLE));
    }
    format!("{title} Changed since your last answer: {named}")
}

/// What is configured for a project, without starting anything (`agent-lsp doctor`).
pub struct Configured {
    /// By name, later sources winning.
    pub servers: std::collections::BTreeMap<String, ServerConfig>,
    /// The names of the servers from the project's `.mcp.json`.
    pub project: Vec<String>,
    /// The remembered answer about the project's servers.
    pub trust: Trust,
    /// Broken files or entries (the rest still loaded).
    pub errors: Vec<ConfigError>,
}

/// The servers of the user's file and the project's `.mcp.json` for `cwd`, and whether the
/// project's may start.
pub fn configured(cwd: &Path, env: &EnvSource) -> Configured {
    let spec = McpSpec {
        hub: Some(McpHub::new()),
        ..McpSpec::default()
    };
    let (config, errors) = load(&spec, cwd, env);
    let project_servers: Vec<ServerConfig> = config.project_servers().cloned().collect();
    let trust = TrustStore::new(env).decision(cwd, &project_servers).trust;
    Configured {
        project: project_servers.iter().map(|s| s.name.clone()).collect(),
        servers: config.servers,
        trust,
        errors,
    }
}

/// The merged configuration: the user's file, the project's `.mcp.json`, the front end's sources.
fn load(spec: &McpSpec, cwd: &Path, env: &EnvSource) -> (McpConfig, Vec<ConfigError>) {
    let mut merged = McpConfig::default();
    let mut errors = Vec::new();
    if spec.hub.is_none() {
        return (merged, errors);
    }
    let mut add = |(servers, problems): (Vec<ServerConfig>, Vec<ConfigError>)| {
        merged.merge(servers);
        errors.extend(problems);
    };
    if let Some(user) = config::user_file(env) {
        add(config::load_file(&user, Origin::User(user.clone()), env));
    }
    let project = config::project_file(cwd);
    add(config::load_file(
        &project,
        Origin::Project(project.clone()),
        env,
    ));
    for source in &spec.sources {
        add(match source {
            McpSource::File(path) => config::load_file(path, Origin::File(path.clone()), env),
            McpSource::Editor(value) => config::parse_servers(value, &Origin::Editor, env),
            McpSource::Client(value) => config::parse_servers(value, &Origin::Client, env),
        });
    }
    (merged, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_names_what_changed_and_cuts_a_long_list() {
        assert_eq!(
            trust_title("/p", &[]),
            "Start the MCP servers of /p/.mcp.json?"
        );
        let changes: Vec<String> = [
            "new server db",
            "fs: env added A",
            "fs: cwd added",
            "x: url changed",
        ]
        .map(String::from)
        .into();
        assert_eq!(
            trust_title("/p", &changes[..1]),
            "Start the MCP servers of /p/.mcp.json? Changed since your last answer: new server db"
        );
        assert_eq!(
            trust_title("/p", &changes),
            "Start the MCP servers of /p/.mcp.json? Changed since your last answer: new server db; \
             fs: env added A; fs: cwd added; and 1 more"
        );
    }
}
