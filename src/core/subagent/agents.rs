//! The agents a `task` call can run: the built-in `explore` (read-only) and `general`, and the
//! custom ones of `custom.rs`.

/// An agent a `task` call may run.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentDef {
    pub name: String,
    /// What the parent model reads about when to use it.
    pub description: String,
    /// The tools it may use, by name; `None`: every tool of the session a child may have.
    pub tools: Option<Vec<String>>,
    /// Its system prompt (the working directory and the date are added).
    pub prompt: String,
    /// Its model (`provider/id`); `None`: the session's.
    pub model: Option<String>,
    /// The file it was read from (`None`: built in).
    pub source: Option<std::path::PathBuf>,
}

/// Tools no child gets: `task` (children do not nest), `todo_write` (the plan is the parent's)
/// and `ask_user` (a child's question would reach the user out of the parent's context; the
/// child reports what it needs instead).
pub const PARENT_ONLY: [&str; 3] = [crate::tools::TASK, "todo_write", "ask_user"];

const EXPLORE_PROMPT: &str = "You are an exploration agent working for another agent in the \
user's project. Find what you were asked to find by reading and searching (`read`, `grep`, \
`find`, `ls`, and the `lsp_*` lookups when you have them: definitions, references and symbols \
as the editor's language servers see the code); you cannot change anything. Be thorough but \
quick: search broadly first, then read what matters. Your final answer is all the other agent \
sees of your work: make it a concise, complete report of what you found, with file paths and \
line numbers.";

const GENERAL_PROMPT: &str = "You are a general-purpose agent working for another agent in the \
user's project. Carry out the task you were given with your tools: read before you change, make \
focused changes, verify them when you can. If a tool is refused, do not retry it; continue with \
what you can do. Your final answer is all the other agent sees of your work: say concisely what \
you did and found, with file paths, and anything left undone.";

/// The built-in agents, `general` first (the default).
pub fn builtin_agents() -> Vec<AgentDef> {
    vec![
        AgentDef {
            name: "general".into(),
            description: "A general-purpose agent with the session's tools: research, \
                          multi-step changes, anything that can be done on its own."
                .into(),
            tools: None,
            prompt: GENERAL_PROMPT.into(),
            model: None,
            source: None,
        },
        AgentDef {
            name: "explore".into(),
            description: "A fast read-only agent for finding code and answering questions \
                          about the codebase (read, grep, find, ls, and the editor's \
                          diagnostics and language servers where it has them); it changes \
                          nothing."
                .into(),
            tools: Some(explore_tools()),
            prompt: EXPLORE_PROMPT.into(),
            model: None,
            source: None,
        },
    ]
}

/// `explore`'s tools: reading and searching, plus the editor's diagnostics and its language
/// servers' lookups where the session has them (a daemon session whose editor offers them);
/// never `lsp_rename`, which can apply edits.
fn explore_tools() -> Vec<String> {
    let lookups = (crate::tools::LSP_TOOLS.into_iter()).filter(|t| *t != crate::tools::LSP_RENAME);
    (["read", "grep", "find", "ls", crate::tools::DIAGNOSTICS].into_iter())
        .chain(lookups)
        .map(String::from)
        .collect()
}

impl AgentDef {
    /// Whether the agent may use the tool `name`.
    pub fn allows(&self, name: &str) -> bool {
        if PARENT_ONLY.contains(&name) {
            return false;
        }
        match &self.tools {
            Some(tools) => tools.iter().any(|t| t == name),
            None => true,
        }
    }
}
