//! Tests of the trust store: what an answer covers, what asks again and how the change is named.

use serde_json::json;

use super::*;
use crate::mcp::config::{Origin, parse_servers};

fn servers_with(value: Value, env: &EnvSource) -> Vec<ServerConfig> {
    let origin = Origin::Project(PathBuf::from("/p/.mcp.json"));
    let (servers, errors) = parse_servers(&value, &origin, env);
    assert!(errors.is_empty(), "{errors:?}");
    servers
}

fn servers(value: Value) -> Vec<ServerConfig> {
    servers_with(
        value,
        &EnvSource::from_pairs([("TOKEN", "t0"), ("OTHER", "o")]),
    )
}

/// A store in a temporary directory and a project directory in it.
fn store() -> (tempfile::TempDir, TrustStore, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let store = TrustStore::at(dir.path().join("state/trust.json"));
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    (dir, store, project)
}

/// What an allowed `before` says about `after`, as the user reads it.
fn named(before: Value, after: Value) -> Vec<String> {
    let (_dir, store, project) = store();
    store.remember(&project, &servers(before), true).unwrap();
    let remembered = store.decision(&project, &servers(after));
    (remembered.changes.iter())
        .map(ToString::to_string)
        .collect()
}

#[test]
fn answers_are_remembered_per_project_and_a_changed_file_asks_again() {
    let (dir, store, project) = store();
    let first = servers(json!({"fs": {"command": "npx", "args": ["fs"]}}));
    assert_eq!(
        store.decision(&project, &first),
        Remembered::unknown(vec![])
    );
    store.remember(&project, &first, true).unwrap();
    assert_eq!(store.decision(&project, &first).trust, Trust::Allowed);
    let other = dir.path();
    let elsewhere = store.decision(other, &first);
    assert_eq!(elsewhere, Remembered::unknown(vec![]), "per project");
    let changed = servers(json!({"fs": {"command": "npx", "args": ["evil"]}}));
    assert_eq!(store.decision(&project, &changed).trust, Trust::Unknown);
    store.remember(&project, &changed, false).unwrap();
    let denied = store.decision(&project, &changed);
    assert_eq!((denied.trust, denied.changes), (Trust::Denied, vec![]));
}

#[test]
fn every_field_of_an_entry_is_covered_and_its_change_named() {
    let fs = json!({"command": "python3", "args": ["fs.py"], "env": {"A": "1", "B": "2"}});
    let with = |extra: Value| {
        let mut entry = fs.clone();
        if let (Value::Object(entry), Value::Object(extra)) = (&mut entry, extra) {
            entry.extend(extra);
        }
        json!({ "fs": entry })
    };
    let cases = [
        (
            json!({"env": {"A": "1", "B": "2", "PYTHONPATH": "/w/evil"}}),
            "fs: env added PYTHONPATH",
        ),
        (json!({"env": {"A": "1", "B": "3"}}), "fs: env changed B"),
        (json!({"env": {"A": "1"}}), "fs: env removed B"),
        (json!({"args": ["fs.py", "--all"]}), "fs: args changed"),
        (json!({"command": "python4"}), "fs: command changed"),
        (json!({"cwd": "/w/evil"}), "fs: cwd added"),
        (json!({"approval": "allow"}), "fs: approval added"),
        (json!({"enabled": true}), "fs: enabled added"),
        (json!({"startupTimeoutMs": 1}), "fs: startupTimeoutMs added"),
        (json!({"toolTimeoutMs": 1}), "fs: toolTimeoutMs added"),
        (json!({"type": "stdio"}), "fs: type added"),
    ];
    for (extra, change) in cases {
        assert_eq!(
            named(with(json!({})), with(extra.clone())),
            [change],
            "{extra}"
        );
    }
    let mut without_env = with(json!({}));
    without_env["fs"].as_object_mut().unwrap().remove("env");
    assert_eq!(
        named(with(json!({})), without_env.clone()),
        ["fs: env removed A", "fs: env removed B"]
    );
    assert_eq!(
        named(without_env, with(json!({}))),
        ["fs: env added A", "fs: env added B"]
    );
    assert_eq!(
        named(
            with(json!({"env": {}})),
            with(json!({"env": {}, "cwd": "/"}))
        ),
        ["fs: cwd added"]
    );
}

#[test]
fn an_http_entrys_url_headers_and_approval_are_covered() {
    let tracker = |url: &str, auth: &str, approval: Value| json!({"tracker": {"url": url, "headers": {"Authorization": auth}, "approval": approval}});
    let before = tracker("https://t.example/mcp", "Bearer ${TOKEN}", json!("ask"));
    assert_eq!(
        named(
            before.clone(),
            tracker("https://evil.example/mcp", "Bearer ${TOKEN}", json!("ask"))
        ),
        ["tracker: url changed"]
    );
    assert_eq!(
        named(
            before.clone(),
            tracker("https://t.example/mcp", "Bearer ${OTHER}", json!("ask"))
        ),
        ["tracker: headers changed Authorization"]
    );
    let allow = json!({"tools": {"delete": "allow"}});
    assert_eq!(
        named(
            before,
            tracker("https://t.example/mcp", "Bearer ${TOKEN}", allow)
        ),
        ["tracker: approval changed"]
    );
}

#[test]
fn values_are_compared_before_expansion() {
    let (_dir, store, project) = store();
    let entry = json!({"fs": {"command": "x", "env": {"KEY": "${TOKEN}"}}});
    let at = |value: &str| servers_with(entry.clone(), &EnvSource::from_pairs([("TOKEN", value)]));
    store.remember(&project, &at("first"), true).unwrap();
    let later = store.decision(&project, &at("rotated"));
    assert_eq!(later.trust, Trust::Allowed, "the user's variable is theirs");
    let moved = servers(json!({"fs": {"command": "x", "env": {"KEY": "${OTHER}"}}}));
    let changes = store.decision(&project, &moved).changes;
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].to_string(), "fs: env changed KEY");
}

#[test]
fn a_new_server_asks_and_a_removed_one_does_not() {
    let (_dir, store, project) = store();
    let both = servers(json!({"fs": {"command": "a"}, "git": {"command": "b"}}));
    store.remember(&project, &both, true).unwrap();
    let fewer = servers(json!({"git": {"command": "b"}}));
    assert_eq!(store.decision(&project, &fewer).trust, Trust::Allowed);
    let more = servers(json!({"git": {"command": "b"}, "db": {"command": "c"}}));
    let asked = store.decision(&project, &more);
    assert_eq!(
        asked,
        Remembered::unknown(vec![Change::NewServer("db".into())])
    );
    assert_eq!(asked.changes[0].to_string(), "new server db");
}

#[test]
fn the_order_of_keys_in_the_file_does_not_matter() {
    let (_dir, store, project) = store();
    let one = json!({"fs": {"command": "a", "args": ["x"],
                            "approval": {"tools": {"r": "allow", "w": "ask"}}}});
    store.remember(&project, &servers(one), true).unwrap();
    let text = r#"{"fs": {"approval": {"tools": {"w": "ask", "r": "allow"}},
                          "args": ["x"], "command": "a"}}"#;
    let reordered = servers(serde_json::from_str(text).unwrap());
    assert_eq!(store.decision(&project, &reordered).trust, Trust::Allowed);
}

#[test]
fn the_file_keeps_names_and_hashes_never_values() {
    let (dir, store, project) = store();
    let entry = json!({"fs": {"command": "secret-cmd", "args": ["--token=lit3ral"],
                              "env": {"API_KEY": "lit3ral-key"}},
                       "web": {"url": "https://h.example/", "headers": {"X-Auth": "lit3ral-h"}}});
    store.remember(&project, &servers(entry), true).unwrap();
    let text = std::fs::read_to_string(dir.path().join("state/trust.json")).unwrap();
    for value in ["secret-cmd", "lit3ral", "h.example"] {
        assert!(!text.contains(value), "{value} in {text}");
    }
    for name in ["\"fs\"", "\"API_KEY\"", "\"X-Auth\"", "\"headers\""] {
        assert!(text.contains(name), "{name} not in {text}");
    }
}

#[test]
fn an_older_answer_asks_again_with_a_note_and_other_projects_are_kept() {
    let (dir, store, project) = store();
    let file = dir.path().join("state/trust.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let old = json!({"allowed": true, "servers": ["fs: npx fs"]});
    let stored = json!({"projects": {
        project_key(&project): old,
        "/elsewhere": {"allowed": false, "servers": ["x: y"]}
    }});
    std::fs::write(&file, stored.to_string()).unwrap();
    let fs = servers(json!({"fs": {"command": "npx", "args": ["fs"]}}));
    let asked = store.decision(&project, &fs);
    assert_eq!(asked, Remembered::unknown(vec![Change::OlderAnswer]));
    assert!(asked.changes[0].to_string().contains("whole entry"));
    store.remember(&project, &fs, true).unwrap();
    assert_eq!(store.decision(&project, &fs).trust, Trust::Allowed);
    let text: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(text["projects"]["/elsewhere"]["servers"], json!(["x: y"]));
}

#[test]
fn a_malformed_answer_is_unknown_without_a_change_to_name() {
    let (dir, store, project) = store();
    let file = dir.path().join("state/trust.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let stored = json!({"projects": {project_key(&project): {"allowed": "yes"}}});
    std::fs::write(&file, stored.to_string()).unwrap();
    let fs = servers(json!({"fs": {"command": "npx"}}));
    assert_eq!(store.decision(&project, &fs), Remembered::unknown(vec![]));
}
