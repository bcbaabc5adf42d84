//! The public helpers: tool sets, kinds, previews, and the declared schemas versus pi's.

use std::sync::Arc;

use agent_lsp::tools::{
    DiskWorkspace, ToolKind, ToolOptions, ToolPreview, Workspace, allowed_by_default, coding_tools,
    is_read_only, preview, tool_kind,
};
use serde_json::{Value, json};

use crate::suite::support::tool_harness::Harness;

/// pi 1.6.0's names and parameter schemas (descriptions omitted), from the spec.
const PI_SCHEMAS: &str = r#"[
 {"name":"read","parameters":{"type":"object","required":["path"],"properties":{"path":{"type":"string"},"offset":{"type":"number"},"limit":{"type":"number"}}}},
 {"name":"bash","parameters":{"type":"object","required":["command"],"properties":{"command":{"type":"string"},"timeout":{"type":"number"}}}},
 {"name":"edit","parameters":{"type":"object","required":["path","edits"],"properties":{"path":{"type":"string"},"edits":{"type":"array","items":{"type":"object","required":["oldText","newText"],"properties":{"oldText":{"type":"string"},"newText":{"type":"string"}}}}}}},
 {"name":"write","parameters":{"type":"object","required":["path","content"],"properties":{"path":{"type":"string"},"content":{"type":"string"}}}},
 {"name":"grep","parameters":{"type":"object","required":["pattern"],"properties":{"pattern":{"type":"string"},"path":{"type":"string"},"glob":{"type":"string"},"ignoreCase":{"type":"boolean"},"literal":{"type":"boolean"},"context":{"type":"number"},"limit":{"type":"number"}}}},
 {"name":"find","parameters":{"type":"object","required":["pattern"],"properties":{"pattern":{"type":"string"},"path":{"type":"string"},"limit":{"type":"number"}}}},
 {"name":"ls","parameters":{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"number"}}}}
]"#;

fn strip_descriptions(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "description")
                .map(|(k, v)| (k.clone(), strip_descriptions(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[test]
fn schemas_match_pi_and_every_tool_is_described() {
    let h = Harness::new();
    let ours: Vec<Value> = h
        .tools
        .iter()
        .map(|t| json!({"name": t.name(), "parameters": strip_descriptions(&t.declaration().parameters)}))
        .collect();
    let pi: Value = serde_json::from_str(PI_SCHEMAS).unwrap();
    // pi's seven, `bash` with agent-lsp's `background` besides pi's arguments, then the tools of
    // background jobs.
    let mut pi_seven = ours[..7].to_vec();
    let bash = &mut pi_seven[1]["parameters"]["properties"];
    assert_eq!(bash["background"], json!({"type": "boolean"}));
    bash.as_object_mut().unwrap().remove("background");
    assert_eq!(Value::Array(pi_seven), pi);
    assert_eq!(
        Value::Array(ours[7..].to_vec()),
        json!([
            {"name": "bash_output", "parameters": {"type": "object", "required": ["jobId"],
             "properties": {"jobId": {"type": "string"}, "filter": {"type": "string"}}}},
            {"name": "bash_kill", "parameters": {"type": "object", "required": ["jobId"],
             "properties": {"jobId": {"type": "string"}}}}
        ])
    );
    for t in &h.tools {
        assert!(
            t.declaration().description.len() > 80,
            "{} needs a real description",
            t.name()
        );
    }
}

#[test]
fn subsets_kinds_and_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let ws: Arc<dyn Workspace> = Arc::new(DiskWorkspace::new(dir.path(), vec![]).unwrap());
    let only = ToolOptions {
        only: Some(vec!["read".into(), "ls".into()]),
        ..Default::default()
    };
    let names: Vec<String> = coding_tools(ws, only)
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(names, ["read", "ls"]);
    assert_eq!(serde_json::to_value(tool_kind("edit")).unwrap(), "edit");
    assert_eq!(tool_kind("bash"), ToolKind::Execute);
    assert_eq!(tool_kind("grep"), ToolKind::Search);
    assert_eq!(tool_kind("read"), ToolKind::Read);
    assert_eq!(tool_kind("mystery"), ToolKind::Other);
    assert_eq!(tool_kind("bash_output"), ToolKind::Read);
    assert_eq!(tool_kind("bash_kill"), ToolKind::Execute);
    // Reading a job changes nothing; stopping one is allowed unasked all the same.
    assert!(is_read_only("bash_output") && !is_read_only("bash_kill"));
    assert!(allowed_by_default("bash_kill") && !allowed_by_default("bash"));
    assert!(
        is_read_only("grep")
            && is_read_only("ls")
            && !is_read_only("bash")
            && !is_read_only("write")
    );
    assert!(DiskWorkspace::new(dir.path().join("missing"), vec![]).is_err());
}

#[tokio::test]
async fn previews_compute_without_applying() {
    let h = Harness::new();
    h.put("p.txt", "a\nb\n");
    let p = preview(
        &h.ws,
        "edit",
        &json!({"path": "p.txt", "oldText": "b", "newText": "B"}),
    )
    .await;
    let Some(ToolPreview::Diff {
        patch,
        first_changed_line,
        new_file,
        ..
    }) = p
    else {
        panic!("{p:?}")
    };
    assert_eq!(patch, "--- p.txt\n+++ p.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n");
    assert_eq!((first_changed_line, new_file), (Some(2), false));
    assert_eq!(h.get_str("p.txt"), "a\nb\n", "preview must not write");

    let p = preview(&h.ws, "write", &json!({"path": "n.txt", "content": "x\n"}))
        .await
        .unwrap();
    let v = serde_json::to_value(&p).unwrap();
    assert_eq!(v["type"], "diff");
    assert_eq!(v["newFile"], true);
    assert_eq!(v["patch"], "--- n.txt\n+++ n.txt\n@@ -0,0 +1 @@\n+x\n");
    assert!(!h.path("n.txt").exists());

    let p = preview(&h.ws, "bash", &json!({"command": "ls -la"}))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&p).unwrap(),
        json!({"type": "command", "command": "ls -la", "cwd": h.root, "timeout": null})
    );
    assert_eq!(
        preview(&h.ws, "read", &json!({"path": "p.txt"})).await,
        None
    );
    assert_eq!(
        preview(
            &h.ws,
            "edit",
            &json!({"path": "p.txt", "edits": [{"oldText": "zz", "newText": ""}]})
        )
        .await,
        None
    );
}

#[tokio::test]
async fn cancelled_calls_report_pi_abort_texts_and_change_nothing() {
    use agent_lsp::agent::tool::ToolUpdater;
    use tokio_util::sync::CancellationToken;
    let h = Harness::new();
    h.put("f.txt", "a\n");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let cases = [
        ("read", json!({"path": "f.txt"}), "Operation aborted"),
        (
            "write",
            json!({"path": "f.txt", "content": "b"}),
            "Operation aborted",
        ),
        (
            "edit",
            json!({"path": "f.txt", "edits": [{"oldText": "a", "newText": "b"}]}),
            "Operation aborted",
        ),
        (
            "bash",
            json!({"command": "echo hi > g.txt"}),
            "Command aborted",
        ),
    ];
    for (name, args, expected) in cases {
        let err = h
            .call_with(name, args, cancel.clone(), ToolUpdater::none())
            .await
            .unwrap_err();
        assert_eq!(err.message, expected, "{name}");
    }
    assert_eq!(h.get_str("f.txt"), "a\n");
    assert!(!h.path("g.txt").exists());
}

#[tokio::test]
async fn bash_options_prefix_env_and_shell() {
    use agent_lsp::agent::tool::ToolInput;
    let dir = tempfile::tempdir().unwrap();
    let ws: Arc<dyn Workspace> = Arc::new(DiskWorkspace::new(dir.path(), vec![]).unwrap());
    let opts = ToolOptions {
        only: Some(vec!["bash".into()]),
        shell: Some("/bin/sh".into()),
        command_prefix: Some("GREETING=hello".into()),
        env: vec![("AGENT_SESSION".into(), "s-1".into())],
        spill_dir: Some(dir.path().to_path_buf()),
        read_tracker: None,
        sandbox: None,
        jobs: None,
        recorder: None,
    };
    let bash = coding_tools(ws, opts).pop().unwrap();
    let r = bash
        .execute(ToolInput::new(
            "c",
            json!({"command": "echo $GREETING $AGENT_SESSION; echo $0"}),
        ))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("hello s-1\n/bin/sh"));
}
