//! What `initialize` settles for the connection: client capabilities, options, encoding, cwd.

use std::path::PathBuf;
use std::time::Duration;

use ls_types::{InitializeParams, PositionEncodingKind};
use serde_json::Value;

use crate::lsp::documents::uri_to_path;
use crate::lsp::position::Encoding;
use crate::lsp::protocol::{ClientAgentCapabilities, InitOptions, SaveAfterEdit};
use crate::rpc::output::DEFAULT_DELTA_INTERVAL;

/// The connection's settled configuration (immutable after `initialize`).
#[derive(Clone, Debug, Default)]
pub struct ConnConfig {
    /// `Some` when the client sent `capabilities.experimental.agent` (an agent client).
    pub agent: Option<ClientAgentCapabilities>,
    pub document_changes: bool,
    /// The client applies `DeleteFile` operations (`workspaceEdit.resourceOperations`).
    pub delete_files: bool,
    pub message_actions: bool,
    pub work_done_progress: bool,
    pub show_document: bool,
    pub encoding: Encoding,
    pub options: InitOptions,
    pub cwd: PathBuf,
    pub process_id: Option<u32>,
}

impl ConnConfig {
    /// Reads the client's capabilities and options; malformed options are reported, not fatal.
    pub fn from_initialize(params: &InitializeParams) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let caps = serde_json::to_value(&params.capabilities).unwrap_or(Value::Null);
        let flag = |ptr: &str| caps.pointer(ptr).and_then(Value::as_bool).unwrap_or(false);
        let agent = caps.pointer("/experimental/agent").map(|v| {
            serde_json::from_value::<ClientAgentCapabilities>(v.clone()).unwrap_or_else(|e| {
                warnings.push(format!("capabilities.experimental.agent is malformed: {e}"));
                ClientAgentCapabilities::default()
            })
        });
        let options = match &params.initialization_options {
            None | Some(Value::Null) => InitOptions::default(),
            Some(v) => parse_options(v, &mut warnings),
        };
        let encodings: Option<Vec<PositionEncodingKind>> = params
            .capabilities
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.clone());
        let config = ConnConfig {
            agent,
            document_changes: flag("/workspace/workspaceEdit/documentChanges"),
            delete_files: flag("/workspace/workspaceEdit/documentChanges")
                && caps
                    .pointer("/workspace/workspaceEdit/resourceOperations")
                    .and_then(Value::as_array)
                    .is_some_and(|ops| ops.iter().any(|op| op == "delete")),
            // Zed shows message actions without advertising them (zed#37902).
            message_actions: caps
                .pointer("/window/showMessage/messageActionItem")
                .is_some()
                || params.client_info.as_ref().is_some_and(|c| c.name == "Zed"),
            work_done_progress: flag("/window/workDoneProgress"),
            show_document: flag("/window/showDocument/support"),
            encoding: Encoding::negotiate(encodings.as_deref()),
            cwd: default_cwd(params, &options),
            options,
            process_id: params.process_id,
        };
        (config, warnings)
    }

    pub fn events(&self) -> bool {
        self.agent.as_ref().is_some_and(|a| a.events)
    }

    /// The client forwards diagnostics, so sessions offer the `diagnostics` tool.
    pub fn diagnostics(&self) -> bool {
        self.agent.as_ref().is_some_and(|a| a.diagnostics)
    }

    pub fn approvals(&self) -> bool {
        self.agent.as_ref().is_some_and(|a| a.approvals)
    }

    /// The client answers `agent/askUser`.
    pub fn ask_user(&self) -> bool {
        self.agent.as_ref().is_some_and(|a| a.ask_user)
    }

    /// The LSP methods the client answers through `agent/languageRequest` (none for generic
    /// clients), as it listed them.
    pub fn language_features(&self) -> &[String] {
        self.agent
            .as_ref()
            .map_or(&[], |a| a.language_features.as_slice())
    }

    /// How long an `agent/languageRequest` waits (`languageTimeoutMs`, 15 s by default).
    pub fn language_timeout(&self) -> Duration {
        Duration::from_millis(self.options.language_timeout_ms.unwrap_or(15_000))
    }

    pub fn save_documents(&self) -> bool {
        self.agent.as_ref().is_some_and(|a| a.save_documents)
    }

    /// When a buffer the agent edited is saved (`saveAfterEdit`).
    pub fn save_after_edit(&self) -> SaveAfterEdit {
        self.options.save_after_edit
    }

    /// A client that did not opt in to the agent protocol gets the LSP-standard surface.
    pub fn is_generic(&self) -> bool {
        self.agent.is_none()
    }

    pub fn approval_timeout(&self) -> Duration {
        Duration::from_millis(self.options.approval_timeout_ms.unwrap_or(600_000))
    }

    pub fn edit_timeout(&self) -> Duration {
        Duration::from_millis(self.options.edit_timeout_ms.unwrap_or(5_000))
    }

    /// The pace of `$/agentEvent` deltas of one block (`deltaIntervalMs`, one frame by default).
    pub fn delta_interval(&self) -> Duration {
        self.options
            .delta_interval_ms
            .map_or(DEFAULT_DELTA_INTERVAL, Duration::from_millis)
    }
}

/// `initializationOptions`, each malformed field left out with a warning naming it (one typo
/// must not throw away the rest: `sandbox` among them). A malformed `sandbox` mode fails
/// closed: every command then runs `readOnly` until it is fixed.
fn parse_options(value: &Value, warnings: &mut Vec<String>) -> InitOptions {
    if let Ok(options) = serde_json::from_value(value.clone()) {
        return options;
    }
    let Some(fields) = value.as_object() else {
        warnings.push("initializationOptions must be an object; they were ignored".into());
        return InitOptions::default();
    };
    let mut good = serde_json::Map::new();
    let mut bad_mode = false;
    for (key, field) in fields {
        let alone = Value::Object(serde_json::Map::from_iter([(key.clone(), field.clone())]));
        match serde_json::from_value::<InitOptions>(alone) {
            Ok(_) => {
                good.insert(key.clone(), field.clone());
            }
            Err(e) => {
                warnings.push(format!(
                    "initializationOptions.{key} is malformed and was ignored: {e}"
                ));
                bad_mode |= key == "sandbox";
            }
        }
    }
    let mut options: InitOptions = serde_json::from_value(Value::Object(good)).unwrap_or_default();
    if bad_mode {
        options.sandbox = Some(crate::sandbox::SandboxMode::ReadOnly);
        warnings.push(
            "initializationOptions.sandbox is not a mode: every command runs sandboxed readOnly \
             until it names workspaceWrite, readOnly or off"
                .into(),
        );
    }
    options
}

fn default_cwd(params: &InitializeParams, options: &InitOptions) -> PathBuf {
    #[allow(deprecated)] // rootUri is deprecated but still the only root some clients send.
    let root_uri = params.root_uri.as_ref().map(|u| u.as_str().to_owned());
    options
        .cwd
        .as_ref()
        .map(PathBuf::from)
        .or_else(|| {
            let folder = params.workspace_folders.as_ref()?.first()?;
            uri_to_path(folder.uri.as_str())
        })
        .or_else(|| uri_to_path(&root_uri?))
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(params: Value) -> (ConnConfig, Vec<String>) {
        let params: InitializeParams = serde_json::from_value(params).unwrap();
        ConnConfig::from_initialize(&params)
    }

    #[test]
    fn reads_capabilities_and_options() {
        let (c, warnings) = config(json!({"capabilities": {
            "general": {"positionEncodings": ["utf-8"]},
            "experimental": {"agent": {"events": true, "approvals": true}},
            "window": {"workDoneProgress": true}},
            "initializationOptions": {"approval": {"bash": "allow"}, "editTimeoutMs": 10, "client": "helix"},
            "rootUri": "file:///tmp"}));
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(c.events() && c.approvals() && !c.save_documents() && !c.is_generic());
        assert_eq!(c.encoding, Encoding::Utf8);
        assert_eq!(c.edit_timeout(), Duration::from_millis(10));
        assert_eq!(c.delta_interval(), DEFAULT_DELTA_INTERVAL);
        assert_eq!(c.cwd, PathBuf::from("/tmp"));
        assert!(c.work_done_progress && !c.message_actions && !c.document_changes);
        assert!(c.language_features().is_empty());
        assert_eq!(c.language_timeout(), Duration::from_secs(15));
    }

    #[test]
    fn reads_the_language_features_and_their_timeout() {
        let (c, warnings) = config(json!({"capabilities": {"experimental": {"agent": {
            "languageFeatures": ["textDocument/definition", "workspace/symbol", "bogus"]}}},
            "initializationOptions": {"languageTimeoutMs": 250}}));
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            c.language_features(),
            ["textDocument/definition", "workspace/symbol", "bogus"]
        );
        assert_eq!(c.language_timeout(), Duration::from_millis(250));
    }

    #[test]
    fn delta_interval_is_the_clients_choice() {
        let (c, warnings) = config(json!({"capabilities": {},
            "initializationOptions": {"deltaIntervalMs": 0}}));
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(c.delta_interval(), Duration::ZERO);
        let (c, _) = config(json!({"capabilities": {},
            "initializationOptions": {"deltaIntervalMs": 50}}));
        assert_eq!(c.delta_interval(), Duration::from_millis(50));
    }

    #[test]
    fn zed_gets_message_actions_and_bad_options_are_reported() {
        let (c, warnings) = config(json!({"capabilities": {}, "clientInfo": {"name": "Zed"},
            "initializationOptions": {"approval": {"bash": "sometimes"}}}));
        assert!(c.is_generic() && c.message_actions);
        // Malformed options fall back to the defaults, pacing included.
        assert_eq!(c.delta_interval(), DEFAULT_DELTA_INTERVAL);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("initializationOptions"),
            "{warnings:?}"
        );
    }
}
