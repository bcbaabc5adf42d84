//! The daemon's side of the approval gate (`core::approval`): its policy
//! (`initializationOptions.approval`) and asking the user through the client's approval channel
//! (`agent/beforeToolCall`, or the generic surface in `generic_client.rs`); the project's MCP trust
//! question goes the same way.
//!
//! Every failure to get an answer (timeout, error reply, disconnect, abort) blocks the call with
//! a reason saying why: a tool that must ask is never silently allowed.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::hooks::BeforeToolCallContext;
use crate::core::approval::{Answer, Policy, mcp_policy, policy_for_call};
use crate::core::permissions::TrustAnswer;
use crate::lsp::live_session::LiveSession;
use crate::lsp::protocol::{
    ApprovalPolicy, BeforeToolCallParams, BeforeToolCallResult as ClientAnswer, Decision, Preview,
    ToolKind, method,
};
use crate::lsp::saving;
use crate::mcp::trust::TrustQuestion;
use crate::rpc::outgoing::{RequestError, duration_text};
use crate::tools::{ToolPreview, preview};

/// The daemon's standing policy: `initializationOptions.approval` (an MCP tool's server entry
/// first).
pub fn policy(session: &LiveSession, tool: &str, args: &Value) -> Policy {
    let approval = &session.view.ctx.config.options.approval;
    let policy = match session.tools.mcp_info(tool) {
        Some(info) => mcp_policy(&info, approval, tool),
        None => policy_for_call(approval, tool, args),
    };
    match policy {
        ApprovalPolicy::Allow => Policy::Allow,
        ApprovalPolicy::Ask => Policy::Ask,
        ApprovalPolicy::Block => Policy::Block(format!(
            "Tool \"{tool}\" is blocked by the approval policy (initializationOptions.approval)"
        )),
    }
}

/// Asks through `agent/beforeToolCall` or the generic surface.
pub async fn ask(
    session: &Arc<LiveSession>,
    ctx: &BeforeToolCallContext,
    cancel: &CancellationToken,
) -> Result<Answer, String> {
    let tool = &ctx.tool_call.name;
    let request = approval_request(session, ctx).await;
    let config = &session.view.ctx.config;
    let answer = if config.approvals() {
        ask_agent_client(session, &request, cancel).await
    } else if config.is_generic() {
        crate::lsp::generic_client::ask(&session.view.ctx, &request, cancel).await
    } else {
        Err(format!(
            "Tool \"{tool}\" needs approval, but this client has no approval channel \
             (capabilities.experimental.agent.approvals is not set). It was not run. \
             Allow it in initializationOptions.approval to run it without asking."
        ))
    }?;
    Ok(Answer {
        decision: answer.decision,
        reason: answer.reason,
        terminate: answer.terminate.unwrap_or(false),
        scope: answer.scope,
    })
}

/// Whether this connection's client can be asked about a project's servers.
pub fn can_ask_trust(session: &LiveSession) -> bool {
    session.view.ctx.config.approvals() || session.view.ctx.config.is_generic()
}

/// Asks the user again about the project's servers that wait for trust (`agent/mcpAskTrust`,
/// `/mcp-trust`): whether a question is (or already was) on its way.
pub fn ask_project_trust_again(session: &Arc<LiveSession>) -> bool {
    let asked = !session.tools.untrusted().is_empty() && can_ask_trust(session);
    if asked {
        tokio::spawn(ask_project_trust(session.clone()));
    }
    asked
}

/// Asks whether the project's `.mcp.json` may start its servers (one request naming them and
/// their commands); the answer is remembered for the project. No answer leaves them stopped.
/// While a question is open, asking again asks nothing.
pub async fn ask_project_trust(session: Arc<LiveSession>) {
    if session.tools.untrusted().is_empty() || !session.tools.begin_trust_question() {
        return;
    }
    ask_trust(&session).await;
    session.tools.end_trust_question();
}

async fn ask_trust(session: &Arc<LiveSession>) {
    let question = session.tools.trust_question();
    let request = TrustRequest::new("mcp-trust", "mcp_servers", ToolKind::Execute, question);
    let stays = "the project's MCP servers stay stopped";
    if let Some(allowed) = ask_allowed(session, request, stays).await {
        session.tools.decide_trust(allowed);
    }
}

/// Asks a trust question whose answer is yes or no: whether the user allowed it, `None` (and
/// a log line saying what `stays` so) when there was no answer.
async fn ask_allowed(
    session: &Arc<LiveSession>,
    request: TrustRequest,
    stays: &str,
) -> Option<bool> {
    match ask_trust_question(session, request).await {
        Ok(decision) => Some(matches!(decision, Decision::Allow | Decision::AllowAlways)),
        Err(e) => {
            tracing::info!(session = session.id, %e, "{stays}");
            None
        }
    }
}

/// Asks whether the project's hooks (`.agent-lsp/settings*.json`) may run, when they wait and
/// nothing is remembered: one `agent/beforeToolCall` (`toolName` `project_hooks`) listing them;
/// either answer is remembered for the project. No answer leaves them off, unremembered.
pub fn ask_hooks_trust_if_needed(session: &Arc<LiveSession>) {
    let hooks = &session.hooks;
    if !hooks.needs_trust() || !can_ask_trust(session) || !hooks.begin_trust_question() {
        return;
    }
    let session = session.clone();
    tokio::spawn(async move {
        let question = session.hooks.trust_question();
        let kind = ToolKind::Execute;
        let request = TrustRequest::new("hooks-trust", "project_hooks", kind, question);
        let stays = "the project's hooks stay off";
        if let Some(allowed) = ask_allowed(&session, request, stays).await {
            session.hooks.decide_trust(allowed);
        }
        session.hooks.end_trust_question();
    });
}

/// Asks, when some wait, whether the allow rules of the project's settings files apply (one
/// `agent/beforeToolCall` naming them, `toolName: "permission_rules"`): `allow`/`allowAlways`
/// trusts them, `blockAlways` refuses them, both remembered for the project; `block` refuses
/// them for this session only (asked again in the next). No answer leaves them off.
pub fn ask_rules_trust(session: &Arc<LiveSession>) {
    let permissions = session.gate.permissions().clone();
    let waiting = permissions.untrusted();
    if waiting.is_empty() || !can_ask_trust(session) {
        return;
    }
    let session = session.clone();
    tokio::spawn(async move {
        let question = permissions.trust_question(&waiting);
        let kind = ToolKind::Other;
        let request = TrustRequest::new("rules-trust", "permission_rules", kind, question);
        match ask_trust_question(&session, request).await {
            Ok(Decision::Allow | Decision::AllowAlways) => {
                permissions.decide_trust(&waiting, TrustAnswer::Trust)
            }
            Ok(Decision::Block) => permissions.decide_trust(&waiting, TrustAnswer::NotNow),
            Ok(Decision::BlockAlways) => permissions.decide_trust(&waiting, TrustAnswer::Refuse),
            Err(e) => {
                tracing::info!(session = session.id, %e, "the project's allow rules stay off")
            }
        }
    });
}

/// A project-trust question (its `.mcp.json`, hooks or permission rules) as the daemon asks it:
/// the call id's start, the tool name and kind it is asked under.
struct TrustRequest {
    id_prefix: &'static str,
    tool_name: &'static str,
    kind: ToolKind,
    question: TrustQuestion,
}

impl TrustRequest {
    fn new(
        id_prefix: &'static str,
        tool_name: &'static str,
        kind: ToolKind,
        question: TrustQuestion,
    ) -> TrustRequest {
        TrustRequest {
            id_prefix,
            tool_name,
            kind,
            question,
        }
    }
}

/// Asks a project-trust question as an `agent/beforeToolCall` outside any run, through the
/// agent client or the generic surface; the user's decision, or why there is none.
async fn ask_trust_question(
    session: &Arc<LiveSession>,
    trust: TrustRequest,
) -> Result<Decision, String> {
    let question = trust.question;
    let request = BeforeToolCallParams {
        session_id: session.id.clone(),
        run_id: String::new(),
        tool_call_id: format!("{}-{}", trust.id_prefix, crate::lsp::live_session::new_id()),
        tool_name: trust.tool_name.into(),
        args: question.args,
        kind: trust.kind,
        title: question.title,
        preview: Some(Preview::Command {
            command: question.listing,
            cwd: question.project,
        }),
        saves_unsaved_changes: false,
        sandbox: None,
        always_rules: None,
    };
    let never = CancellationToken::new();
    let config = &session.view.ctx.config;
    let answer = if config.approvals() {
        ask_agent_client(session, &request, &never).await
    } else if config.is_generic() {
        crate::lsp::generic_client::ask(&session.view.ctx, &request, &never).await
    } else {
        return Err("the client has no way to answer questions".into());
    };
    answer.map(|a| a.decision)
}

async fn ask_agent_client(
    session: &Arc<LiveSession>,
    request: &BeforeToolCallParams,
    cancel: &CancellationToken,
) -> Result<ClientAnswer, String> {
    let timeout = session.view.ctx.config.approval_timeout();
    let reply: Result<ClientAnswer, RequestError> = (session.view.ctx.out)
        .request(method::BEFORE_TOOL_CALL, request, timeout, cancel)
        .await;
    reply.map_err(|e| match e {
        RequestError::Cancelled => {
            "The run was aborted before the tool call was approved".to_owned()
        }
        RequestError::Timeout(t) => format!(
            "No approval within {}: the tool call was not run",
            duration_text(t)
        ),
        other => format!("Approval failed ({other}): the tool call was not run"),
    })
}

/// The `agent/beforeToolCall` params for a call: kind, a one-line title and a preview.
pub async fn approval_request(
    session: &Arc<LiveSession>,
    ctx: &BeforeToolCallContext,
) -> BeforeToolCallParams {
    let tool = &ctx.tool_call.name;
    let mcp = session.tools.mcp_info(tool);
    let kind = mcp.as_ref().map_or_else(
        || crate::tools::call_kind(tool, &ctx.args),
        |info| mcp_kind(info.kind),
    );
    let mut saves_unsaved_changes = false;
    let rename = rename_approval(session, ctx).await;
    let preview = match preview(&session.workspace, tool, &ctx.args).await {
        Some(ToolPreview::Diff {
            abs_path, patch, ..
        }) => {
            saves_unsaved_changes = saves_users_changes(session, &abs_path).await;
            Some(Preview::Diff {
                path: abs_path.display().to_string(),
                diff: patch,
                paths: None,
            })
        }
        Some(ToolPreview::Command { command, cwd, .. }) => Some(Preview::Command {
            command,
            cwd: cwd.display().to_string(),
        }),
        Some(ToolPreview::Fetch { url, host, local }) => Some(Preview::Fetch { url, host, local }),
        None => match rename.as_ref().and_then(|r| r.diff.clone()) {
            Some((path, paths, diff)) => {
                for path in &paths {
                    let path = std::path::Path::new(path);
                    saves_unsaved_changes |= saves_users_changes(session, path).await;
                }
                let paths = Some(paths);
                Some(Preview::Diff { path, diff, paths })
            }
            None => None,
        },
    };
    let sandbox = session.sandbox.describe_approval(tool, &ctx.args);
    let always_rules = (session.gate).always_rules(tool, &ctx.args, mcp.as_ref());
    BeforeToolCallParams {
        session_id: session.id.clone(),
        run_id: session.active_run().unwrap_or_default(),
        tool_call_id: ctx.tool_call.id.clone(),
        tool_name: tool.clone(),
        args: ctx.args.clone(),
        kind,
        title: match (
            &mcp,
            sandbox.as_ref().and_then(|s| s.justification.as_ref()),
        ) {
            (Some(info), _) => format!("{}: {}", info.title, ctx.args),
            (None, Some(why)) => format!(
                "Run outside the sandbox{}: {} (the sandbox refused it; the model says: {why})",
                match in_background(&ctx.args) {
                    true => ", in the background",
                    false => "",
                },
                ctx.args
                    .get("command")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            ),
            (None, None) => match rename {
                Some(rename) => rename.title,
                None => title(tool, kind, &ctx.args),
            },
        },
        preview,
        saves_unsaved_changes,
        sandbox,
        always_rules,
    }
}

/// An applying `lsp_rename`'s title and diff of every file (the plan kept for the call).
async fn rename_approval(
    session: &LiveSession,
    ctx: &BeforeToolCallContext,
) -> Option<crate::lsp::language::RenameApproval> {
    let (tool, args) = (&ctx.tool_call.name, &ctx.args);
    if !crate::tools::applies_rename(tool, args) {
        return None;
    }
    let lang = session.view.ctx.language.get(&session.id)?;
    let call = &ctx.tool_call.id;
    Some(crate::lsp::language::rename_approval(&lang, call, args).await)
}

/// Whether approving an edit of `path` would save the user's unsaved changes in its buffer.
async fn saves_users_changes(session: &LiveSession, path: &std::path::Path) -> bool {
    let config = &session.view.ctx.config;
    let Some(doc) = session.view.ctx.docs.get_path(path) else {
        return false;
    };
    config.save_documents()
        && saving::saves_unsaved_changes(config.save_after_edit(), &doc, path).await
}

fn mcp_kind(kind: &str) -> ToolKind {
    match kind {
        "read" => ToolKind::Read,
        "edit" => ToolKind::Edit,
        "delete" => ToolKind::Delete,
        _ => ToolKind::Other,
    }
}

/// A `bash` call that starts a background job.
fn in_background(args: &Value) -> bool {
    args.get("background").and_then(Value::as_bool) == Some(true)
}

fn title(tool: &str, kind: ToolKind, args: &Value) -> String {
    let arg = |name: &str| {
        args.get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match kind {
        ToolKind::Execute if tool == crate::tools::BASH_KILL => {
            format!("Stop background job {}", arg("jobId"))
        }
        ToolKind::Execute if in_background(args) => {
            format!("Run in the background: {}", arg("command"))
        }
        ToolKind::Execute => format!("Run: {}", arg("command")),
        ToolKind::Edit if tool == "write" => format!("Write {}", arg("path")),
        ToolKind::Edit => format!("Edit {}", arg("path")),
        ToolKind::Network => crate::tools::web::approval_title(tool, args),
        _ => format!("{tool} {}", args),
    }
}
