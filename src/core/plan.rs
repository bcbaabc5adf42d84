//! The session's plan: the `todo_write` tool's checklist, which the user sees (the daemon's
//! `plan_update`, ACP's `plan` update, a line of `agent-lsp run`).
//!
//! Each `todo_write` replaces the whole plan, as Claude Code's todo list and Codex's
//! `update_plan` do: the model restates the list, so no item can drift out of step. The plan is
//! stored in the session file as a pi `custom` entry (pi's context ignores it) and a resumed or
//! forked session starts with the last one on its branch.

use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::agent::tool::{AgentToolResult, ToolError};
use crate::core::compaction::SharedRecord;
use crate::store::{EntryKind, SessionEntry, SessionFile};
use crate::tools::{Call, ToolArgs, TypedTool};

/// The tool's name (known to the approval policies as a tool that changes nothing on disk).
pub use crate::tools::TODO_WRITE;

/// The session file's `customType` of a plan entry.
pub const PLAN_ENTRY: &str = "agent-lsp.plan";

/// At most this many items; a longer list is refused (a plan is for the user to read).
const MAX_ITEMS: usize = 100;

const DESCRIPTION: &str = "Write the plan for the current task as a checklist the user sees. Use \
it for work of three or more steps, or when the user gives several tasks: write the steps first, \
then keep exactly one item in_progress while you work on it and mark each completed as soon as it \
is done, adding items you discover. Each call replaces the whole list, so always send every item. \
Skip it for a single, simple step.";

/// Where an item stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// One item of the plan (also its wire shape: `{content, status}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    pub content: String,
    pub status: TodoStatus,
}

/// The plan as it changed (the daemon's `plan_update` body).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanUpdate {
    pub todos: Vec<TodoItem>,
}

type Observer = Arc<dyn Fn(&PlanUpdate) + Send + Sync>;

/// A session's plan: the current items, the record they are stored in, and who is told.
pub struct Plan {
    todos: Mutex<Vec<TodoItem>>,
    record: SharedRecord,
    observer: Mutex<Option<Observer>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Plan {
    /// The plan of the session in `record`: the last one stored on its branch, else empty.
    pub fn new(record: SharedRecord) -> Arc<Plan> {
        let todos = stored_plan(&lock(&record)).unwrap_or_default();
        Arc::new(Plan {
            todos: Mutex::new(todos),
            record,
            observer: Mutex::new(None),
        })
    }

    /// The current items.
    pub fn todos(&self) -> Vec<TodoItem> {
        lock(&self.todos).clone()
    }

    /// Tells `observer` of every change (the front end's event).
    pub fn observe(&self, observer: impl Fn(&PlanUpdate) + Send + Sync + 'static) {
        *lock(&self.observer) = Some(Arc::new(observer));
    }

    /// The `todo_write` tool over this plan.
    pub fn tool(self: &Arc<Self>) -> TypedTool<TodoWriteArgs> {
        TypedTool::new(self.clone())
    }

    /// Replaces the plan, stores it and tells the observer. A plan that cannot be stored is
    /// still the session's (the user sees it; a resume would show the one before).
    fn replace(&self, todos: Vec<TodoItem>) {
        let entry = EntryKind::Custom {
            custom_type: PLAN_ENTRY.into(),
            data: Some(json!({ "todos": todos })),
        };
        if let Err(e) = lock(&self.record).append(entry) {
            tracing::warn!(%e, "cannot record the plan");
        }
        let update = PlanUpdate {
            todos: todos.clone(),
        };
        *lock(&self.todos) = todos;
        let observer = lock(&self.observer).clone();
        if let Some(observer) = observer {
            observer(&update);
        }
    }
}

/// The plan of the last plan entry on the file's branch.
fn stored_plan(record: &SessionFile) -> Option<Vec<TodoItem>> {
    record.branch_path().into_iter().rev().find_map(plan_of)
}

/// The items of a plan entry, if `entry` is one.
pub fn plan_of(entry: &SessionEntry) -> Option<Vec<TodoItem>> {
    match &entry.kind {
        EntryKind::Custom {
            custom_type,
            data: Some(data),
        } if custom_type == PLAN_ENTRY => serde_json::from_value::<PlanUpdate>(data.clone())
            .ok()
            .map(|p| p.todos),
        _ => None,
    }
}

/// A `todo_write` call's arguments.
#[derive(Deserialize)]
pub struct TodoWriteArgs {
    todos: Vec<TodoItem>,
}

impl ToolArgs for TodoWriteArgs {
    const NAME: &str = TODO_WRITE;
    const DESCRIPTION: &str = DESCRIPTION;
    type State = Arc<Plan>;
    /// Quick and harmless: a plan written as the run is aborted is still the model's last word.
    const ABORTS_BEFORE_START: bool = false;

    fn parameters(_: &Self::State) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The whole plan, in order",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "description": "The step, in a few words"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["content", "status"]
                    }
                }
            },
            "required": ["todos"]
        })
    }

    async fn run(self, plan: Arc<Plan>, _: Call) -> Result<AgentToolResult, ToolError> {
        let todos: Vec<TodoItem> = (self.todos.into_iter())
            .map(|item| TodoItem {
                content: item.content.trim().to_owned(),
                ..item
            })
            .collect();
        if todos.len() > MAX_ITEMS {
            return Err(ToolError::new(format!(
                "A plan holds at most {MAX_ITEMS} items; this one has {}. Group the steps.",
                todos.len()
            )));
        }
        if todos.iter().any(|item| item.content.is_empty()) {
            return Err(ToolError::new("Every plan item needs content."));
        }
        let text = checklist(&todos);
        let details = json!({ "todos": todos });
        plan.replace(todos);
        Ok(AgentToolResult {
            details: Some(details),
            ..AgentToolResult::text(text)
        })
    }
}

/// What the model reads back (and `agent-lsp run` prints): the plan as a checklist, with how
/// much is done.
pub fn checklist(todos: &[TodoItem]) -> String {
    if todos.is_empty() {
        return "The plan is cleared.".to_owned();
    }
    let done = todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    let mut text = format!("Plan updated ({done}/{} done):", todos.len());
    for item in todos {
        let mark = match item.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Completed => "[x]",
        };
        text.push_str(&format!("\n{mark} {}", item.content));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(content: &str, status: TodoStatus) -> TodoItem {
        TodoItem {
            content: content.into(),
            status,
        }
    }

    #[test]
    fn the_schema_declares_what_the_tool_reads() {
        let record: SharedRecord =
            Arc::new(Mutex::new(SessionFile::in_memory(&std::env::temp_dir())));
        let plan = Plan::new(record);
        crate::tools::assert_args_match_schema::<TodoWriteArgs>(&TodoWriteArgs::parameters(&plan));
    }

    #[test]
    fn the_checklist_counts_what_is_done() {
        let todos = [
            item("read the code", TodoStatus::Completed),
            item("fix the bug", TodoStatus::InProgress),
            item("add a test", TodoStatus::Pending),
        ];
        assert_eq!(
            checklist(&todos),
            "Plan updated (1/3 done):\n[x] read the code\n[>] fix the bug\n[ ] add a test"
        );
        assert_eq!(checklist(&[]), "The plan is cleared.");
    }

    #[test]
    fn a_stored_plan_is_the_last_on_the_branch() {
        let mut file = SessionFile::in_memory(&std::env::temp_dir());
        for content in ["first", "second"] {
            let todos = vec![item(content, TodoStatus::Pending)];
            let data = Some(json!({ "todos": todos }));
            let custom_type = PLAN_ENTRY.into();
            file.append(EntryKind::Custom { custom_type, data })
                .unwrap();
        }
        let stored = stored_plan(&file).unwrap();
        assert_eq!(stored, vec![item("second", TodoStatus::Pending)]);
    }
}
