//! A temp-dir workspace with the coding tools, and helpers to call them like the loop does.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_lsp::agent::tool::{AgentToolResult, ToolError, ToolInput, ToolRef, ToolUpdater};
use agent_lsp::model_registry::EnvSource;
use agent_lsp::sandbox::{
    Availability, Layers, Sandbox, SandboxParts, SandboxPolicy, SandboxSetting,
};
use agent_lsp::tools::beneath::Resolver;
use agent_lsp::tools::{DiskWorkspace, ToolOptions, Workspace, coding_tools};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// This machine's sandbox layers, with this test binary's agent-lsp as the launcher.
pub fn machine_layers() -> Layers {
    agent_lsp::sandbox::launch::use_launcher(env!("CARGO_BIN_EXE_agent-lsp"));
    agent_lsp::sandbox::machine_layers(&EnvSource::from_pairs::<&str, &str>([]))
}

/// A workspace in a fresh temp dir (plus a sibling "outside" dir and a spill dir).
pub struct Harness {
    /// Holds `root/`, `outside/` and `spill/`.
    pub base: tempfile::TempDir,
    pub root: PathBuf,
    pub ws: Arc<dyn Workspace>,
    pub tools: Vec<ToolRef>,
    /// The commands' sandbox, when built with [`Harness::sandboxed`].
    pub sandbox: Option<Arc<Sandbox>>,
}

impl Harness {
    pub fn new() -> Self {
        Self::build(false, |ws| ws)
    }

    /// With `outside/` configured as an extra root.
    pub fn with_extra_root() -> Self {
        Self::build(true, |ws| ws)
    }

    /// With the workspace wrapped (for example in an editor-overlay test double).
    pub fn wrapped(wrap: impl FnOnce(Arc<dyn Workspace>) -> Arc<dyn Workspace>) -> Self {
        Self::build(false, wrap)
    }

    /// Commands sandboxed under `policy` (the session's roots writable, temp dir `sbtmp/`),
    /// with this machine's layers, or none when `availability` says the sandbox is unavailable.
    pub fn sandboxed(policy: SandboxPolicy, availability: Availability) -> Self {
        let mut layers = machine_layers();
        if let Availability::Unavailable(reason) = availability {
            layers.landlock = Err(reason);
        }
        Self::sandboxed_with(policy, layers)
    }

    /// Commands sandboxed under `policy` with the given layers (a machine with fewer).
    pub fn sandboxed_with(policy: SandboxPolicy, layers: Layers) -> Self {
        Self::build_with(false, |ws| ws, Some((policy, layers)), None)
    }

    /// Files reached as on a kernel without `openat2`: one component at a time.
    pub fn without_openat2() -> Self {
        Self::build_with(false, |ws| ws, None, Some(Resolver::Components))
    }

    fn build(extra: bool, wrap: impl FnOnce(Arc<dyn Workspace>) -> Arc<dyn Workspace>) -> Self {
        Self::build_with(extra, wrap, None, None)
    }

    fn build_with(
        extra: bool,
        wrap: impl FnOnce(Arc<dyn Workspace>) -> Arc<dyn Workspace>,
        sandbox: Option<(SandboxPolicy, Layers)>,
        resolver: Option<Resolver>,
    ) -> Self {
        let base = tempfile::tempdir().unwrap();
        for d in ["root", "outside", "spill"] {
            std::fs::create_dir(base.path().join(d)).unwrap();
        }
        let extra_roots = if extra {
            vec![base.path().join("outside")]
        } else {
            vec![]
        };
        let disk = DiskWorkspace::with_resolver(base.path().join("root"), extra_roots, resolver);
        let disk: Arc<dyn Workspace> = Arc::new(disk.unwrap());
        let ws = wrap(disk);
        let sandbox = sandbox.map(|(policy, layers)| {
            Sandbox::new(SandboxParts {
                setting: SandboxSetting {
                    mode: Some(policy.mode),
                    network: policy.network,
                    pass_env: None,
                    protected: None,
                },
                writable_roots: vec![ws.root().to_path_buf()],
                temp_dir: base.path().join("sbtmp"),
                layers,
                secret_env: vec!["AGENT_LSP_TEST_SECRET".into()],
                own_paths: Vec::new(),
                quarantine: Some(base.path().join("removed")),
                hidden: Vec::new(),
            })
        });
        let tools = coding_tools(
            ws.clone(),
            ToolOptions {
                spill_dir: Some(base.path().join("spill")),
                sandbox: sandbox.clone(),
                ..Default::default()
            },
        );
        Harness {
            root: ws.root().to_path_buf(),
            base,
            ws,
            tools,
            sandbox,
        }
    }

    pub fn outside(&self) -> PathBuf {
        std::fs::canonicalize(self.base.path().join("outside")).unwrap()
    }

    pub fn spill_dir(&self) -> PathBuf {
        self.base.path().join("spill")
    }

    pub fn tool(&self, name: &str) -> ToolRef {
        self.tools
            .iter()
            .find(|t| t.name() == name)
            .cloned()
            .unwrap_or_else(|| panic!("no tool {name}"))
    }

    /// Calls a tool as the loop would (arguments prepared first).
    pub async fn call(&self, name: &str, args: Value) -> Result<AgentToolResult, ToolError> {
        self.call_with(name, args, CancellationToken::new(), ToolUpdater::none())
            .await
    }

    pub async fn call_with(
        &self,
        name: &str,
        args: Value,
        cancel: CancellationToken,
        updater: ToolUpdater,
    ) -> Result<AgentToolResult, ToolError> {
        let tool = self.tool(name);
        let args = tool.prepare_arguments(args);
        let input = ToolInput {
            cancel,
            on_update: updater,
            ..ToolInput::new("call-1", args)
        };
        tool.execute(input).await
    }

    /// The text of a successful call.
    pub async fn ok_text(&self, name: &str, args: Value) -> String {
        match self.call(name, args).await {
            Ok(r) => text(&r),
            Err(e) => panic!("{name} failed: {e}"),
        }
    }

    /// The error message of a failed call.
    pub async fn err_text(&self, name: &str, args: Value) -> String {
        match self.call(name, args).await {
            Ok(r) => panic!("{name} unexpectedly succeeded: {}", text(&r)),
            Err(e) => e.message,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn put(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, bytes).unwrap();
        p
    }

    pub fn get(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap()
    }

    pub fn get_str(&self, rel: &str) -> String {
        String::from_utf8(self.get(rel)).unwrap()
    }
}

/// All text blocks of a result, joined.
pub fn text(r: &AgentToolResult) -> String {
    r.content
        .iter()
        .filter_map(|b| b.as_text())
        .collect::<Vec<_>>()
        .join("\n")
}

/// True while a process exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state letter follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits (polling) until `pid` is gone, up to `secs` seconds; returns whether it went.
pub async fn wait_gone(pid: u32, secs: u64) -> bool {
    for _ in 0..secs * 20 {
        if !process_alive(pid) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

/// Entries of a directory (names), sorted.
pub fn dir_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
