//! Tests of the `mcpServers` configuration.

use serde_json::json;

use super::*;

fn env() -> EnvSource {
    EnvSource::from_pairs([("TOKEN", "s3cret"), ("HOME", "/home/u")])
}

fn parse(value: Value) -> (Vec<ServerConfig>, Vec<ConfigError>) {
    parse_servers(&value, &Origin::Editor, &env())
}

#[test]
fn both_shapes_parse_with_their_options() {
    let (servers, errors) = parse(json!({
        "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
               "env": {"A": "1"}, "cwd": "/tmp", "toolTimeoutMs": 5000, "approval": "allow"},
        "remote": {"url": "https://mcp.example/api", "headers": {"Authorization": "Bearer ${TOKEN}"},
                   "enabled": false, "startupTimeoutMs": 2000,
                   "approval": {"tools": {"search": "allow", "drop": "block"}}}
    }));
    assert!(errors.is_empty(), "{errors:?}");
    let fs = &servers[0];
    assert_eq!(fs.name, "fs");
    assert_eq!(
        fs.describe(),
        "npx -y @modelcontextprotocol/server-filesystem /tmp"
    );
    assert_eq!(fs.tool_timeout, Duration::from_millis(5000));
    assert_eq!(fs.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
    assert_eq!(fs.approval.for_tool("anything"), Some(Policy::Allow));
    let remote = &servers[1];
    let Transport::Http { headers, .. } = &remote.transport else {
        panic!("http")
    };
    assert_eq!(headers["Authorization"], "Bearer s3cret");
    assert!(!remote.enabled);
    assert_eq!(remote.approval.for_tool("search"), Some(Policy::Allow));
    assert_eq!(remote.approval.for_tool("drop"), Some(Policy::Block));
    assert_eq!(remote.approval.for_tool("other"), None);
}

#[test]
fn a_broken_entry_names_its_key_and_the_others_still_load() {
    let (servers, errors) = parse(json!({
        "good": {"command": "x"},
        "neither": {"args": []},
        "both": {"command": "x", "url": "http://a"},
        "badurl": {"url": "ftp://a"},
        "unset": {"command": "x", "env": {"K": "${NOPE}"}},
        "timeout": {"command": "x", "toolTimeoutMs": -1},
        "policy": {"command": "x", "approval": {"tools": {"t": "maybe"}}},
        "notobject": 5
    }));
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].name, "good");
    let keys: Vec<&str> = errors.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "mcpServers.neither",
            "mcpServers.both",
            "mcpServers.badurl.url",
            "mcpServers.unset.env",
            "mcpServers.timeout.toolTimeoutMs",
            "mcpServers.policy.approval.tools.t",
            "mcpServers.notobject"
        ],
        "in the file's order"
    );
    let unset = errors.iter().find(|e| e.key.ends_with("env")).unwrap();
    assert!(unset.message.contains("NOPE is not set"), "{unset}");
    assert!(
        unset
            .to_string()
            .starts_with("initializationOptions.mcpServers: ")
    );
}

#[test]
fn files_name_themselves_in_errors_and_later_sources_win() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("mcp.json");
    std::fs::write(
        &user,
        r#"{"mcpServers": {"a": {"command": "one"}, "b": {"command": "b"}}}"#,
    )
    .unwrap();
    let project = project_file(dir.path());
    std::fs::write(&project, r#"{"mcpServers": {"a": {"command": "two"}}}"#).unwrap();
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{not json").unwrap();
    let mut config = McpConfig::default();
    let (servers, errors) = load_file(&user, Origin::User(user.clone()), &env());
    assert!(errors.is_empty());
    config.merge(servers);
    let (servers, _) = load_file(&project, Origin::Project(project.clone()), &env());
    config.merge(servers);
    assert_eq!(config.servers["a"].describe(), "two");
    assert_eq!(config.servers["b"].describe(), "b");
    assert_eq!(config.project_servers().count(), 1);
    let (servers, errors) = load_file(&broken, Origin::File(broken.clone()), &env());
    assert!(servers.is_empty());
    assert!(errors[0].to_string().contains("broken.json"), "{errors:?}");
    let missing = dir.path().join("missing.json");
    assert_eq!(
        load_file(&missing, Origin::File(missing.clone()), &env()),
        (vec![], vec![])
    );
}

#[test]
fn expansion_reads_the_environment_and_keeps_escapes() {
    assert_eq!(expand("a ${TOKEN} b", &env()).unwrap(), "a s3cret b");
    assert_eq!(expand("$${TOKEN}", &env()).unwrap(), "${TOKEN}");
    assert!(expand("${TOKEN", &env()).unwrap_err().contains("unclosed"));
    assert_eq!(expand("no vars", &env()).unwrap(), "no vars");
}

#[test]
fn entries_that_differ_in_approval_or_timeouts_do_not_share_a_server() {
    let (servers, errors) = parse(json!({
        "a": {"command": "srv"},
        "b": {"command": "srv", "approval": "allow"},
        "c": {"command": "srv", "toolTimeoutMs": 5000}
    }));
    assert!(errors.is_empty(), "{errors:?}");
    let keys: Vec<String> = servers
        .iter()
        .map(|s| {
            let mut s = s.clone();
            s.name = "same".into();
            s.key()
        })
        .collect();
    assert_ne!(keys[0], keys[1]);
    assert_ne!(keys[0], keys[2]);
}
