//! Permission rules (issue 35): the user's standing answers, in Claude Code's syntax, as one
//! layer of the approval gate (`core::approval`) for every front end.
//!
//! Rules come from the user's and the project's settings files (`files.rs`), Claude Code's
//! project file (read only), the front end (`initializationOptions.permissions`) and the
//! session's own "always" answers. A call matching a `deny` rule is refused unasked; one
//! matching an `ask` rule is asked about whatever the front end's policy says; one that
//! `allow` rules cover runs unasked (unless the sandbox must ask). deny > ask > allow, whatever
//! the source. The allow rules of project files apply only once the user trusted them
//! (`trust.rs`).
//!
//! An "always" answer saves the narrowest rule that covers the call (`narrow.rs`) for the
//! session, the project (`.agent-lsp/settings.local.json`) or the user (their `settings.json`).

pub mod files;
mod matcher;
pub mod narrow;
mod paths;
pub mod rule;
pub mod shell;
mod trust;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use files::{RuleLists, SaveError, Source};
pub use matcher::Subject;
pub use narrow::{Proposals, Scope};
pub use rule::Behavior;

use crate::mcp::tool::McpToolInfo;
use crate::mcp::trust::TrustQuestion;
use crate::model_registry::EnvSource;
use files::Watched;
use matcher::{allows, restricts};
use rule::{Bases, Rule, Target};
use trust::{RuleTrust, TrustFile};

/// What a front end gives a session's rules.
#[derive(Clone, Debug, Default)]
pub struct PermissionSpec {
    /// Read the settings files (off for the isolated sessions of the demo and tests).
    pub files: bool,
    /// The front end's own rules (`initializationOptions.permissions`).
    pub front_end: RuleLists,
}

impl PermissionSpec {
    /// The settings files, plus the front end's rules.
    pub fn with_files(front_end: RuleLists) -> Self {
        PermissionSpec {
            files: true,
            front_end,
        }
    }
}

/// One rule in force.
#[derive(Clone, Debug)]
struct Entry {
    rule: Rule,
    behavior: Behavior,
    source: Source,
    file: Option<PathBuf>,
    /// For a project file's allow rule: the user's answer about it.
    trust: Option<RuleTrust>,
}

impl Entry {
    fn applies(&self) -> bool {
        self.trust.is_none_or(|t| t == RuleTrust::Trusted)
    }

    fn trusted(&self) -> Option<bool> {
        self.trust.map(|t| t == RuleTrust::Trusted)
    }

    fn matched(&self) -> Matched {
        Matched {
            rule: self.rule.text.clone(),
            source: self.source,
            file: self.file.clone(),
        }
    }
}

/// A rule that decided a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matched {
    pub rule: String,
    pub source: Source,
    pub file: Option<PathBuf>,
}

impl Matched {
    /// `` `Bash(git push:*)` in /home/me/.config/agent-lsp/settings.json ``.
    pub fn describe(&self) -> String {
        let place = match (&self.file, self.source) {
            (Some(file), _) => format!("in {}", file.display()),
            (None, Source::InitializationOptions) => "in initializationOptions.permissions".into(),
            (None, _) => "an \"always\" answer of this session".into(),
        };
        format!("`{}` ({place})", self.rule)
    }
}

/// What the rules say of a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub behavior: Behavior,
    /// The rules that decided (for `allow`, all those that together cover the call).
    pub rules: Vec<Matched>,
}

impl Verdict {
    /// The words the model reads when a deny rule refuses `tool`.
    pub fn refusal(&self, tool: &str) -> String {
        match self.rules.first() {
            Some(rule) if rule.source == Source::Session => format!(
                "Tool \"{tool}\" was rejected for this session by the user (an \"always\" \
                 answer: `{}`): it stays blocked for this session",
                rule.rule
            ),
            Some(rule) => format!(
                "Tool \"{tool}\" was not run: the permission rule {} denies it. Only the user \
                 can change that rule.",
                rule.describe()
            ),
            None => format!("Tool \"{tool}\" was not run: a permission rule denies it."),
        }
    }
}

/// A project file's allow rule that waits for the user's trust.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Untrusted {
    pub rule: String,
    pub source: Source,
    pub file: PathBuf,
}

/// The user's answer about the project's allow rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrustAnswer {
    /// Apply them (remembered).
    Trust,
    /// Not in this session: asked again in the next one.
    NotNow,
    /// Never (remembered).
    Refuse,
}

/// `agent/getState`'s `permissions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionsState {
    pub rules: Vec<RuleState>,
    /// Files and rules that could not be read, and answers that could not be saved.
    pub errors: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleState {
    pub rule: String,
    pub behavior: Behavior,
    pub source: Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trusted: Option<bool>,
}

/// A settings file, its rules compiled.
struct Loaded {
    watched: Watched,
    entries: Vec<Entry>,
    errors: Vec<String>,
}

#[derive(Default)]
struct State {
    files: Vec<Loaded>,
    front_end: Vec<Entry>,
    session: Vec<Entry>,
    /// Project rules the user did not trust for this session only.
    not_now: HashSet<(Source, String)>,
    /// The front end's rules that could not be read, answers that could not be saved.
    errors: Vec<String>,
}

/// A session's permission rules.
pub struct Permissions {
    project: PathBuf,
    home: Option<PathBuf>,
    user_file: Option<PathBuf>,
    trust: TrustFile,
    state: Mutex<State>,
}

impl Permissions {
    /// The rules of a session in `project` (canonical); the warnings name what cannot be read.
    pub fn load(spec: &PermissionSpec, project: &Path, env: &EnvSource) -> (Self, Vec<String>) {
        let home = env.get_nonempty("HOME").map(PathBuf::from);
        let config_dir = env.config_dir();
        let mut state = State::default();
        if spec.files {
            state.files = files::locations(config_dir.as_deref(), project)
                .into_iter()
                .map(|(source, path)| Loaded {
                    watched: Watched::new(source, path),
                    entries: Vec::new(),
                    errors: Vec::new(),
                })
                .collect();
        }
        let permissions = Permissions {
            project: project.to_path_buf(),
            home,
            user_file: config_dir.map(|dir| dir.join("settings.json")),
            trust: TrustFile::new(env),
            state: Mutex::new(state),
        };
        let (entries, errors) = permissions.compile(
            &spec.front_end,
            Source::InitializationOptions,
            None,
            "initializationOptions.permissions",
        );
        let mut state = permissions.lock();
        state.front_end = entries;
        state.errors = errors;
        permissions.refresh(&mut state);
        let warnings = (state.errors.iter())
            .chain(state.files.iter().flat_map(|f| &f.errors))
            .cloned()
            .collect();
        drop(state);
        (permissions, warnings)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bases(&self) -> Bases<'_> {
        Bases {
            project: &self.project,
            home: self.home.as_deref(),
        }
    }

    /// The rules of `lists`; what cannot be read is named in the errors.
    fn compile(
        &self,
        lists: &RuleLists,
        source: Source,
        file: Option<&Path>,
        place: &str,
    ) -> (Vec<Entry>, Vec<String>) {
        let mut entries = Vec::new();
        let mut errors = Vec::new();
        for (behavior, text) in lists.entries() {
            match rule::parse(text, self.bases()) {
                Ok(rule) => entries.push(Entry {
                    rule,
                    behavior,
                    source,
                    file: file.map(Path::to_path_buf),
                    trust: None,
                }),
                Err(e) => errors.push(format!("{place}: permissions.{}: {e}", behavior.key())),
            }
        }
        (entries, errors)
    }

    /// Reads the settings files that changed since they were last read.
    fn refresh(&self, state: &mut State) {
        for index in 0..state.files.len() {
            if !state.files[index].watched.refresh() {
                continue;
            }
            let loaded = &state.files[index];
            let (source, path) = (loaded.watched.source, loaded.watched.path.clone());
            let (mut entries, errors) = match loaded.watched.lists() {
                Ok(lists) => self.compile(lists, source, Some(&path), &path.display().to_string()),
                Err(e) => (Vec::new(), vec![e.to_owned()]),
            };
            for e in &errors {
                tracing::warn!("{e}");
            }
            self.mark_trust(&mut entries);
            state.files[index].entries = entries;
            state.files[index].errors = errors;
        }
    }

    /// Looks up the user's trust of a project file's allow rules.
    fn mark_trust(&self, entries: &mut [Entry]) {
        let asked: Vec<usize> = (0..entries.len())
            .filter(|i| entries[*i].source.in_project() && entries[*i].behavior == Behavior::Allow)
            .collect();
        let keys: Vec<(Source, &str)> = (asked.iter())
            .map(|i| (entries[*i].source, entries[*i].rule.text.as_str()))
            .collect();
        let answers = self.trust.lookup(&self.project, &keys);
        for (i, answer) in asked.into_iter().zip(answers) {
            entries[i].trust = Some(answer);
        }
    }

    /// Every rule in force (and untrusted ones), user's files first, the session's last.
    fn entries(state: &State) -> impl Iterator<Item = &Entry> {
        (state.files.iter().flat_map(|f| &f.entries))
            .chain(&state.front_end)
            .chain(&state.session)
    }

    /// The call as the rules see it.
    pub fn subject(&self, tool: &str, args: &Value, mcp: Option<&McpToolInfo>) -> Subject {
        Subject::of(tool, args, mcp, &self.project)
    }

    /// What the rules say of the call: deny, then ask, then allow; `None` when no rule speaks.
    pub fn check(&self, subject: &Subject) -> Option<Verdict> {
        let mut state = self.lock();
        self.refresh(&mut state);
        for behavior in [Behavior::Deny, Behavior::Ask] {
            let found = Self::entries(&state)
                .find(|e| e.behavior == behavior && restricts(&e.rule, subject));
            if let Some(entry) = found {
                return Some(Verdict {
                    behavior,
                    rules: vec![entry.matched()],
                });
            }
        }
        let allowing: Vec<&Entry> = Self::entries(&state)
            .filter(|e| e.behavior == Behavior::Allow && e.applies())
            .collect();
        let rules: Vec<&Rule> = allowing.iter().map(|e| &e.rule).collect();
        let used = allows(&rules, subject)?;
        let rules = (used.into_iter())
            .filter_map(|rule| allowing.iter().find(|e| std::ptr::eq(&e.rule, rule)))
            .map(|e| e.matched())
            .collect();
        Some(Verdict {
            behavior: Behavior::Allow,
            rules,
        })
    }

    /// The rules an "always" answer about the call would save, per scope.
    pub fn proposals(&self, subject: &Subject) -> Option<Proposals> {
        let mut state = self.lock();
        self.refresh(&mut state);
        let bash_allows: Vec<&Rule> = Self::entries(&state)
            .filter(|e| e.behavior == Behavior::Allow && e.applies())
            .filter(|e| matches!(e.rule.target, Target::Bash(_)))
            .map(|e| &e.rule)
            .collect();
        let allowed = |command: &str| {
            let one = Subject {
                tool: "bash".into(),
                what: matcher::What::Command {
                    command: command.to_owned(),
                    script: shell::parse(command),
                },
            };
            allows(&bash_allows, &one).is_some()
        };
        narrow::propose(subject, &self.project, allowed)
    }

    /// Saves an "always" answer (`allow`: allow rules, else deny rules) for the call in `scope`;
    /// returns the rules saved. A file that cannot be written keeps the rules for the session
    /// and says why (also in [`Permissions::state`]'s errors).
    pub fn remember(
        &self,
        subject: &Subject,
        allow: bool,
        scope: Scope,
    ) -> Result<Vec<String>, SaveError> {
        let Some(proposals) = self.proposals(subject) else {
            return Ok(Vec::new());
        };
        let rules = proposals.of(scope).to_vec();
        let behavior = match allow {
            true => Behavior::Allow,
            false => Behavior::Deny,
        };
        let saved = match scope {
            Scope::Session => Ok(()),
            Scope::Project => self.save_for_project(behavior, &rules),
            Scope::User => match &self.user_file {
                Some(path) => files::add_rules(path, behavior, &rules).map(|_| ()),
                None => Err(SaveError::NoUserFolder),
            },
        };
        if scope == Scope::Session || saved.is_err() {
            let lists = match behavior {
                Behavior::Allow => RuleLists {
                    allow: rules.clone(),
                    ..RuleLists::default()
                },
                _ => RuleLists {
                    deny: rules.clone(),
                    ..RuleLists::default()
                },
            };
            let (entries, _) = self.compile(&lists, Source::Session, None, "session");
            let mut state = self.lock();
            state.session.extend(entries);
            if let Err(e) = &saved {
                let text = format!("an \"always\" answer was kept for this session only: {e}");
                tracing::warn!("{text}");
                state.errors.push(text);
            }
        }
        saved.map(|()| rules)
    }

    /// Adds the rules to `.agent-lsp/settings.local.json`, trusted: the user wrote them.
    fn save_for_project(&self, behavior: Behavior, rules: &[String]) -> Result<(), SaveError> {
        let path = self.project.join(".agent-lsp/settings.local.json");
        if behavior == Behavior::Allow {
            let keys: Vec<(Source, &str)> = (rules.iter())
                .map(|r| (Source::ProjectLocal, r.as_str()))
                .collect();
            if let Err(e) = self.trust.remember(&self.project, &keys, true) {
                tracing::warn!(%e, "cannot remember the trust of a saved rule");
            }
        }
        if files::add_rules(&path, behavior, rules)? {
            files::exclude_from_git(&self.project, &path);
        }
        Ok(())
    }

    /// The project files' allow rules that wait for the user's trust (neither answered nor
    /// put off for this session).
    pub fn untrusted(&self) -> Vec<Untrusted> {
        let mut state = self.lock();
        self.refresh(&mut state);
        let mut waiting = Vec::new();
        for entry in Self::entries(&state) {
            let key = (entry.source, entry.rule.text.clone());
            if entry.trust == Some(RuleTrust::Unknown)
                && !state.not_now.contains(&key)
                && let Some(file) = &entry.file
            {
                waiting.push(Untrusted {
                    rule: entry.rule.text.clone(),
                    source: entry.source,
                    file: file.clone(),
                });
            }
        }
        waiting
    }

    /// Applies the user's answer about `rules` (from [`Permissions::untrusted`]).
    pub fn decide_trust(&self, rules: &[Untrusted], answer: TrustAnswer) {
        let keys: Vec<(Source, &str)> = rules.iter().map(|r| (r.source, r.rule.as_str())).collect();
        let remembered = match answer {
            TrustAnswer::Trust => self.trust.remember(&self.project, &keys, true),
            TrustAnswer::Refuse => self.trust.remember(&self.project, &keys, false),
            TrustAnswer::NotNow => Ok(()),
        };
        if let Err(e) = remembered {
            tracing::warn!(%e, "cannot remember the answer about the project's permission rules");
        }
        let mut state = self.lock();
        if answer == TrustAnswer::NotNow {
            (state.not_now).extend(rules.iter().map(|r| (r.source, r.rule.clone())));
            return;
        }
        let now = match answer {
            TrustAnswer::Trust => RuleTrust::Trusted,
            _ => RuleTrust::Refused,
        };
        for entry in state.files.iter_mut().flat_map(|f| &mut f.entries) {
            let asked =
                (rules.iter()).any(|r| r.source == entry.source && r.rule == entry.rule.text);
            if asked && entry.trust.is_some() {
                entry.trust = Some(now);
            }
        }
    }

    /// The rules in force, where each came from (`agent/getState`'s `permissions`).
    pub fn state(&self) -> PermissionsState {
        let mut state = self.lock();
        self.refresh(&mut state);
        let rules = Self::entries(&state)
            .map(|e| RuleState {
                rule: e.rule.text.clone(),
                behavior: e.behavior,
                source: e.source,
                file: e.file.as_ref().map(|f| f.display().to_string()),
                trusted: e.trusted(),
            })
            .collect();
        let errors = (state.files.iter().flat_map(|f| &f.errors))
            .chain(&state.errors)
            .cloned()
            .collect();
        PermissionsState { rules, errors }
    }

    /// The project's folder.
    pub fn project(&self) -> &Path {
        &self.project
    }
}

impl Permissions {
    /// The question about the project's allow rules `rules`, for every front end: a title, a
    /// listing of the rules by file, and the arguments the daemon's `agent/beforeToolCall`
    /// carries.
    pub fn trust_question(&self, rules: &[Untrusted]) -> TrustQuestion {
        let project = self.project();
        let mut listing = String::new();
        let mut last: Option<&Path> = None;
        for rule in rules {
            if last != Some(rule.file.as_path()) {
                listing.push_str(&format!("{}:\n", rule.file.display()));
                last = Some(&rule.file);
            }
            listing.push_str(&format!("  allow {}\n", rule.rule));
        }
        let names: Vec<&str> = rules.iter().take(3).map(|r| r.rule.as_str()).collect();
        let more = match rules.len().saturating_sub(3) {
            0 => String::new(),
            n => format!("; and {n} more"),
        };
        TrustQuestion {
            project: project.display().to_string(),
            title: format!(
                "Apply the permission rules of {} that let the agent act without asking? {}{more}",
                project.display(),
                names.join(", ")
            ),
            listing,
            args: json!({
                "project": project.display().to_string(),
                "rules": rules.iter().map(|r| json!({
                    "rule": r.rule,
                    "source": r.source.key(),
                    "file": r.file.display().to_string(),
                })).collect::<Vec<_>>(),
            }),
        }
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
