//! What the user and the project put on disk for a session, found as pi 1.6 finds it
//! (`loadProjectContextFiles`, `loadSkills`, `loadPromptTemplates`): context files (`AGENTS.md`,
//! `CLAUDE.md`), skills (`SKILL.md`) and prompt templates (Markdown files).
//!
//! Folders (`G` is the config directory, `$XDG_CONFIG_HOME/agent-lsp`; pi's is `~/.pi/agent`, its
//! project folder `.pi`, ours `.agent-lsp`):
//! - context files: `G/AGENTS.md`, then one file of every directory from `/` down to the cwd;
//! - skills: `<cwd>/.agent-lsp/skills`, `.agents/skills` of the cwd and its parents up to the git
//!   root, `G/skills`, `~/.agents/skills` (the first skill of a name wins, as in pi);
//! - prompt templates: `<cwd>/.agent-lsp/prompts`, `<cwd>/.claude/commands`, `G/prompts`.
//!
//! Unreadable files are skipped with a log line: a broken file never stops a session.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::model_registry::EnvSource;

/// The project folder (pi's `.pi`).
pub const PROJECT_DIR: &str = ".agent-lsp";

/// pi's candidates, in its order; the first one present in a directory is that directory's file.
const CONTEXT_NAMES: [&str; 5] = [
    "AGENTS.override.md",
    "AGENTS.md",
    "AGENTS.MD",
    "CLAUDE.md",
    "CLAUDE.MD",
];

/// A loaded `AGENTS.md` (or `CLAUDE.md`).
#[derive(Clone, Debug, PartialEq)]
pub struct ContextFile {
    pub path: PathBuf,
    pub content: String,
}

/// A skill: its name and description go into the system prompt, the model reads the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
    /// `disable-model-invocation: true`: only `/skill:name` uses it.
    pub hidden: bool,
}

/// A prompt template: `/name args` expands to its body with the arguments substituted.
#[derive(Clone, Debug, PartialEq)]
pub struct PromptTemplate {
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    pub body: String,
    pub path: PathBuf,
}

/// Everything found for one session.
#[derive(Clone, Debug, Default)]
pub struct Resources {
    pub context_files: Vec<ContextFile>,
    pub skills: Vec<Skill>,
    pub templates: Vec<PromptTemplate>,
}

/// Loads the session's resources; `context_files: false` leaves the context files out
/// (`--no-context-files`).
pub fn load(cwd: &Path, env: &EnvSource, context_files: bool) -> Resources {
    let global = env.config_dir();
    Resources {
        context_files: if context_files {
            load_context_files(cwd, global.as_deref())
        } else {
            Vec::new()
        },
        skills: load_skills(cwd, global.as_deref(), env.get_nonempty("HOME")),
        templates: load_templates(cwd, global.as_deref()),
    }
}

fn read(path: &Path) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Some(text.strip_prefix('\u{feff}').unwrap_or(&text).to_string()),
        Err(e) => {
            tracing::warn!(path = %path.display(), %e, "cannot read");
            None
        }
    }
}

fn context_file_in(dir: &Path) -> Option<ContextFile> {
    CONTEXT_NAMES.iter().find_map(|name| {
        let path = dir.join(name);
        let content = path.is_file().then(|| read(&path))??;
        Some(ContextFile { path, content })
    })
}

/// The global file, then the files from the filesystem root down to `cwd`.
fn load_context_files(cwd: &Path, global: Option<&Path>) -> Vec<ContextFile> {
    let mut files: Vec<ContextFile> = global.and_then(context_file_in).into_iter().collect();
    let mut ancestors: Vec<ContextFile> = cwd
        .ancestors()
        .filter_map(context_file_in)
        .filter(|f| files.iter().all(|g| g.path != f.path))
        .collect();
    ancestors.reverse();
    files.extend(ancestors);
    files
}

fn load_skills(cwd: &Path, global: Option<&Path>, home: Option<&str>) -> Vec<Skill> {
    let user_agents = home.map(|h| Path::new(h).join(".agents").join("skills"));
    let mut dirs = vec![cwd.join(PROJECT_DIR).join("skills")];
    // pi: `.agents/skills` of the cwd and its parents, up to the git root.
    for dir in cwd.ancestors() {
        let candidate = dir.join(".agents").join("skills");
        if Some(&candidate) != user_agents.as_ref() {
            dirs.push(candidate);
        }
        if dir.join(".git").exists() {
            break;
        }
    }
    dirs.extend(global.map(|g| g.join("skills")));
    dirs.extend(user_agents);
    let mut skills: Vec<Skill> = Vec::new();
    let mut seen = HashSet::new();
    for dir in dirs {
        for skill in skills_in(&dir, true) {
            let real = std::fs::canonicalize(&skill.path).unwrap_or_else(|_| skill.path.clone());
            if seen.insert(real) && skills.iter().all(|s| s.name != skill.name) {
                skills.push(skill);
            }
        }
    }
    skills
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
    paths.sort();
    paths
}

/// pi's `loadSkillsFromDirInternal`: a directory with a `SKILL.md` is one skill; otherwise its
/// subdirectories are searched (not hidden ones, not `node_modules`), and at the top level
/// every `.md` file with a description is a skill too.
fn skills_in(dir: &Path, top: bool) -> Vec<Skill> {
    let declared = dir.join("SKILL.md");
    if declared.is_file() {
        return skill_file(&declared).into_iter().collect();
    }
    let mut skills = Vec::new();
    for path in sorted_entries(dir) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            skills.extend(skills_in(&path, false));
        } else if top && name.ends_with(".md") && path.is_file() {
            skills.extend(skill_file(&path));
        }
    }
    skills
}

fn skill_file(path: &Path) -> Option<Skill> {
    let (meta, _) = front_matter(&read(path)?);
    let description = meta.get("description").filter(|d| !d.trim().is_empty())?;
    let dir_name = path.parent().and_then(Path::file_name);
    let name = (meta.get("name").filter(|n| !n.is_empty()).cloned())
        .or_else(|| dir_name.map(|n| n.to_string_lossy().into_owned()))?;
    Some(Skill {
        name,
        description: description.clone(),
        path: path.to_path_buf(),
        hidden: meta.get("disable-model-invocation").map(String::as_str) == Some("true"),
    })
}

fn load_templates(cwd: &Path, global: Option<&Path>) -> Vec<PromptTemplate> {
    let mut dirs = vec![
        cwd.join(PROJECT_DIR).join("prompts"),
        cwd.join(".claude").join("commands"),
    ];
    dirs.extend(global.map(|g| g.join("prompts")));
    dirs.iter()
        .flat_map(|dir| sorted_entries(dir))
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .filter_map(|p| template_file(&p))
        .collect()
}

/// pi's `loadTemplateFromFile`: the name is the file's, the description the front matter's or
/// the body's first line (60 characters).
fn template_file(path: &Path) -> Option<PromptTemplate> {
    let (meta, body) = front_matter(&read(path)?);
    let name = path.file_stem()?.to_string_lossy().into_owned();
    let description = match meta.get("description").filter(|d| !d.is_empty()) {
        Some(d) => d.clone(),
        None => first_line_summary(&body),
    };
    Some(PromptTemplate {
        name,
        description,
        argument_hint: meta.get("argument-hint").cloned(),
        body,
        path: path.to_path_buf(),
    })
}

fn first_line_summary(body: &str) -> String {
    let Some(line) = body.lines().find(|l| !l.trim().is_empty()) else {
        return String::new();
    };
    let mut summary: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        summary.push_str("...");
    }
    summary
}

/// The scalar fields of a YAML front matter (`key: value`, quoted or plain, `>`/`|` blocks) and
/// the body after it, trimmed as pi trims it. Nested YAML is not needed by any field we read.
pub fn front_matter(text: &str) -> (std::collections::HashMap<String, String>, String) {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut meta = std::collections::HashMap::new();
    let Some(end) = text
        .starts_with("---")
        .then(|| text[3..].find("\n---"))
        .flatten()
    else {
        return (meta, text);
    };
    let yaml = text.get(4..end + 3).unwrap_or("");
    let body = text.get(end + 7..).unwrap_or("").trim().to_string();
    let lines: Vec<&str> = yaml.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let Some((key, value)) = line
            .split_once(':')
            .filter(|_| !line.starts_with([' ', '\t']))
        else {
            continue;
        };
        let value = value.trim();
        let value = if value.starts_with('>') || value.starts_with('|') {
            let mut block = Vec::new();
            while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].is_empty()) {
                block.push(lines[i].trim());
                i += 1;
            }
            block.join(if value.starts_with('>') { " " } else { "\n" })
        } else {
            unquote(value)
        };
        meta.insert(key.trim().to_string(), value.trim().to_string());
    }
    (meta, body)
}

fn unquote(value: &str) -> String {
    for quote in ['"', '\''] {
        if let Some(inner) = (value.strip_prefix(quote)).and_then(|v| v.strip_suffix(quote)) {
            return inner.to_string();
        }
    }
    value.to_string()
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The system prompt's sections for the context files and the skills, in pi's words and order
/// (`renderProjectContext`, `formatSkillsForPrompt`, each in its `<section>` tag).
pub fn prompt_sections(resources: &Resources) -> String {
    let mut out = String::new();
    if !resources.context_files.is_empty() {
        let files = resources.context_files.iter().map(|f| {
            format!(
                "<project_instructions path=\"{}\">\n{}\n</project_instructions>",
                f.path.display(),
                f.content
            )
        });
        let body = std::iter::once("Project-specific instructions and guidelines:".to_string())
            .chain(files)
            .collect::<Vec<_>>()
            .join("\n\n");
        out.push_str(&format!(
            "\n\n<project_context>\n{body}\n</project_context>"
        ));
    }
    let visible: Vec<&Skill> = resources.skills.iter().filter(|s| !s.hidden).collect();
    if !visible.is_empty() {
        let mut lines = vec![
            "The following skills provide specialized instructions for specific tasks.".to_string(),
            "Use the read tool to load a skill's file when the task matches its description."
                .into(),
            "Resolve relative paths against the skill's directory (parent of SKILL.md). Use \
             absolute paths in tool calls."
                .into(),
            String::new(),
            "<available_skills>".into(),
        ];
        for skill in visible {
            lines.push("  <skill>".into());
            lines.push(format!("    <name>{}</name>", escape_xml(&skill.name)));
            let description = escape_xml(&skill.description);
            lines.push(format!("    <description>{description}</description>"));
            let location = escape_xml(&skill.path.display().to_string());
            lines.push(format!("    <location>{location}</location>"));
            lines.push("  </skill>".into());
        }
        lines.push("</available_skills>".into());
        out.push_str(&format!("\n\n<skills>\n{}\n</skills>", lines.join("\n")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_reads_scalars_quotes_and_blocks() {
        let text = "---\nname: \"x\"\ndescription: >\n  two\n  lines\nargument-hint: '<file>'\n---\n\nBody $1\n";
        let (meta, body) = front_matter(text);
        assert_eq!(meta["name"], "x");
        assert_eq!(meta["description"], "two lines");
        assert_eq!(meta["argument-hint"], "<file>");
        assert_eq!(body, "Body $1");
        let (meta, body) = front_matter("no front matter\n");
        assert!(meta.is_empty());
        assert_eq!(body, "no front matter\n");
    }

    #[test]
    fn summary_is_the_first_line_cut_at_sixty() {
        assert_eq!(first_line_summary("\n\nshort\nmore"), "short");
        let long = "a".repeat(61);
        assert_eq!(first_line_summary(&long), format!("{}...", "a".repeat(60)));
    }
}
