//! The editor's language servers as tools: `lsp_definition`, `lsp_references`, `lsp_hover`,
//! `lsp_implementations`, `lsp_document_symbols`, `lsp_workspace_symbols` and `lsp_rename`
//! (protocol.md §3.25). Each asks the client with `agent/languageRequest` (§4.6), which the
//! client answers with what its *other* language servers return; a session gets the tools of
//! the methods the client listed in `capabilities.experimental.agent.languageFeatures`.
//!
//! - `position_args.rs`: `path` + `line` + `column` | `symbol` → an LSP position, against the
//!   live buffer or the disk;
//! - `request.rs`: the request through the one registry of requests to the client (timeout,
//!   cancel) and its failures as the model reads them;
//! - `lookups.rs`: the read-only tools; `results.rs`: their results as text, bounded;
//! - `rename.rs` (with `edits.rs`): a `WorkspaceEdit` as new file texts, proposed, previewed for
//!   the approval and applied through the workspace's edit path, journaled.
//!
//! The tools exist before their session does (`FrontEnd::extra_tools`); the session connects
//! itself afterwards ([`LanguageSessions::connect`]), so a request can name its run.

mod edits;
mod lookups;
mod position_args;
mod rename;
mod request;
mod results;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use crate::agent::tool::ToolRef;
use crate::core::permissions::Behavior;
use crate::core::session::{Session, View};
use crate::lsp::documents::DocStore;
use crate::lsp::position::Encoding;
use crate::rpc::outgoing::Outgoing;
use crate::tools::recorder::ChangeRecorder;
use crate::tools::{ReadTracker, Workspace};

pub use rename::{RenameApproval, rename_approval};

/// The LSP methods the tools ask for, each with its tool.
pub const FEATURES: [(&str, &str); 7] = [
    ("textDocument/definition", "lsp_definition"),
    ("textDocument/references", "lsp_references"),
    ("textDocument/hover", "lsp_hover"),
    ("textDocument/documentSymbol", "lsp_document_symbols"),
    ("workspace/symbol", "lsp_workspace_symbols"),
    ("textDocument/implementation", "lsp_implementations"),
    ("textDocument/rename", crate::tools::LSP_RENAME),
];

/// What a session's language tools share: where files are, how to ask the client, and the
/// session they belong to.
#[derive(Clone)]
pub struct Lang {
    pub ws: Arc<dyn Workspace>,
    pub docs: DocStore,
    pub out: Outgoing,
    pub encoding: Encoding,
    /// `languageTimeoutMs`.
    pub timeout: Duration,
    pub session_id: String,
    /// The session's journal, for an applied rename.
    pub recorder: Option<Arc<dyn ChangeRecorder>>,
    /// What the agent last saw of each file (`edit`'s and `write`'s), told of a rename's writes.
    pub tracker: Option<Arc<ReadTracker>>,
    pub(crate) shared: Arc<Shared>,
}

/// What a language tool needs of its session once it exists.
pub trait RunSource: Send + Sync {
    /// The run in progress, if any.
    fn active_run(&self) -> Option<String>;

    /// Why the session's permission rules keep a rename from editing `path`, or `None`: a
    /// deny rule for an `edit` of it, or an ask rule when the user was not `asked` about this
    /// rename (the approval lists its files). The gate saw only `lsp_rename`, not its files.
    fn rename_refusal(&self, path: &Path, asked: bool) -> Option<String>;
}

impl<V: View> RunSource for Session<V> {
    fn active_run(&self) -> Option<String> {
        Session::active_run(self)
    }

    fn rename_refusal(&self, path: &Path, asked: bool) -> Option<String> {
        let permissions = self.gate.permissions();
        let args = serde_json::json!({"path": path});
        let verdict = permissions.check(&permissions.subject("edit", &args, None))?;
        let rule = verdict.rules.first().map(|r| r.describe());
        let rule = rule.unwrap_or_else(|| "a permission rule".into());
        match verdict.behavior {
            Behavior::Deny => Some(format!("the permission rule {rule} denies editing it")),
            Behavior::Ask if !asked => Some(format!(
                "the permission rule {rule} asks before editing it, and this rename was not \
                 asked about"
            )),
            _ => None,
        }
    }
}

/// A session's state behind its language tools.
#[derive(Default)]
pub(crate) struct Shared {
    session: OnceLock<Weak<dyn RunSource>>,
    /// Renames planned for an approval, by tool call id: the call applies what was shown.
    plans: Mutex<HashMap<String, Arc<rename::RenamePlan>>>,
}

impl Lang {
    fn session(&self) -> Option<Arc<dyn RunSource>> {
        self.shared.session.get().and_then(Weak::upgrade)
    }

    /// The session's active run (`""` outside one).
    fn run_id(&self) -> String {
        (self.session().and_then(|s| s.active_run())).unwrap_or_default()
    }

    /// Why the permission rules keep a rename from editing `path` (see [`RunSource`]).
    fn rename_refusal(&self, path: &Path, asked: bool) -> Option<String> {
        self.session()?.rename_refusal(path, asked)
    }
}

/// The language tools of a connection's sessions, by session id.
#[derive(Default)]
pub struct LanguageSessions {
    map: Mutex<HashMap<String, Lang>>,
}

impl LanguageSessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Lang>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tools for the methods in `features` (unknown ones ignored), kept for the session
    /// `lang` names.
    pub fn tools(&self, features: &[String], lang: Lang) -> Vec<ToolRef> {
        let offered = |method: &str| features.iter().any(|f| f == method);
        let mut tools: Vec<ToolRef> = Vec::new();
        for (method, _) in FEATURES.iter().filter(|(m, _)| offered(m)) {
            tools.push(match *method {
                "textDocument/rename" => rename::tool(lang.clone()),
                other => lookups::for_method(other, lang.clone()),
            });
        }
        if !tools.is_empty() {
            self.lock().insert(lang.session_id.clone(), lang);
        }
        tools
    }

    /// Connects the session to its tools, once it exists.
    pub fn connect<V: View>(&self, session: &Arc<Session<V>>) {
        if let Some(lang) = self.lock().get(&session.id) {
            let weak: Weak<dyn RunSource> = Arc::downgrade(session) as Weak<Session<V>>;
            let _ = lang.shared.session.set(weak);
        }
    }

    /// The session's language tools' state, when it has them.
    pub fn get(&self, session_id: &str) -> Option<Lang> {
        self.lock().get(session_id).cloned()
    }
}
