//! `lsp_rename`: the editor's language servers' rename, proposed (the default: a read, run
//! unasked) or applied (`apply: true`: an edit, asked about with a diff of every file). Applied
//! edits go through the workspace's edit path per file (`workspace/applyEdit` on open buffers,
//! the disk otherwise), journaled, so `agent/runChanges` and `agent/revert` treat them as
//! `edit`'s. What the approval showed is what is applied: the plan made for it is kept by tool
//! call id; a file that changed since is refused before anything is applied.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::edits::{FileChange, document_edits, plan_file, stale};
use super::lookups::{malformed, position_help, with_details};
use super::position_args::{Spot, locate, schema_properties};
use super::request::{ask, no_server};
use super::results::Place;
use super::{Lang, Shared};
use crate::agent::tool::{AgentToolResult, ToolError, ToolRef};
use crate::tools::recorder::RecordedCall;
use crate::tools::workspace::check_abort;
use crate::tools::{Call, FileMutationQueue, ToolArgs, TypedTool, Unsaved, WriteRequest};

/// At most this many plans wait for their call (approvals asked and never answered).
const MAX_WAITING_PLANS: usize = 16;

pub fn tool(lang: Lang) -> ToolRef {
    Arc::new(TypedTool::<RenameArgs>::new(lang))
}

/// `lsp_rename`'s arguments.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RenameArgs {
    path: String,
    #[serde(deserialize_with = "super::position_args::required_count")]
    line: usize,
    #[serde(default, deserialize_with = "crate::tools::count_arg")]
    column: Option<usize>,
    #[serde(default)]
    symbol: Option<String>,
    new_name: String,
    #[serde(default)]
    apply: Option<bool>,
}

impl RenameArgs {
    fn spot(&self) -> Spot {
        Spot {
            path: self.path.clone(),
            line: self.line,
            column: self.column,
            symbol: self.symbol.clone(),
        }
    }
}

/// A rename as the servers proposed it.
pub struct RenamePlan {
    old_name: String,
    new_name: String,
    files: Vec<FileChange>,
}

impl RenamePlan {
    fn places(&self) -> impl Iterator<Item = &Place> {
        self.files.iter().flat_map(|f| f.places.iter())
    }

    /// `3 places in 2 files`.
    fn extent(&self) -> String {
        let places = self.places().count();
        let files = self.files.len();
        format!(
            "{places} place{} in {files} file{}",
            plural(places),
            plural(files)
        )
    }

    fn lines(&self) -> Vec<String> {
        self.places().map(Place::render).collect()
    }

    fn details(&self, applied: bool) -> Value {
        let places: Vec<&Place> = self.places().collect();
        let files: Vec<String> = (self.files.iter())
            .map(|f| f.abs.display().to_string())
            .collect();
        json!({"oldName": self.old_name, "newName": self.new_name, "applied": applied,
               "files": files, "places": places})
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// What asking for a rename gave: a plan, or the words for why there is none.
enum Planned {
    Plan(RenamePlan),
    Nothing(String),
}

/// Asks the servers for the rename and computes every file's new text.
async fn plan(
    lang: &Lang,
    tool_call_id: &str,
    args: &RenameArgs,
    cancel: &CancellationToken,
) -> Result<Planned, ToolError> {
    let new_name = args.new_name.trim();
    if new_name.is_empty() {
        return Err(ToolError::new("newName must not be empty"));
    }
    let target = locate(lang, &args.spot()).await?;
    let mut params = target.params();
    params["newName"] = json!(new_name);
    let answer = ask(lang, tool_call_id, "textDocument/rename", params, cancel).await?;
    let Some(result) = answer.result else {
        return Ok(Planned::Nothing(no_server("rename", &target.doc.shown)));
    };
    let docs = match document_edits(result) {
        Ok(docs) => docs.unwrap_or_default(),
        Err(why) if why == super::edits::RESOURCE_OPERATIONS => return Err(ToolError::new(why)),
        Err(why) => return Err(malformed(why)),
    };
    if docs.is_empty() {
        return Ok(Planned::Nothing(format!(
            "No rename at {}: the language servers propose no edits.",
            target.described()
        )));
    }
    let mut files = Vec::with_capacity(docs.len());
    for doc in docs {
        files.push(plan_file(lang, doc).await.map_err(ToolError::new)?);
    }
    files.sort_by(|a, b| a.shown.cmp(&b.shown));
    Ok(Planned::Plan(RenamePlan {
        old_name: (target.name.clone())
            .unwrap_or_else(|| format!("the symbol at {}", target.place())),
        new_name: new_name.to_owned(),
        files,
    }))
}

impl ToolArgs for RenameArgs {
    const NAME: &'static str = crate::tools::LSP_RENAME;
    const DESCRIPTION: &'static str = concat!(
        "Rename a symbol everywhere it is used, as the editor's Rename Symbol does. Without \
         apply it only shows the places that would change; call it again with apply: true to \
         apply the edits (the user approves them).",
        position_help!()
    );
    type State = Lang;

    fn parameters(_: &Lang) -> Value {
        rename_parameters()
    }

    async fn run(self, lang: Lang, call: Call) -> Result<AgentToolResult, ToolError> {
        run(self, lang, call).await
    }
}

fn rename_parameters() -> Value {
    let mut properties = schema_properties();
    properties.insert(
        "newName".into(),
        json!({"type": "string", "description": "The new name"}),
    );
    properties.insert(
        "apply".into(),
        json!({"type": "boolean", "description": "Apply the edits (default false: only show them)"}),
    );
    json!({"type": "object", "properties": properties, "required": ["path", "line", "newName"]})
}

/// Proposes the rename, or applies it (the plan its approval showed, when there was one).
async fn run(args: RenameArgs, lang: Lang, call: Call) -> Result<AgentToolResult, ToolError> {
    let apply = args.apply.unwrap_or(false);
    let approved = apply.then(|| lang.shared.take_plan(&call.id)).flatten();
    let asked = approved.is_some();
    let plan = match approved {
        Some(plan) => plan,
        None => match plan(&lang, &call.id, &args, &call.cancel).await? {
            Planned::Plan(plan) => Arc::new(plan),
            Planned::Nothing(text) => return Ok(AgentToolResult::text(text)),
        },
    };
    if !apply {
        let mut lines = vec![format!(
            "Renaming {} to {} would change {} (not applied; call lsp_rename again with \
             apply: true to apply):",
            plan.old_name,
            plan.new_name,
            plan.extent()
        )];
        lines.extend(plan.lines());
        return Ok(with_details(lines.join("\n"), plan.details(false)));
    }
    if let Some((file, why)) =
        (plan.files.iter()).find_map(|f| lang.rename_refusal(&f.abs, asked).map(|why| (f, why)))
    {
        return Err(ToolError::new(format!(
            "The rename was not applied: it would edit {}, and {why}.",
            file.shown
        )));
    }
    apply_plan(&lang, &call, &plan).await
}

/// Applies the plan, file by file, through the workspace: every file is checked first, and a
/// write that fails puts the files written before it back.
async fn apply_plan(
    lang: &Lang,
    call: &Call,
    plan: &RenamePlan,
) -> Result<AgentToolResult, ToolError> {
    let mut paths: Vec<_> = plan.files.iter().map(|f| f.abs.clone()).collect();
    paths.sort();
    let mut turns = Vec::with_capacity(paths.len());
    for path in &paths {
        match FileMutationQueue::global()
            .lock_or_cancel(path, &call.cancel)
            .await
        {
            Some(turn) => turns.push(turn),
            None => {
                check_abort(&call.cancel)?;
                return Err(ToolError::new("Operation aborted"));
            }
        }
    }
    for file in &plan.files {
        let now =
            (lang.ws.read(file.abs.clone()).await).map_err(|e| ToolError::new(e.to_string()))?;
        if !now.is(&file.before_id) {
            return Err(ToolError::new(stale(&file.shown)));
        }
    }
    let recorded = RecordedCall {
        tool_call_id: call.id.clone(),
        tool: crate::tools::LSP_RENAME.to_owned(),
        paths: plan.files.iter().map(|f| f.abs.clone()).collect(),
    };
    let befores = match &lang.recorder {
        Some(recorder) => recorder.before(&recorded).await,
        None => Vec::new(),
    };
    let written = write_all(lang, plan).await;
    if let Some(recorder) = &lang.recorder {
        recorder.after(&recorded, befores).await;
    }
    drop(turns);
    let unsaved = written?;
    let mut lines = vec![format!(
        "Renamed {} to {}: {}.",
        plan.old_name,
        plan.new_name,
        plan.extent()
    )];
    lines.extend(plan.lines());
    let mut text = lines.join("\n");
    for (shown, why) in unsaved {
        text.push_str(&format!("\n\n{}", why.note(&shown)));
    }
    Ok(with_details(text, plan.details(true)))
}

/// Writes every file; on a failure, writes back those already written. The files left unsaved
/// in the editor, and why.
async fn write_all(lang: &Lang, plan: &RenamePlan) -> Result<Vec<(String, Unsaved)>, ToolError> {
    let mut done = Vec::new();
    let mut unsaved = Vec::new();
    for file in &plan.files {
        let write = lang.ws.write(WriteRequest::new(
            file.abs.clone(),
            file.after.clone(),
            Some(file.before_id),
        ));
        match write.await {
            Ok(outcome) => {
                // The agent wrote it: a later `edit` of the file checks against this version.
                if let Some(tracker) = &lang.tracker {
                    tracker.record(&file.abs, outcome.id);
                }
                unsaved.extend(outcome.unsaved.map(|why| (file.shown.clone(), why)));
                done.push((file, outcome.id));
            }
            Err(e) => {
                for (file, id) in done.into_iter().rev() {
                    let back = lang.ws.write(WriteRequest::new(
                        file.abs.clone(),
                        file.before.clone(),
                        Some(id),
                    ));
                    match (back.await, &lang.tracker) {
                        (Ok(outcome), Some(tracker)) => tracker.record(&file.abs, outcome.id),
                        (Ok(_), None) => {}
                        (Err(e), _) => {
                            tracing::warn!(%e, "cannot put {} back after a failed rename", file.shown)
                        }
                    }
                }
                return Err(ToolError::new(format!(
                    "Could not apply the rename to {}: {e}. The files changed before it were put back.",
                    file.shown
                )));
            }
        }
    }
    Ok(unsaved)
}

impl Shared {
    fn take_plan(&self, tool_call_id: &str) -> Option<Arc<RenamePlan>> {
        self.plans.lock().ok()?.remove(tool_call_id)
    }

    fn keep_plan(&self, tool_call_id: &str, plan: Arc<RenamePlan>) {
        if let Ok(mut plans) = self.plans.lock() {
            if plans.len() >= MAX_WAITING_PLANS {
                plans.clear();
            }
            plans.insert(tool_call_id.to_owned(), plan);
        }
    }
}

/// What the approval of an applying `lsp_rename` shows: its title and, when the servers
/// proposed edits, the diff of every file.
pub struct RenameApproval {
    pub title: String,
    /// The first changed file, every changed file (absolute) and one diff covering them.
    pub diff: Option<(String, Vec<String>, String)>,
}

/// Plans the rename for its approval (kept for the call, which then applies exactly this).
pub async fn rename_approval(lang: &Lang, tool_call_id: &str, args: &Value) -> RenameApproval {
    let Ok(args) = serde_json::from_value::<RenameArgs>(args.clone()) else {
        return RenameApproval {
            title: "Rename (malformed arguments)".into(),
            diff: None,
        };
    };
    let what = (args.symbol.clone()).unwrap_or_else(|| format!("{}:{}", args.path, args.line));
    let never = CancellationToken::new();
    let plan = match plan(lang, tool_call_id, &args, &never).await {
        Ok(Planned::Plan(plan)) => plan,
        Ok(Planned::Nothing(_)) | Err(_) => {
            return RenameApproval {
                title: format!("Rename {what} to {}", args.new_name.trim()),
                diff: None,
            };
        }
    };
    let files = plan.files.len();
    let title = format!(
        "Rename {} to {} in {files} file{}",
        plan.old_name,
        plan.new_name,
        plural(files)
    );
    let paths: Vec<String> = (plan.files.iter())
        .map(|f| f.abs.display().to_string())
        .collect();
    let patch: String = plan.files.iter().map(FileChange::patch).collect();
    let first = paths.first().cloned().unwrap_or_default();
    lang.shared.keep_plan(tool_call_id, Arc::new(plan));
    RenameApproval {
        title,
        diff: Some((first, paths, patch)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_arguments_its_schema_declares() {
        crate::tools::assert_args_match_schema::<RenameArgs>(&rename_parameters());
    }
}
