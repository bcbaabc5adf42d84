//! Custom agents: Markdown files with YAML front matter (`name`, `description`, `tools`,
//! `model`), the body their system prompt, as Claude Code writes them. Read from the project's
//! `.agent-lsp/agents/*.md` and `.claude/agents/*.md` and the user's
//! `$XDG_CONFIG_HOME/agent-lsp/agents/*.md`; the first of a name wins in that order, and a
//! custom agent may replace a built-in one.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::agents::AgentDef;

/// The front matter; other keys (Claude Code's `color`, …) are ignored.
#[derive(Deserialize)]
struct FrontMatter {
    name: String,
    description: String,
    tools: Option<Tools>,
    model: Option<String>,
}

/// `tools: Read, Grep` (Claude Code's) or a YAML list.
#[derive(Deserialize)]
#[serde(untagged)]
enum Tools {
    Line(String),
    List(Vec<String>),
}

/// The folders custom agents are read from, first wins.
pub fn agent_dirs(cwd: &Path, config_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = vec![
        cwd.join(".agent-lsp").join("agents"),
        cwd.join(".claude").join("agents"),
    ];
    dirs.extend(config_dir.map(|d| d.join("agent-lsp").join("agents")));
    dirs
}

/// The built-in agents with the custom ones of `dirs` over them, and a warning for each file
/// that could not be read.
pub fn load(builtin: Vec<AgentDef>, dirs: &[PathBuf]) -> (Vec<AgentDef>, Vec<String>) {
    let mut custom: Vec<AgentDef> = Vec::new();
    let mut warnings = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = (entries.flatten().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        files.sort();
        for file in files {
            match read(&file) {
                Ok(agent) if custom.iter().any(|a| a.name == agent.name) => {}
                Ok(agent) => custom.push(agent),
                Err(e) => warnings.push(format!("agent file {}: {e}", file.display())),
            }
        }
    }
    let mut agents = builtin;
    agents.retain(|b| !custom.iter().any(|c| c.name == b.name));
    agents.extend(custom);
    (agents, warnings)
}

/// One agent file.
fn read(path: &Path) -> Result<AgentDef, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    parse(&text, path)
}

fn parse(text: &str, path: &Path) -> Result<AgentDef, String> {
    let (yaml, body) = split_front_matter(text)
        .ok_or("it does not start with YAML front matter between `---` lines")?;
    let front: FrontMatter = serde_norway::from_str(yaml).map_err(|e| e.to_string())?;
    let name = front.name.trim();
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || !name.chars().all(valid) {
        return Err(format!(
            "the name {name:?} is not letters, digits, `-` and `_`"
        ));
    }
    if body.trim().is_empty() {
        return Err("its system prompt (the text after the front matter) is empty".into());
    }
    let tools = front.tools.map(|tools| {
        let names: Vec<String> = match tools {
            Tools::Line(line) => line.split(',').map(str::to_owned).collect(),
            Tools::List(list) => list,
        };
        (names.iter().map(|n| tool_name(n.trim())))
            .filter(|n| !n.is_empty())
            .collect()
    });
    Ok(AgentDef {
        name: name.to_owned(),
        description: front.description.trim().to_owned(),
        tools,
        prompt: body.trim().to_owned(),
        model: front
            .model
            .map(|m| m.trim().to_owned())
            .filter(|m| m.contains('/')),
        source: Some(path.to_path_buf()),
    })
}

/// The front matter and the body, when the text starts with a `---` line and has a closing one.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    None
}

/// A tool as the session names it: Claude Code's names (`Read`, `Glob`, `Bash`, …) mapped to
/// ours, others (ours, `mcp__server__tool`) as written.
fn tool_name(name: &str) -> String {
    let ours = match name {
        "Read" => "read",
        "Write" => "write",
        "Edit" | "MultiEdit" => "edit",
        "Bash" => "bash",
        "Grep" => "grep",
        "Glob" => "find",
        "LS" => "ls",
        "WebFetch" => "web_fetch",
        "WebSearch" => "web_search",
        "BashOutput" => "bash_output",
        "KillBash" | "KillShell" => "bash_kill",
        other => other,
    };
    ours.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<AgentDef, String> {
        parse(text, Path::new("a.md"))
    }

    #[test]
    fn claude_codes_agent_files_are_read_with_their_tool_names_mapped() {
        let agent = parsed(
            "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Glob, Bash, mcp__gh__pr\n\
             model: sonnet\ncolor: red\n---\nYou review code.\n",
        )
        .unwrap();
        assert_eq!(agent.name, "reviewer");
        assert_eq!(agent.description, "Reviews code");
        assert_eq!(
            agent.tools.unwrap(),
            ["read", "find", "bash", "mcp__gh__pr"]
        );
        // Claude Code's model aliases mean the session's model here.
        assert_eq!(agent.model, None);
        assert_eq!(agent.prompt, "You review code.");
    }

    #[test]
    fn a_yaml_tool_list_and_a_provider_model_are_kept() {
        let agent = parsed(
            "---\nname: fast\ndescription: d\ntools: [read, grep]\nmodel: openai/gpt-5-mini\n---\nGo.",
        )
        .unwrap();
        assert_eq!(agent.tools.unwrap(), ["read", "grep"]);
        assert_eq!(agent.model.as_deref(), Some("openai/gpt-5-mini"));
    }

    #[test]
    fn broken_files_say_what_is_wrong() {
        let no_front = parsed("name: x\n").unwrap_err();
        assert!(no_front.contains("front matter"), "{no_front}");
        let unclosed = parsed("---\nname: x\n").unwrap_err();
        assert!(unclosed.contains("front matter"), "{unclosed}");
        let missing = parsed("---\nname: x\n---\nbody").unwrap_err();
        assert!(missing.contains("description"), "{missing}");
        let bad_name = parsed("---\nname: a b\ndescription: d\n---\nbody").unwrap_err();
        assert!(bad_name.contains("name"), "{bad_name}");
        let empty = parsed("---\nname: a\ndescription: d\n---\n\n").unwrap_err();
        assert!(empty.contains("empty"), "{empty}");
    }
}
