//! Daemon tests: the command sandbox (issue 19) on this machine's kernel: commands that run
//! without asking are sandboxed, a refusal says so, an escalation asks, an unavailable sandbox
//! is reported and makes the command ask.

use super::*;

fn end_details(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["event"]["type"] == "tool_execution_end")
        .map(|e| e["event"]["result"]["details"]["sandbox"].clone())
        .collect()
}

#[tokio::test]
async fn an_unasked_command_is_sandboxed_and_its_escalation_asks_then_runs_unsandboxed() {
    let outside = crate::suite::support::outside_tmp();
    let target = outside.path().join("out.txt");
    let command = format!("echo x > {}", target.display());
    let responses = vec![
        bash_call("c1", &command),
        MockResponse::tool_call(
            "c2",
            "bash",
            json!({"command": command, "sandbox": false, "justification": "writes the report"}),
        ),
        MockResponse::text("done"),
    ];
    let (_mock, client) = agent_setup(
        responses,
        LspClient::agent_caps(false),
        json!({"approval": {"bash": "allow"}}),
    )
    .await;
    client.set_approvals(Box::new(|_| Some(json!({"decision": "allowAlways"}))));
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    let results = tool_results(&events);
    assert!(results[0].1, "{results:?}");
    assert!(
        results[0].0.contains("Read-only file system"),
        "{results:?}"
    );
    assert!(results[0].0.contains("the sandbox refused"), "{results:?}");
    assert!(!results[1].1, "{results:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
    assert_eq!(
        end_details(&events),
        vec![
            json!({"mode": "workspaceWrite", "network": false}),
            json!({"mode": "off", "approvedByUser": true}),
        ]
    );
    // Only the escalation asked, naming the command and the model's reason.
    let asked = requests_of(&client, "agent/beforeToolCall");
    assert_eq!(asked.len(), 1);
    let params = &asked[0]["params"];
    assert_eq!(params["toolCallId"], "c2");
    assert!(
        params["title"]
            .as_str()
            .unwrap()
            .contains("Run outside the sandbox: echo x"),
        "{params}"
    );
    assert_eq!(
        params["sandbox"],
        json!({"sandboxed": false, "mode": "off", "network": true,
               "justification": "writes the report"})
    );
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(
        summary(&state["sandbox"]),
        json!({"available": true, "mode": "workspaceWrite", "network": false, "explicit": false})
    );
    // The layers a command gets here, each said to be active (this machine has them all).
    let layers = &state["sandbox"]["layers"];
    for layer in ["landlock", "namespaces", "seccomp"] {
        assert_eq!(layers[layer]["active"], true, "{layer}: {layers}");
    }
    assert_eq!(
        layers["namespaces"]["kinds"],
        json!(["user", "mount", "pid", "ipc", "net"])
    );
    assert!(
        layers["landlock"]["abi"]
            .as_u64()
            .is_some_and(|abi| abi >= 6),
        "{layers}"
    );
    assert_eq!(state["sandbox"]["notIsolated"], json!([]));
}

/// The status without its layers.
fn summary(sandbox: &Value) -> Value {
    let mut s = sandbox.clone();
    if let Some(map) = s.as_object_mut() {
        map.remove("layers");
        map.remove("notIsolated");
    }
    s
}

#[tokio::test]
async fn an_explicit_read_only_sandbox_confines_hand_approved_commands_too() {
    let responses = vec![
        bash_call("c1", "echo x > made.txt"),
        MockResponse::text("ok"),
    ];
    let (_mock, client) = agent_setup(
        responses,
        LspClient::agent_caps(false),
        json!({"sandbox": "readOnly"}),
    )
    .await;
    client.set_approvals(Box::new(|_| Some(json!({"decision": "allow"}))));
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    let results = tool_results(&events);
    assert!(
        results[0].1 && results[0].0.contains("made.txt: Read-only file system"),
        "{results:?}"
    );
    assert!(!client.workspace.path().join("made.txt").exists());
    let asked = requests_of(&client, "agent/beforeToolCall");
    let mut sandbox = asked[0]["params"]["sandbox"].clone();
    let layers = sandbox["layers"].take();
    assert_eq!(
        sandbox,
        json!({"sandboxed": true, "mode": "readOnly", "network": false, "layers": null})
    );
    // This kernel's Landlock ABI (6 or newer on this machine), then the other layers.
    let layers: Vec<&str> = layers
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(layers[0].starts_with("Landlock ABI "), "{layers:?}");
    assert_eq!(
        layers[1..],
        ["user/mount/pid/ipc/net namespaces", "seccomp"]
    );
}

#[tokio::test]
async fn an_unavailable_sandbox_is_reported_and_the_unasked_command_asks() {
    let mock = MockProvider::start(MockScript {
        responses: vec![
            bash_call("c1", "echo ran > ran.txt"),
            MockResponse::text("ok"),
        ],
    })
    .await
    .unwrap();
    let client = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env: vec![("AGENT_LSP_TEST_SANDBOX_UNAVAILABLE".into(), "1".into())],
    })
    .await;
    client
        .initialize(
            LspClient::agent_caps(false),
            json!({"approval": {"bash": "allow"}}),
        )
        .await;
    client.set_approvals(Box::new(|_| Some(json!({"decision": "allow"}))));
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    let asked = requests_of(&client, "agent/beforeToolCall");
    assert_eq!(
        asked.len(),
        1,
        "bash is allowed, but the sandbox is unavailable: it asks"
    );
    let sandbox = &asked[0]["params"]["sandbox"];
    assert_eq!(sandbox["sandboxed"], false);
    assert!(
        sandbox["unavailable"].as_str().unwrap().contains("forced"),
        "{sandbox}"
    );
    assert!(!tool_results(&events)[0].1);
    assert!(client.workspace.path().join("ran.txt").exists());
    assert_eq!(
        end_details(&events),
        vec![json!({"mode": "off", "approvedByUser": true})]
    );
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["sandbox"]["available"], false);
    assert!(
        state["sandbox"]["reason"]
            .as_str()
            .unwrap()
            .contains("forced")
    );
}

#[tokio::test]
async fn set_sandbox_changes_the_sessions_sandbox_from_the_next_command_on() {
    let responses = vec![
        bash_call("c1", "echo a > a.txt"),
        MockResponse::text("first"),
        bash_call("c2", "echo b > b.txt"),
        MockResponse::text("second"),
    ];
    let (_mock, client) = agent_setup(
        responses,
        LspClient::agent_caps(false),
        json!({"approval": {"bash": "allow"}}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "one"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert!(!tool_results(&events)[0].1);
    let set = client
        .request(
            "agent/setSandbox",
            json!({"sessionId": session, "sandbox": "readOnly"}),
        )
        .await;
    assert_eq!(
        summary(&set["sandbox"]),
        json!({"available": true, "mode": "readOnly", "network": false, "explicit": true})
    );
    let (_, run, _) = prompt(&client, json!({"sessionId": session, "message": "two"})).await;
    let events = client.wait_settled(&session, &run).await;
    // The events of the session so far: the second run's call is the last.
    let results = tool_results(&events);
    let last = results.last().unwrap();
    assert!(
        last.1 && last.0.contains("b.txt: Read-only file system"),
        "{results:?}"
    );
    assert!(client.workspace.path().join("a.txt").exists());
    assert!(!client.workspace.path().join("b.txt").exists());
    let bad = client
        .request_raw(
            "agent/setSandbox",
            json!({"sessionId": session, "sandbox": "everything"}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602);
}

/// A machine without user namespaces (forced): commands still run sandboxed, with Landlock and
/// seccomp, and the daemon says once, in `agent/getState` and in each approval what is then
/// not isolated.
#[tokio::test]
async fn fewer_layers_are_said_once_in_the_state_and_in_each_approval() {
    let mock = MockProvider::start(MockScript {
        responses: vec![
            bash_call("c1", "echo x > made.txt"),
            MockResponse::text("ok"),
        ],
    })
    .await
    .unwrap();
    let client = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env: vec![("AGENT_LSP_TEST_SANDBOX_NO_NAMESPACES".into(), "1".into())],
    })
    .await;
    client
        .initialize(
            LspClient::agent_caps(false),
            json!({"sandbox": "workspaceWrite"}),
        )
        .await;
    let warning = client
        .wait_for("the fewer-layers warning", |m| {
            m["method"] == "window/showMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|t| t.contains("fewer layers"))
        })
        .await;
    let text = warning["params"]["message"].as_str().unwrap();
    assert!(text.contains("no namespaces: forced by"), "{text}");
    assert!(text.contains("System V IPC"), "{text}");
    client.set_approvals(Box::new(|_| Some(json!({"decision": "allow"}))));
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert!(!tool_results(&events)[0].1, "{:?}", tool_results(&events));
    let asked = requests_of(&client, "agent/beforeToolCall");
    let sandbox = &asked[0]["params"]["sandbox"];
    assert_eq!(sandbox["sandboxed"], true);
    let gaps = sandbox["notIsolated"].as_array().unwrap();
    assert!(
        gaps.iter()
            .any(|g| g.as_str().unwrap().starts_with("metadata outside")),
        "{sandbox}"
    );
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    let layers = &state["sandbox"]["layers"];
    assert_eq!(layers["namespaces"]["active"], false, "{layers}");
    assert!(
        layers["namespaces"]["reason"]
            .as_str()
            .unwrap()
            .contains("forced by AGENT_LSP_TEST_SANDBOX_NO_NAMESPACES")
    );
    assert_eq!(layers["landlock"]["active"], true);
    assert_eq!(layers["seccomp"]["active"], true);
    assert_eq!(&state["sandbox"]["notIsolated"], &sandbox["notIsolated"]);
}

#[tokio::test]
async fn set_sandbox_takes_a_list_of_domains_and_refuses_a_malformed_one() {
    let (_mock, client) = agent_setup(
        vec![MockResponse::text("ok")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "hi"})).await;
    client.wait_settled(&session, &run).await;
    let set = client
        .request(
            "agent/setSandbox",
            json!({"sessionId": session, "sandbox": "workspaceWrite",
                   "sandboxNetwork": ["Crates.io", "*.npmjs.org"]}),
        )
        .await;
    assert_eq!(set["sandbox"]["network"], false);
    assert_eq!(
        set["sandbox"]["allowedDomains"],
        json!(["crates.io", "*.npmjs.org"])
    );
    let bad = client
        .request_raw(
            "agent/setSandbox",
            json!({"sessionId": session, "sandbox": "workspaceWrite", "sandboxNetwork": ["a b"]}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

/// One malformed option must not throw away the others (the sandbox's among them), and a
/// malformed mode fails closed.
#[tokio::test]
async fn a_malformed_option_is_left_out_alone_and_a_bad_mode_fails_closed() {
    for (options, mode) in [
        (
            json!({"sandbox": "readOnly", "sandboxNetwork": ["http://x"]}),
            "readOnly",
        ),
        (
            json!({"sandbox": "readonly", "approval": {"bash": "allow"}}),
            "readOnly",
        ),
    ] {
        let (_mock, client) = agent_setup(
            vec![MockResponse::text("ok")],
            LspClient::agent_caps(false),
            options.clone(),
        )
        .await;
        let (session, run, _) = prompt(&client, json!({"message": "hi"})).await;
        client.wait_settled(&session, &run).await;
        let state = client
            .request("agent/getState", json!({"sessionId": session}))
            .await;
        assert_eq!(state["sandbox"]["mode"], mode, "{options}");
        assert_eq!(state["sandbox"]["explicit"], true, "{options}");
        assert_eq!(state["sandbox"]["network"], false, "{options}");
    }
}
