//! ACP's side of the approval gate (`core::approval`): the session's mode as its
//! policy, and `session/request_permission` with the four option kinds to ask. A call that may
//! run is marked `in_progress`; an `edit` or `write` keeps the file's text from before, so its
//! final update carries the whole-file diff.
//!
//! Every failure to get an answer (an error reply, a disconnect, a cancelled turn) blocks the
//! call with a reason saying why: a tool that must ask is never silently allowed.

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use agent_client_protocol_schema::v1::PermissionOptionKind as PermissionKind;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::acp::session::{AcpSession, Mode};
use crate::acp::updates;
use crate::agent::hooks::BeforeToolCallContext;
use crate::core::approval::{Answer, ApprovalPolicy, Decision, Policy, mcp_policy, policy_for};
use crate::core::permissions::{Proposals, Scope};
use crate::rpc::outgoing::RequestError;
use crate::tools::{self, Workspace};

/// After `session/cancel`, how long the client has to answer `cancelled` before we stop waiting.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// Tools that change nothing (and `bash_kill`, which only stops a job): allowed in plan mode.
fn is_read_only(session: &AcpSession, tool: &str) -> bool {
    match session.tools.mcp_info(tool) {
        Some(info) => info.kind == "read",
        None => tools::allowed_by_default(tool),
    }
}

/// ACP's standing policy: the session's mode. The web tools (kind `network`) change nothing in
/// the workspace, so plan mode asks about them rather than refusing; `acceptEdits` asks too, and
/// only `bypassPermissions` runs them unasked.
pub(super) fn policy(session: &AcpSession, tool: &str) -> Policy {
    let mode = session.mode();
    let network = tools::tool_kind(tool) == tools::ToolKind::Network;
    if mode == Mode::Plan && !is_read_only(session, tool) && !network {
        return Policy::Block(format!(
            "Tool \"{tool}\" was not run: the session is in plan mode, where nothing may be \
             changed. Read and search, then present a plan; the user leaves plan mode to carry \
             it out."
        ));
    }
    let policy = match session.tools.mcp_info(tool) {
        Some(info) => mcp_policy(&info, &Default::default(), tool),
        None => policy_for(&Default::default(), tool),
    };
    let allowed_by_mode = match mode {
        Mode::BypassPermissions => true,
        Mode::AcceptEdits => session.look().kind(tool) == acp::ToolKind::Edit,
        Mode::Default | Mode::Plan => false,
    };
    match policy == ApprovalPolicy::Allow || allowed_by_mode {
        true => Policy::Allow,
        false => Policy::Ask,
    }
}

/// An option's id, its kind, and the answer it gives (`scope` for an "always" one).
struct Choice {
    id: &'static str,
    kind: acp::PermissionOptionKind,
    decision: Decision,
    scope: Option<Scope>,
}

const fn choice(
    id: &'static str,
    kind: acp::PermissionOptionKind,
    decision: Decision,
    scope: Option<Scope>,
) -> Choice {
    Choice {
        id,
        kind,
        decision,
        scope,
    }
}

/// ACP has one "always" kind; the scopes are options of their own, each naming the rules it
/// saves. `allow_always` is the session's, as it always was.
const CHOICES: [Choice; 6] = [
    choice(
        "allow_once",
        PermissionKind::AllowOnce,
        Decision::Allow,
        None,
    ),
    choice(
        "allow_always",
        PermissionKind::AllowAlways,
        Decision::AllowAlways,
        Some(Scope::Session),
    ),
    choice(
        "allow_always_project",
        PermissionKind::AllowAlways,
        Decision::AllowAlways,
        Some(Scope::Project),
    ),
    choice(
        "allow_always_user",
        PermissionKind::AllowAlways,
        Decision::AllowAlways,
        Some(Scope::User),
    ),
    choice(
        "reject_once",
        PermissionKind::RejectOnce,
        Decision::Block,
        None,
    ),
    choice(
        "reject_always",
        PermissionKind::RejectAlways,
        Decision::BlockAlways,
        Some(Scope::Session),
    ),
];

/// The options offered for a call whose "always" answers would save `rules` (`None`: none can
/// be saved, so only the session's "always" options, which then remember nothing).
fn options(rules: Option<&Proposals>) -> Vec<acp::PermissionOption> {
    let named = |text: &str, scope: Scope| match rules {
        Some(rules) => format!("{text}: {}", rules.of(scope).join(", ")),
        None => text.to_owned(),
    };
    (CHOICES.iter())
        .filter(|c| rules.is_some() || !matches!(c.scope, Some(Scope::Project | Scope::User)))
        .map(|c| {
            let name = match (c.decision, c.scope) {
                (Decision::Allow, _) => "Allow".to_owned(),
                (Decision::Block, _) => "Reject".to_owned(),
                (Decision::AllowAlways, Some(Scope::Project)) => {
                    named("Always allow in this project", Scope::Project)
                }
                (Decision::AllowAlways, Some(Scope::User)) => {
                    named("Always allow, in every project", Scope::User)
                }
                (Decision::AllowAlways, _) => named("Always allow in this session", Scope::Session),
                (Decision::BlockAlways, _) => {
                    named("Always reject in this session", Scope::Session)
                }
            };
            acp::PermissionOption::new(c.id, name, c.kind)
        })
        .collect()
}

/// Asks the client; the tool call carries the diff an `edit` or `write` would make.
pub(super) async fn ask(
    session: &Arc<AcpSession>,
    ctx: &BeforeToolCallContext,
    cancel: &CancellationToken,
) -> Result<Answer, String> {
    let call = &ctx.tool_call;
    let look = session.look();
    let mut tool_call = look.as_update(&call.id, &call.name, &ctx.args);
    if let Some(diff) = proposed_diff(&*session.workspace, &call.name, &ctx.args).await {
        tool_call.fields.content = Some(vec![acp::ToolCallContent::Diff(diff)]);
    }
    // A fetch from this machine or its network says so: the internet cannot read there.
    // (From the URL alone: a preview of an edit would read the file through the client again.)
    if let Some(note) = local_fetch_note(&call.name, &ctx.args) {
        let note = updates::text_block(&note);
        tool_call.fields.content =
            Some(vec![acp::ToolCallContent::Content(acp::Content::new(note))]);
    }
    // The sandbox's word on this call: an escalation or an unavailable sandbox is named in the
    // title, so the user knows the command would run with their full rights.
    if let Some(sandbox) = session.sandbox.describe_approval(&call.name, &ctx.args) {
        let command = ctx
            .args
            .get("command")
            .and_then(|c| c.as_str())
            .unwrap_or_default();
        if let Some(why) = &sandbox.justification {
            tool_call.fields.title = Some(format!(
                "Run outside the sandbox: {command} (the sandbox refused it; the model says: {why})"
            ));
        } else if let Some(reason) = &sandbox.unavailable {
            tool_call.fields.title = Some(format!(
                "Run unsandboxed (sandbox unavailable: {reason}): {command}"
            ));
        }
        let note = crate::acp::updates::text_block(&sandbox.note());
        tool_call
            .fields
            .content
            .get_or_insert_with(Vec::new)
            .push(acp::ToolCallContent::Content(acp::Content::new(note)));
    }
    let mcp = session.tools.mcp_info(&call.name);
    let rules = (session.gate).always_rules(&call.name, &ctx.args, mcp.as_ref());
    let options = options(rules.as_ref());
    let never = CancellationToken::new();
    let reply = session.request_permission(tool_call, options, &never);
    tokio::pin!(reply);
    // The client answers `cancelled` after `session/cancel`; we wait for it a little.
    let reply = tokio::select! {
        reply = &mut reply => reply,
        () = cancel.cancelled() => tokio::time::timeout(CANCEL_GRACE, reply)
            .await
            .unwrap_or(Err(RequestError::Cancelled)),
    };
    let outcome = match reply {
        Ok(response) => response.outcome,
        Err(RequestError::Cancelled) => acp::RequestPermissionOutcome::Cancelled,
        Err(e) => {
            return Err(format!(
                "Permission request failed ({e}): the tool call was not run"
            ));
        }
    };
    match outcome {
        acp::RequestPermissionOutcome::Selected(selected) => CHOICES
            .iter()
            .find(|c| c.id == &*selected.option_id.0)
            .map(|c| Answer {
                scope: c.scope,
                ..Answer::of(c.decision)
            })
            .ok_or_else(|| {
                format!(
                    "The client chose an unknown permission option {:?}: the tool call was not run",
                    selected.option_id.0
                )
            }),
        _ => Err("The turn was cancelled before the tool call was approved".into()),
    }
}

/// What approving a `web_fetch` of a local host means; `None` for other calls and hosts.
fn local_fetch_note(tool: &str, args: &Value) -> Option<String> {
    let url = args.get("url").and_then(Value::as_str);
    let target = tools::web::Target::parse(url.filter(|_| tool == tools::web::WEB_FETCH)?).ok()?;
    target
        .is_local()
        .then(|| tools::web::fetch_note(target.url.as_str(), &target.host(), true))
}

/// The whole-file diff an `edit` or `write` would make, computed without changing anything.
async fn proposed_diff(ws: &dyn Workspace, tool: &str, args: &Value) -> Option<acp::Diff> {
    let (abs, old) = crate::acp::texts::current_text(ws, tool, args).await?;
    let new = if tool == "write" {
        tools::normalize_to_lf(args.get("content").and_then(Value::as_str)?)
    } else {
        let args = tools::prepare_edit_arguments(args.clone());
        let edits = tools::parse_edits(&args).ok()?;
        tools::apply_edits(old.as_deref()?, &edits, &abs.display().to_string()).ok()?
    };
    Some(updates::diff(&abs, old, new))
}
