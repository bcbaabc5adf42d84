//! The MCP servers of one connection (the daemon) or one process (`run`), and each session's view
//! of them.
//!
//! Sessions with the same working directory and the same entry share one running server; a
//! server stops when the last session using it is gone, or on `McpHub::stop_all`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use futures_util::future::join_all;

use crate::agent::tool::{AgentTool, ToolRef};
use crate::mcp::config::{McpConfig, Origin, ServerConfig, Transport};
use crate::mcp::server::{Server, ServerStatus, State};
use crate::mcp::tool::{McpTool, McpToolInfo, unique_names};
use crate::provider::transport::HttpClient;
use crate::tools::AskHandle;

/// Servers by the directory they run for and their entry's key.
type Running = HashMap<(PathBuf, String), Weak<Server>>;

/// The running servers, by working directory and entry.
#[derive(Clone, Default)]
pub struct McpHub {
    servers: Arc<Mutex<Running>>,
    http: HttpClient,
}

impl McpHub {
    pub fn new() -> Self {
        Self::default()
    }

    /// The servers of `config` for a session in `cwd`, started in parallel (a project's servers
    /// only when `project_trusted`). Servers already running for the same `cwd` and entry are
    /// shared.
    pub fn attach(&self, cwd: &Path, config: &McpConfig, project_trusted: bool) -> McpSession {
        let mut map = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, server| server.strong_count() > 0);
        let servers = config
            .servers
            .values()
            .map(|entry| {
                let key = (cwd.to_path_buf(), entry.key());
                if let Some(server) = map.get(&key).and_then(Weak::upgrade) {
                    return server;
                }
                let server = self.server(cwd, entry, project_trusted);
                map.insert(key, Arc::downgrade(&server));
                server
            })
            .collect();
        McpSession { servers, ask: None }
    }

    fn server(&self, cwd: &Path, entry: &ServerConfig, project_trusted: bool) -> Arc<Server> {
        let initial = if !entry.enabled {
            State::Disabled
        } else if matches!(entry.origin, Origin::Project(_)) && !project_trusted {
            State::Untrusted
        } else {
            State::Starting
        };
        let http = match &entry.transport {
            Transport::Http { url, .. } => Some(self.http.client_for(url)),
            Transport::Stdio { .. } => None,
        };
        let server = Server::new(entry.clone(), cwd, http, initial);
        if initial == State::Starting {
            let starting = server.clone();
            tokio::spawn(async move { starting.start().await });
        }
        server
    }

    /// Stops every server (shutdown, stdin closed, the end of a run): each gets EOF and a
    /// moment to exit, then its process group is killed.
    pub async fn shutdown(&self) {
        let servers: Vec<Arc<Server>> = {
            let map = self.servers.lock().unwrap_or_else(|e| e.into_inner());
            map.values().filter_map(Weak::upgrade).collect()
        };
        for server in &servers {
            server.stop();
        }
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
        while servers.iter().any(|s| s.running_group().is_some())
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        for server in &servers {
            server.kill_group(nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// One session's servers.
#[derive(Clone, Default)]
pub struct McpSession {
    servers: Vec<Arc<Server>>,
    /// The session's way to the user: the servers' elicitations during its calls ask there.
    ask: Option<AskHandle>,
}

impl McpSession {
    /// The same servers, their elicitations during this session's calls asked through `ask`.
    pub fn asking(mut self, ask: AskHandle) -> Self {
        self.ask = Some(ask);
        self
    }

    /// Waits until no server is starting any more (each bounded by its `startupTimeoutMs`),
    /// after starting again those that exited and may be restarted (their "next use").
    pub async fn ready(&self) {
        join_all(self.servers.iter().map(|s| async move {
            s.ensure_started().await;
            s.settled().await;
        }))
        .await;
    }

    /// The tools of the ready servers, with unique provider-safe names.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        let listed: Vec<(Arc<Server>, rmcp::model::Tool)> = self
            .servers
            .iter()
            .flat_map(|s| s.tools().into_iter().map(move |t| (s.clone(), t)))
            .collect();
        let pairs: Vec<(String, String)> = listed
            .iter()
            .map(|(s, t)| (s.name().to_owned(), t.name.to_string()))
            .collect();
        listed
            .iter()
            .zip(unique_names(&pairs))
            .map(|((server, tool), name)| {
                let tool = McpTool::new(server.clone(), tool, name).asking(self.ask.clone());
                Arc::new(tool)
            })
            .collect()
    }

    /// [`McpSession::tools`] as agent tools.
    pub fn tool_refs(&self) -> Vec<ToolRef> {
        self.tools().into_iter().map(|t| t as ToolRef).collect()
    }

    /// What an MCP tool of this session is (for approvals), by its agent-side name.
    pub fn info(&self, name: &str) -> Option<McpToolInfo> {
        self.tools()
            .into_iter()
            .find(|t| t.declaration().name == name)
            .map(|t| t.info().clone())
    }

    /// The ready servers' prompts, as `(server, prompt)`.
    pub fn prompts(&self) -> Vec<(String, rmcp::model::Prompt)> {
        (self.servers.iter())
            .flat_map(|s| s.prompts().into_iter().map(|p| (s.name().to_owned(), p)))
            .collect()
    }

    pub fn has_prompt(&self, server: &str, prompt: &str) -> bool {
        (self.servers.iter())
            .any(|s| s.name() == server && s.prompts().iter().any(|p| p.name == prompt))
    }

    /// `prompts/get` with `args` given in the order of the prompt's arguments (the rest joined
    /// into the last one), as the text of its messages.
    pub async fn get_prompt(
        &self,
        server: &str,
        prompt: &str,
        args: &[String],
    ) -> Result<String, String> {
        let found = self.servers.iter().find(|s| s.name() == server);
        let server = found.ok_or_else(|| format!("no MCP server {server:?}"))?;
        let declared = server.prompts().into_iter().find(|p| p.name == prompt);
        let names: Vec<String> = (declared.and_then(|p| p.arguments).unwrap_or_default())
            .into_iter()
            .map(|a| a.name)
            .collect();
        let result = server.get_prompt(prompt, positional(&names, args)).await?;
        Ok(crate::mcp::tool::prompt_text(&result))
    }

    /// Starts the servers that waited for the user to trust the project.
    pub fn trust(&self) {
        for server in &self.servers {
            server.trust();
        }
    }

    /// The configured servers waiting for the project's trust.
    pub fn untrusted(&self) -> Vec<ServerConfig> {
        (self.servers.iter())
            .filter(|s| s.status().state == State::Untrusted)
            .map(|s| s.config.clone())
            .collect()
    }

    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Follows changes of any server's state or tools from now on.
    pub fn watch(&self) -> McpWatch {
        McpWatch {
            receivers: self.servers.iter().map(|s| s.subscribe()).collect(),
        }
    }
}

/// Positional arguments by the prompt's argument names; extra words go to the last argument.
fn positional(names: &[String], args: &[String]) -> serde_json::Map<String, serde_json::Value> {
    let mut map = serde_json::Map::new();
    for (i, name) in names.iter().enumerate() {
        let value = if i + 1 == names.len() {
            args.get(i..).map(|rest| rest.join(" "))
        } else {
            args.get(i).cloned()
        };
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            map.insert(name.clone(), value.into());
        }
    }
    map
}

/// Changes of a session's servers (see [`McpSession::watch`]).
pub struct McpWatch {
    receivers: Vec<tokio::sync::watch::Receiver<u64>>,
}

impl McpWatch {
    /// Resolves at the next change not seen yet; never when there are no servers.
    pub async fn changed(&mut self) {
        if self.receivers.is_empty() {
            return std::future::pending().await;
        }
        let waits = self.receivers.iter_mut().map(|rx| Box::pin(rx.changed()));
        let (result, _, _) = futures_util::future::select_all(waits).await;
        if result.is_err() {
            // A server is gone for good: nothing more will come from it.
            std::future::pending::<()>().await;
        }
    }
}
