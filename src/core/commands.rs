//! Slash commands: what a prompt starting with `/name args` becomes before it reaches the loop,
//! for every front end.
//!
//! As pi 1.6's `_preparePrompt`: `/skill:name args` becomes the skill's file in a `<skill>` block,
//! `/template args` the template's body with the arguments substituted (`parseCommandArgs`,
//! `substituteArgs`); any other text, unknown `/foo` included, goes to the model unchanged.
//! agent-lsp adds two built-ins that never reach the model, `/compact [instructions]` and
//! `/model [provider/id]`, and the MCP servers' prompts as `/server:prompt args`.

use std::sync::Arc;

use serde::Serialize;

use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::agent::message::{ContentBlock, TextContent};
use crate::compaction::{CompactionReason, CompactionResult};
use crate::core::compaction::{CompactError, Compactor};
use crate::core::controls::{LiveSettings, SessionControls, SwitchError};
use crate::core::mcp::SessionTools;
use crate::core::resources::{PromptTemplate, Resources, Skill, front_matter};
use crate::store::SessionFile;

/// One command as `agent/listCommands` shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandInfo {
    pub name: String,
    pub description: String,
    /// `builtin`, `prompt` (a template), `skill` or `mcp`.
    pub source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
}

/// A built-in command, run by the front end instead of a prompt.
#[derive(Clone, Debug, PartialEq)]
pub enum Builtin {
    /// `/compact [instructions]`.
    Compact { instructions: Option<String> },
    /// `/model`: report the model; `/model provider/id`: switch to it.
    Model { spec: Option<String> },
    /// `/mcp-trust`: ask again whether the project's `.mcp.json` servers may start (listed
    /// while some wait for it).
    McpTrust,
}

/// The name of [`Builtin::McpTrust`].
pub const MCP_TRUST: &str = "mcp-trust";

/// What a built-in command did.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "command", rename_all = "camelCase")]
pub enum BuiltinOutcome {
    /// `/model`: the session's model and thinking level (after the switch, if one was asked).
    Model(LiveSettings),
    /// `/compact`, awaited (`run`): pi's `CompactionResult`.
    #[serde(rename = "compact")]
    Compacted(Box<CompactionResult>),
    /// `/compact` in the daemon: started; its result comes with `compaction_end`.
    #[serde(rename = "compact")]
    CompactStarted,
    /// `/mcp-trust`: whether the user is asked (as `agent/mcpAskTrust` answers).
    McpTrust { asked: bool },
}

/// Why a built-in command failed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Switch(#[from] SwitchError),
    #[error(transparent)]
    Compact(#[from] CompactError),
    /// The command has no meaning in this front end (the text says what to do instead).
    #[error("{0}")]
    Unavailable(&'static str),
}

/// Runs `/model` on a session, for every front end (`/compact` is [`compact`], which awaits).
pub fn run_model(
    spec: Option<&str>,
    agent: &Agent,
    record: &mut SessionFile,
    controls: &SessionControls,
) -> Result<BuiltinOutcome, CommandError> {
    Ok(BuiltinOutcome::Model(match spec {
        None => controls.settings(),
        Some(spec) => controls.set_model(agent, record, spec)?,
    }))
}

/// `/compact [instructions]`: a manual compaction, as `agent/compact` (the compaction is
/// reserved when this is called, so prompts are refused from then on; it runs when awaited).
pub fn compact(
    compactor: &Arc<Compactor>,
    instructions: Option<String>,
    cancel: &CancellationToken,
) -> impl Future<Output = Result<CompactionResult, CompactError>> + Send + use<> {
    let compaction = compactor.compact(CompactionReason::Manual, instructions, cancel, false);
    async move { compaction.await.map(|done| done.result) }
}

/// What a prompt's text turned into.
#[derive(Clone, Debug, PartialEq)]
pub enum Expansion {
    /// The text for the loop: the prompt itself, or a template or skill expanded.
    Text(String),
    /// A built-in command.
    Builtin(Builtin),
    /// An MCP prompt to fetch (`prompts/get`) and send as the prompt.
    Mcp {
        server: String,
        prompt: String,
        args: Vec<String>,
    },
}

/// What a message becomes when its first block is text starting with `/name`: a template's or
/// skill's text is put in place of that block (`Expansion::Text`, with the text it replaced:
/// send `blocks` as they are now, as for a message that is no command); built-ins and MCP
/// prompts are the caller's.
pub fn expand_message(
    commands: &SessionCommands,
    tools: &SessionTools,
    blocks: &mut [ContentBlock],
) -> Expansion {
    let Some(ContentBlock::Text(first)) = blocks.first_mut() else {
        return Expansion::Text(String::new());
    };
    let mcp = &tools.mcp;
    match commands.expand(&first.text, |s, p| mcp.has_prompt(s, p)) {
        Expansion::Text(text) => Expansion::Text(std::mem::replace(&mut first.text, text)),
        command => command,
    }
}

/// The message with an MCP prompt's text (`prompts/get`) in place of its first block.
pub async fn fetch_mcp_prompt(
    tools: &SessionTools,
    (server, prompt, args): (&str, &str, &[String]),
    mut blocks: Vec<ContentBlock>,
) -> Result<Vec<ContentBlock>, String> {
    let text = tools.mcp.get_prompt(server, prompt, args).await?;
    let block = ContentBlock::Text(TextContent {
        text,
        text_signature: None,
    });
    match blocks.first_mut() {
        Some(first) => *first = block,
        None => blocks.push(block),
    }
    Ok(blocks)
}

/// The session's commands: built-ins, its templates and skills (fixed when the session starts),
/// and its MCP servers' prompts (which change as servers start and report changes).
#[derive(Clone, Default)]
pub struct SessionCommands {
    templates: Arc<Vec<PromptTemplate>>,
    skills: Arc<Vec<Skill>>,
}

impl SessionCommands {
    pub fn new(resources: &Resources) -> Self {
        SessionCommands {
            templates: Arc::new(resources.templates.clone()),
            skills: Arc::new(resources.skills.clone()),
        }
    }

    /// Built-ins, templates, skills, then the given MCP prompts (`server:prompt`).
    pub fn list(&self, mcp: impl IntoIterator<Item = CommandInfo>) -> Vec<CommandInfo> {
        let builtin = |name: &str, description: &str, hint: &str| CommandInfo {
            name: name.into(),
            description: description.into(),
            source: "builtin",
            argument_hint: Some(hint.into()),
        };
        let mut commands = vec![
            builtin(
                "compact",
                "Summarize the conversation so far to free context",
                "[instructions]",
            ),
            builtin(
                "model",
                "Show the model, or switch to another",
                "[provider/id]",
            ),
        ];
        commands.extend(self.templates.iter().map(|t| CommandInfo {
            name: t.name.clone(),
            description: t.description.clone(),
            source: "prompt",
            argument_hint: t.argument_hint.clone(),
        }));
        commands.extend(self.skills.iter().map(|s| CommandInfo {
            name: format!("skill:{}", s.name),
            description: s.description.clone(),
            source: "skill",
            argument_hint: None,
        }));
        commands.extend(mcp);
        commands
    }

    /// What `text` becomes. `is_mcp(server, prompt)` says whether a connected MCP server offers
    /// that prompt.
    pub fn expand(&self, text: &str, is_mcp: impl Fn(&str, &str) -> bool) -> Expansion {
        let Some((name, args)) = split_command(text) else {
            return Expansion::Text(text.to_string());
        };
        let rest = || Some(args.trim().to_string()).filter(|a| !a.is_empty());
        match name {
            "compact" => {
                return Expansion::Builtin(Builtin::Compact {
                    instructions: rest(),
                });
            }
            "model" => return Expansion::Builtin(Builtin::Model { spec: rest() }),
            MCP_TRUST => return Expansion::Builtin(Builtin::McpTrust),
            _ => {}
        }
        if let Some(skill) = name.strip_prefix("skill:") {
            return Expansion::Text(self.expand_skill(text, skill, args.trim()));
        }
        if let Some(template) = self.templates.iter().find(|t| t.name == name) {
            return Expansion::Text(substitute_args(&template.body, &parse_args(args)));
        }
        if let Some((server, prompt)) = name.split_once(':')
            && is_mcp(server, prompt)
        {
            return Expansion::Mcp {
                server: server.into(),
                prompt: prompt.into(),
                args: parse_args(args),
            };
        }
        Expansion::Text(text.to_string())
    }

    /// pi's `_expandSkillCommand`: the skill's body in a `<skill>` block, then the arguments.
    fn expand_skill(&self, text: &str, name: &str, args: &str) -> String {
        let Some(skill) = self.skills.iter().find(|s| s.name == name) else {
            return text.to_string();
        };
        let content = match std::fs::read_to_string(&skill.path) {
            Ok(content) => content,
            Err(e) => {
                tracing::warn!(path = %skill.path.display(), %e, "cannot read the skill");
                return text.to_string();
            }
        };
        let (_, body) = front_matter(&content);
        let base = skill.path.parent().unwrap_or(&skill.path).display();
        let block = format!(
            "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {base}.\n\n{}\n</skill>",
            skill.name,
            skill.path.display(),
            body.trim()
        );
        if args.is_empty() {
            block
        } else {
            format!("{block}\n\n{args}")
        }
    }
}

/// pi's `^/([^\s]+)(?:\s+([\s\S]*))?$`: the name and the rest, or `None` for plain text.
fn split_command(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (name, args) = rest.split_at(end);
    (!name.is_empty()).then_some((name, args.trim_start()))
}

/// pi's `parseCommandArgs`: words split on whitespace; `"…"` or `'…'` opening a word quote it
/// (`\"` inside is a quote); an unclosed quote is taken literally.
pub fn parse_args(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut args = Vec::new();
    let mut current = String::new();
    let mut has_token = false;
    let mut quote: Option<(char, usize, usize)> = None; // (quote, start index, current len then)
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some((q, _, _)) = quote {
            if c == '\\' && chars.get(i + 1) == Some(&q) {
                current.push(q);
                i += 1;
            } else if c == q {
                quote = None;
            } else {
                current.push(c);
            }
        } else if (c == '"' || c == '\'') && !has_token {
            quote = Some((c, i, current.len()));
            has_token = true;
        } else if c.is_whitespace() {
            if has_token {
                args.push(std::mem::take(&mut current));
                has_token = false;
            }
        } else {
            current.push(c);
            has_token = true;
        }
        if let Some((q, start, len)) = quote
            && i + 1 >= chars.len()
        {
            // Unclosed: back to the quote, which is then an ordinary character.
            current.truncate(len);
            current.push(q);
            quote = None;
            i = start;
        }
        i += 1;
    }
    if has_token {
        args.push(current);
    }
    args
}

/// pi's `substituteArgs`: `$1`…, `$@` and `$ARGUMENTS` (all arguments), `${N:-default}`,
/// `${@:N}` and `${@:N:L}` (slices).
pub fn substitute_args(template: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let arg = |n: usize| n.checked_sub(1).and_then(|i| args.get(i)).cloned();
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        match substitution(tail, &all, args, &arg) {
            Some((text, used)) => {
                out.push_str(&text);
                rest = &tail[used..];
            }
            None => {
                out.push('$');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// One `$…` form at the start of `tail` (after the `$`): its text and how much it used.
fn substitution(
    tail: &str,
    all: &str,
    args: &[String],
    arg: &impl Fn(usize) -> Option<String>,
) -> Option<(String, usize)> {
    if let Some(inner) = tail.strip_prefix('{') {
        let close = inner.find('}')?;
        let body = &inner[..close];
        let used = close + 2;
        if let Some((target, default)) = body.split_once(":-") {
            let value = match target {
                "@" | "ARGUMENTS" => Some(all.to_string()),
                n if is_digits(n) => arg(n.parse().ok()?),
                _ => return None,
            };
            return Some((
                value.filter(|v| !v.is_empty()).unwrap_or(default.into()),
                used,
            ));
        }
        let slice = body.strip_prefix("@:")?;
        let (start, len) = match slice.split_once(':') {
            Some((s, l)) if is_digits(s) && is_digits(l) => (s, Some(l.parse::<usize>().ok()?)),
            None if is_digits(slice) => (slice, None),
            _ => return None,
        };
        let start = start
            .parse::<usize>()
            .ok()?
            .saturating_sub(1)
            .min(args.len());
        let end = len.map_or(args.len(), |l| (start + l).min(args.len()));
        return Some((args[start..end].join(" "), used));
    }
    for word in ["ARGUMENTS", "@"] {
        if tail.starts_with(word) {
            return Some((all.to_string(), word.len()));
        }
    }
    let digits = tail.len() - tail.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let n: usize = tail[..digits].parse().unwrap_or(0);
    Some((arg(n).unwrap_or_default(), digits))
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_digit())
}

/// Built-ins, templates, skills and the MCP servers' prompts of a session, for every front end.
pub fn list_commands(commands: &SessionCommands, tools: &SessionTools) -> Vec<CommandInfo> {
    let mcp = tools.mcp.prompts().into_iter().map(|(server, prompt)| {
        let hint = (prompt.arguments.unwrap_or_default().iter())
            .map(|a| match a.required {
                Some(true) => format!("<{}>", a.name),
                _ => format!("[{}]", a.name),
            })
            .collect::<Vec<_>>()
            .join(" ");
        CommandInfo {
            name: format!("{server}:{}", prompt.name),
            description: (prompt.description.or(prompt.title)).unwrap_or_default(),
            source: "mcp",
            argument_hint: Some(hint).filter(|h| !h.is_empty()),
        }
    });
    let mut listed = commands.list(mcp);
    if !tools.untrusted().is_empty() {
        // Offered only while it has something to do; `commands_update` follows the change.
        let trust = CommandInfo {
            name: MCP_TRUST.into(),
            description: "Ask again whether this project's .mcp.json servers may start".into(),
            source: "builtin",
            argument_hint: None,
        };
        listed.insert(2, trust);
    }
    listed
}

/// Calls `changed` whenever the MCP servers' prompts change the session's commands (`list`),
/// until the session is dropped; nothing to follow without MCP servers.
pub fn follow_commands<S: Send + Sync + 'static>(
    session: &Arc<S>,
    tools: &SessionTools,
    list: fn(&S) -> Vec<CommandInfo>,
    changed: fn(&S, Vec<CommandInfo>),
) {
    if tools.mcp.is_empty() {
        return;
    }
    let weak = Arc::downgrade(session);
    let mut watch = tools.mcp.watch();
    let mut last = list(session);
    tokio::spawn(async move {
        loop {
            watch.changed().await;
            let Some(session) = weak.upgrade() else {
                return;
            };
            let now = list(&session);
            if now != last {
                changed(&session, now.clone());
                last = now;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn args_split_as_pi_splits_them() {
        assert_eq!(parse_args("a  b\tc"), strings(&["a", "b", "c"]));
        assert_eq!(parse_args("\"a b\" 'c d' e"), strings(&["a b", "c d", "e"]));
        assert_eq!(parse_args("\"say \\\"hi\\\"\""), strings(&["say \"hi\""]));
        assert_eq!(parse_args("x\"y z"), strings(&["x\"y", "z"]));
        assert_eq!(parse_args("\"open end"), strings(&["\"open", "end"]));
        assert!(parse_args("   ").is_empty());
    }

    #[test]
    fn substitution_covers_every_form() {
        let args = strings(&["one", "two", "three"]);
        assert_eq!(substitute_args("$1-$2-$4.", &args), "one-two-.");
        assert_eq!(
            substitute_args("[$@] [$ARGUMENTS]", &args),
            "[one two three] [one two three]"
        );
        assert_eq!(substitute_args("${4:-none} ${1:-x}", &args), "none one");
        assert_eq!(
            substitute_args("${@:2} | ${@:1:2}", &args),
            "two three | one two"
        );
        assert_eq!(substitute_args("cost $ and ${x}", &args), "cost $ and ${x}");
        assert_eq!(substitute_args("${@:-all}", &[]), "all");
    }

    #[test]
    fn builtins_templates_and_plain_text() {
        let resources = Resources {
            templates: vec![PromptTemplate {
                name: "review".into(),
                description: "Review".into(),
                argument_hint: None,
                body: "Review $1 for $@".into(),
                path: "/p/review.md".into(),
            }],
            ..Resources::default()
        };
        let commands = SessionCommands::new(&resources);
        let none = |_: &str, _: &str| false;
        assert_eq!(
            commands.expand("/review a.rs b", none),
            Expansion::Text("Review a.rs for a.rs b".into())
        );
        assert_eq!(
            commands.expand("/compact  keep the API ", none),
            Expansion::Builtin(Builtin::Compact {
                instructions: Some("keep the API".into())
            })
        );
        assert_eq!(
            commands.expand("/model", none),
            Expansion::Builtin(Builtin::Model { spec: None })
        );
        assert_eq!(
            commands.expand("/unknown x", none),
            Expansion::Text("/unknown x".into())
        );
        assert_eq!(
            commands.expand(" /review", none),
            Expansion::Text(" /review".into())
        );
        assert_eq!(
            commands.expand("/srv:greet Ann", |s, p| s == "srv" && p == "greet"),
            Expansion::Mcp {
                server: "srv".into(),
                prompt: "greet".into(),
                args: strings(&["Ann"])
            }
        );
    }
}
