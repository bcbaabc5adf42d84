use super::*;
use serde_json::json;

struct Setup {
    _dir: tempfile::TempDir,
    project: PathBuf,
    config: PathBuf,
    env: EnvSource,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let project = root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let env = EnvSource::from_pairs([
        ("XDG_CONFIG_HOME", root.join("config").display().to_string()),
        ("XDG_STATE_HOME", root.join("state").display().to_string()),
        ("HOME", root.join("home").display().to_string()),
    ]);
    Setup {
        config: root.join("config/agent-lsp/settings.json"),
        project,
        env,
        _dir: dir,
    }
}

fn write(path: &Path, value: Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, value.to_string()).unwrap();
}

fn bash(p: &Permissions, command: &str) -> Option<Behavior> {
    let subject = p.subject("bash", &json!({ "command": command }), None);
    p.check(&subject).map(|v| v.behavior)
}

#[test]
fn deny_beats_ask_beats_allow_whatever_the_source() {
    let s = setup();
    write(
        &s.config,
        json!({"permissions": {"allow": ["Bash(git:*)"], "deny": ["Bash(git push --force:*)"]}}),
    );
    let front_end = RuleLists {
        ask: vec!["Bash(git push:*)".into()],
        ..RuleLists::default()
    };
    let (p, warnings) =
        Permissions::load(&PermissionSpec::with_files(front_end), &s.project, &s.env);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(bash(&p, "git status"), Some(Behavior::Allow));
    assert_eq!(bash(&p, "git push origin"), Some(Behavior::Ask));
    assert_eq!(bash(&p, "git push --force"), Some(Behavior::Deny));
    assert_eq!(
        bash(&p, "git status && git push --force"),
        Some(Behavior::Deny)
    );
    assert_eq!(bash(&p, "git status && rm -rf x"), None);
    let deny = p
        .check(&p.subject("bash", &json!({"command": "git push --force"}), None))
        .unwrap();
    assert!(deny.refusal("bash").contains("settings.json"), "{deny:?}");
}

#[test]
fn project_allow_rules_wait_for_trust_and_restricting_ones_do_not() {
    let s = setup();
    write(
        &s.project.join(".agent-lsp/settings.json"),
        json!({"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Bash(curl:*)"]}}),
    );
    let spec = PermissionSpec::with_files(RuleLists::default());
    let (p, _) = Permissions::load(&spec, &s.project, &s.env);
    assert_eq!(bash(&p, "npm test"), None);
    assert_eq!(bash(&p, "curl x"), Some(Behavior::Deny));
    let waiting = p.untrusted();
    assert_eq!(waiting.len(), 1);
    p.decide_trust(&waiting, TrustAnswer::NotNow);
    assert!(p.untrusted().is_empty());
    let (again, _) = Permissions::load(&spec, &s.project, &s.env);
    let waiting = again.untrusted();
    assert_eq!(waiting.len(), 1, "asked again in the next session");
    again.decide_trust(&waiting, TrustAnswer::Trust);
    assert_eq!(bash(&again, "npm test"), Some(Behavior::Allow));
    let (next, _) = Permissions::load(&spec, &s.project, &s.env);
    assert_eq!(bash(&next, "npm test"), Some(Behavior::Allow));
    assert!(next.untrusted().is_empty());
}

#[test]
fn always_answers_are_saved_in_their_scope() {
    let s = setup();
    let spec = PermissionSpec::with_files(RuleLists::default());
    let (p, _) = Permissions::load(&spec, &s.project, &s.env);
    let call = p.subject("bash", &json!({"command": "cargo test --lib"}), None);
    let saved = p.remember(&call, true, Scope::Project).unwrap();
    assert_eq!(saved, ["Bash(cargo test:*)"]);
    assert_eq!(bash(&p, "cargo test -q"), Some(Behavior::Allow));
    let (next, _) = Permissions::load(&spec, &s.project, &s.env);
    assert_eq!(
        bash(&next, "cargo test"),
        Some(Behavior::Allow),
        "trusted: the user wrote it"
    );
    let fetch = next.subject("web_fetch", &json!({"url": "https://docs.rs/x"}), None);
    next.remember(&fetch, false, Scope::User).unwrap();
    let user: Value = serde_json::from_slice(&std::fs::read(&s.config).unwrap()).unwrap();
    assert_eq!(
        user["permissions"]["deny"],
        json!(["WebFetch(domain:docs.rs)"])
    );
    let edit = next.subject("edit", &json!({"path": "a.rs"}), None);
    next.remember(&edit, true, Scope::Session).unwrap();
    let state = serde_json::to_value(next.state()).unwrap();
    let rules = state["rules"].as_array().unwrap();
    assert!(rules.contains(&json!({"rule": "edit", "behavior": "allow", "source": "session"})));
    assert!(rules.iter().any(|r| r["rule"] == "Bash(cargo test:*)"
        && r["source"] == "projectLocal"
        && r["trusted"] == true));
}

#[test]
fn a_broken_file_is_named_and_not_overwritten() {
    let s = setup();
    std::fs::create_dir_all(s.config.parent().unwrap()).unwrap();
    std::fs::write(&s.config, "{oops").unwrap();
    let spec = PermissionSpec::with_files(RuleLists {
        allow: vec!["Bash(".into()],
        ..RuleLists::default()
    });
    let (p, warnings) = Permissions::load(&spec, &s.project, &s.env);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    let call = p.subject("bash", &json!({"command": "ls"}), None);
    let err = p.remember(&call, true, Scope::User).unwrap_err();
    assert!(err.to_string().contains("not valid JSON"), "{err}");
    assert_eq!(std::fs::read_to_string(&s.config).unwrap(), "{oops");
    assert_eq!(
        bash(&p, "ls -a"),
        Some(Behavior::Allow),
        "kept for the session"
    );
    assert_eq!(p.state().errors.len(), 3);
}
