//! Daemon tests of the live controls: switching model and thinking level mid-run, queue modes,
//! stats, listing models and sessions, forking and renaming, and the loop guards.

use super::*;

/// `(role, text)` of each message of an OpenAI request body but the system prompt.
fn openai_texts(body: &Value) -> Vec<(String, String)> {
    let texts = crate::suite::support::cli_run::request_texts(body);
    texts
        .into_iter()
        .filter(|(role, _)| role != "system")
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    (list.iter())
        .map(|(r, t)| (r.to_string(), t.to_string()))
        .collect()
}

fn session_file(client: &LspClient, session: &str) -> Vec<Value> {
    let path = client
        .log()
        .into_iter()
        .find_map(|m| m["result"]["sessionFile"].as_str().map(str::to_owned));
    let path = path.unwrap_or_else(|| panic!("no getState answer for {session}"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The request that reached the OpenAI mock first and, after `agent/setModel` during the run,
/// the Anthropic API of the same mock: the next request goes to the new endpoint with the new
/// key, the new thinking level and the whole history (prompt, tool call, its result).
#[tokio::test]
async fn a_model_switched_mid_run_takes_the_next_request_with_the_full_history() {
    let (mock, client) = two_provider_setup(vec![
        bash_call("c1", "echo switched"),
        MockResponse::text("done by claude"),
    ])
    .await;
    client.set_approvals(Box::new(|_| None));
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let asked = client
        .wait_for("approval", |m| m["method"] == "agent/beforeToolCall")
        .await;
    // The run is held at the approval, between its first and second request.
    let settings = client
        .request(
            "agent/setModel",
            json!({"sessionId": session, "model": "anthropic/claude-sonnet-4-5"}),
        )
        .await;
    assert_eq!(settings["model"]["provider"], "anthropic", "{settings}");
    assert_eq!(settings["model"]["contextWindow"], 200_000);
    let high = client
        .request(
            "agent/setThinkingLevel",
            json!({"sessionId": session, "level": "high"}),
        )
        .await;
    assert_eq!(high["thinkingLevel"], "high", "{high}");
    let bad = client
        .request_raw(
            "agent/setModel",
            json!({"sessionId": session, "model": "nope/none"}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    client
        .reply(&asked["id"], json!({"decision": "allow"}))
        .await;
    let events = client.wait_settled(&session, &run).await;
    let updates: Vec<&Value> = (events.iter())
        .filter(|e| e["event"]["type"] == "model_update")
        .collect();
    assert_eq!(updates.len(), 2, "{updates:?}");
    assert_eq!(updates[0]["runId"], run.as_str());
    assert_eq!(updates[0]["event"]["model"]["id"], "claude-sonnet-4-5");
    assert_eq!(updates[1]["event"]["thinkingLevel"], "high");

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].header("authorization"), Some("Bearer test-key"));
    assert_eq!(requests[1].path, "/v1/messages");
    assert_eq!(requests[1].header("x-api-key"), Some("anthropic-key"));
    assert_eq!(requests[1].header("authorization"), None);
    let body = &requests[1].body;
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert!(body["thinking"].is_object(), "thinking on: {body}");
    assert!(requests[0].body.get("reasoning_effort").is_none());
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{body}");
    assert_eq!(messages[0]["role"], "user");
    assert!(messages[0].to_string().contains("go"));
    let call = &messages[1]["content"].as_array().unwrap()[0];
    assert_eq!(
        (&call["type"], &call["id"], &call["name"]),
        (&json!("tool_use"), &json!("c1"), &json!("bash"))
    );
    let result = &messages[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "c1");
    assert!(result.to_string().contains("switched"), "{result}");

    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["model"]["provider"], "anthropic", "{state}");
    assert_eq!(state["thinkingLevel"], "high");
    let lines = session_file(&client, &session);
    let changes: Vec<(&str, &str)> = (lines.iter())
        .filter_map(|l| match l["type"].as_str()? {
            "model_change" => Some(("model", l["modelId"].as_str()?)),
            "thinking_level_change" => Some(("thinking", l["thinkingLevel"].as_str()?)),
            _ => None,
        })
        .collect();
    assert_eq!(
        changes,
        [
            ("model", "mock-model"),
            ("model", "claude-sonnet-4-5"),
            ("thinking", "high")
        ]
    );
    let last = lines.last().unwrap();
    assert_eq!(last["message"]["provider"], "anthropic", "{last}");
}

/// Two steering messages queued while a tool call waits: `one-at-a-time` delivers one per
/// request (two requests after the tool turn), `all` both in one (pi's queue semantics).
#[tokio::test]
async fn queue_modes_decide_how_many_steering_messages_a_request_takes() {
    for (mode, expected) in [
        (
            "one-at-a-time",
            vec![
                pairs(&[
                    ("user", "go"),
                    ("assistant", ""),
                    ("tool", "held"),
                    ("user", "a"),
                ]),
                pairs(&[
                    ("user", "go"),
                    ("assistant", ""),
                    ("tool", "held"),
                    ("user", "a"),
                    ("assistant", "r2"),
                    ("user", "b"),
                ]),
            ],
        ),
        (
            "all",
            vec![pairs(&[
                ("user", "go"),
                ("assistant", ""),
                ("tool", "held"),
                ("user", "a"),
                ("user", "b"),
            ])],
        ),
    ] {
        let (mock, client) = agent_setup(
            vec![
                bash_call("c1", "echo held"),
                MockResponse::text("r2"),
                MockResponse::text("r3"),
            ],
            LspClient::agent_caps(false),
            json!({}),
        )
        .await;
        client.set_approvals(Box::new(|_| None));
        let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
        let modes = client
            .request(
                "agent/setQueueModes",
                json!({"sessionId": session, "steering": mode}),
            )
            .await;
        assert_eq!(
            modes,
            json!({"steering": mode, "followUp": "one-at-a-time"})
        );
        let asked = client
            .wait_for("approval", |m| m["method"] == "agent/beforeToolCall")
            .await;
        for text in ["a", "b"] {
            client
                .request(
                    "agent/steer",
                    json!({"sessionId": session, "message": text}),
                )
                .await;
        }
        client
            .reply(&asked["id"], json!({"decision": "allow"}))
            .await;
        client.wait_settled(&session, &run).await;
        let after_steering: Vec<_> = (mock.requests().iter().skip(1))
            .map(|r| openai_texts(&r.body))
            .collect();
        assert_eq!(after_steering, expected, "{mode}");
        let state = client
            .request("agent/getState", json!({"sessionId": session}))
            .await;
        assert_eq!(state["steeringMode"], mode);
    }
}

#[tokio::test]
async fn stats_count_messages_tokens_cost_and_context_usage() {
    let reply = MockResponse {
        usage: Some(agent_lsp::testing::MockUsage {
            input: 1000,
            output: 200,
            ..Default::default()
        }),
        ..MockResponse::tool_call("c1", "ls", json!({}))
    };
    let (_mock, client) = agent_setup(
        vec![reply, MockResponse::text("two files")],
        LspClient::agent_caps(false),
        json!({"model": "openai/gpt-4.1-mini"}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "list"})).await;
    client.wait_settled(&session, &run).await;
    let stats = client
        .request("agent/getStats", json!({"sessionId": session}))
        .await;
    assert_eq!(stats["sessionId"], session.as_str(), "{stats}");
    assert!(stats["sessionFile"].as_str().unwrap().ends_with(".jsonl"));
    for (field, n) in [
        ("userMessages", 1),
        ("assistantMessages", 2),
        ("toolCalls", 1),
        ("toolResults", 1),
        ("totalMessages", 4),
    ] {
        assert_eq!(stats[field], n, "{field}: {stats}");
    }
    assert_eq!(
        stats["tokens"],
        json!({"input": 1000, "output": 200, "cacheRead": 0, "cacheWrite": 0, "total": 1200})
    );
    // gpt-4.1-mini: $0.40 in, $1.60 out per million tokens.
    let cost = stats["cost"].as_f64().unwrap();
    assert!((cost - 0.00072).abs() < 1e-9, "{cost}");
    let usage = &stats["contextUsage"];
    assert_eq!(usage["contextWindow"], 1_047_576);
    // The second response reported no usage: the first one's size plus the estimated rest.
    let tokens = usage["tokens"].as_u64().unwrap();
    assert!(tokens > 1200 && tokens < 1300, "{usage}");
    let percent = usage["percent"].as_f64().unwrap();
    assert!((percent - tokens as f64 / 1_047_576.0 * 100.0).abs() < 1e-9);
}

#[tokio::test]
async fn list_models_shows_the_models_the_keys_enable() {
    let (_mock, client) = agent_setup(vec![], LspClient::agent_caps(false), json!({})).await;
    let config = client.home.path().join("config/agent-lsp");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("models.json"),
        r#"{"providers": {"local": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
            "models": [{"id": "coder", "contextWindow": 32768, "reasoning": true}]}}}"#,
    )
    .unwrap();
    let listed = client.request("agent/listModels", json!({})).await;
    let models = listed["models"].as_array().unwrap();
    let find = |provider: &str, id: &str| {
        models
            .iter()
            .find(|m| m["provider"] == provider && m["id"] == id)
    };
    let mini = find("openai", "gpt-4.1-mini").expect("an OpenAI key enables OpenAI models");
    assert_eq!(mini["name"], "GPT-4.1 mini");
    assert_eq!(mini["contextWindow"], 1_047_576);
    assert_eq!(mini["reasoning"], false);
    assert_eq!(mini["thinkingLevels"], json!(["off"]));
    assert_eq!(mini["input"], json!(["text", "image"]));
    assert_eq!(
        mini["cost"],
        json!({"input": 0.4, "output": 1.6, "cacheRead": 0.1, "cacheWrite": 0.0})
    );
    let o3 = find("openai", "o3").unwrap();
    assert_eq!(o3["api"], "openai-responses");
    assert_eq!(mini["api"], "openai-completions");
    assert_eq!(
        o3["thinkingLevels"],
        json!(["off", "minimal", "low", "medium", "high"])
    );
    let coder = find("local", "coder").expect("models.json models are listed");
    assert_eq!(coder["contextWindow"], 32768);
    assert!(
        !models.iter().any(|m| m["provider"] == "anthropic"),
        "no Anthropic key: {listed}"
    );
}

/// Fork before the second prompt (by the `messageId` it was answered with), list, rename.
#[tokio::test]
async fn sessions_fork_before_a_prompt_list_and_rename() {
    let (mock, client) = agent_setup(
        vec![
            MockResponse::text("a1"),
            MockResponse::text("a2"),
            MockResponse::text("a3"),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let first = client
        .request("agent/prompt", json!({"message": "q1"}))
        .await;
    let session = first["sessionId"].as_str().unwrap().to_owned();
    client
        .wait_settled(&session, first["runId"].as_str().unwrap())
        .await;
    let second = client
        .request(
            "agent/prompt",
            json!({"sessionId": session, "message": "q2"}),
        )
        .await;
    client
        .wait_settled(&session, second["runId"].as_str().unwrap())
        .await;
    let forked = client
        .request(
            "agent/forkSession",
            json!({"sessionId": session, "messageId": second["messageId"]}),
        )
        .await;
    assert_eq!(forked["text"], "q2", "{forked}");
    let fork = forked["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(fork, session);
    let messages = client
        .request("agent/getMessages", json!({"sessionId": fork}))
        .await;
    let roles: Vec<&str> = (messages["messages"].as_array().unwrap().iter())
        .filter_map(|m| m["role"].as_str())
        .filter(|r| *r != "system")
        .collect();
    assert_eq!(roles, ["user", "assistant"], "{messages}");
    // Each user message comes with its entry id in the fork's own file (messageIds, parallel to
    // messages): what a client that resumed the fork forks or restores at.
    let listed_messages = messages["messages"].as_array().unwrap();
    let ids = messages["messageIds"].as_array().unwrap();
    assert_eq!(ids.len(), listed_messages.len(), "{messages}");
    let at = |role: &str| {
        listed_messages
            .iter()
            .position(|m| m["role"] == role)
            .unwrap()
    };
    let q1_in_fork = ids[at("user")].as_str().unwrap().to_owned();
    assert_eq!(ids[at("assistant")], Value::Null, "{messages}");
    let third = client
        .request("agent/prompt", json!({"sessionId": fork, "message": "q3"}))
        .await;
    client
        .wait_settled(&fork, third["runId"].as_str().unwrap())
        .await;
    let sent = openai_texts(&mock.requests()[2].body);
    assert_eq!(
        sent,
        pairs(&[("user", "q1"), ("assistant", "a1"), ("user", "q3")])
    );

    let renamed = client
        .request(
            "agent/renameSession",
            json!({"sessionId": session, "name": "my\nwork"}),
        )
        .await;
    assert_eq!(renamed, json!({"sessionId": session, "name": "my work"}));
    let cwd = client.workspace.path().display().to_string();
    let listed = client
        .request("agent/listSessions", json!({"cwd": cwd}))
        .await;
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{listed}");
    let of = |id: &str| sessions.iter().find(|s| s["sessionId"] == id).unwrap();
    assert_eq!(of(&session)["title"], "my work");
    assert_eq!(of(&session)["messageCount"], 4);
    assert_eq!(
        of(&fork)["title"],
        "q1",
        "a fork without a name: its first prompt"
    );
    assert_eq!(of(&fork)["name"], Value::Null);
    assert_eq!(of(&fork)["messageCount"], 4);
    for s in sessions {
        assert!(s["file"].as_str().unwrap().ends_with(".jsonl"), "{s}");
        assert!(s["created"].as_str().unwrap() <= s["modified"].as_str().unwrap());
    }
    let elsewhere = client
        .request("agent/listSessions", json!({"cwd": "/"}))
        .await;
    assert_eq!(elsewhere["sessions"], json!([]));
    // The source is unchanged by the fork; a message id that is not a user message is refused.
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(
        state["messageCount"],
        of(&session)["messageCount"],
        "getState counts the messages as listSessions does (the system prompt is not one): {state}"
    );
    let refused = client
        .request_raw(
            "agent/forkSession",
            json!({"sessionId": session, "messageId": "nope"}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let again = client
        .request(
            "agent/forkSession",
            json!({"sessionId": fork, "messageId": q1_in_fork}),
        )
        .await;
    assert_eq!(again["text"], "q1", "{again}");
}

/// A model that repeats one call forever: notes from the third call, the run ends at the sixth.
#[tokio::test]
async fn the_repeated_call_guard_warns_then_stops_a_looping_model() {
    let looping = MockResponse {
        repeat: true,
        ..MockResponse::tool_call("loop", "read", json!({"path": "a.txt"}))
    };
    let (mock, client) = agent_setup(vec![looping], LspClient::agent_caps(false), json!({})).await;
    std::fs::write(client.workspace.path().join("a.txt"), "same").unwrap();
    let (session, run, _) = prompt(&client, json!({"message": "read a.txt"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_eq!(mock.requests().len(), 6);
    let guards: Vec<(String, u64)> = (events.iter())
        .filter(|e| e["event"]["type"] == "loop_guard")
        .map(|e| {
            assert_eq!(e["event"]["guard"], "repeated_call");
            assert_eq!(e["event"]["toolName"], "read");
            assert_eq!(e["runId"], run.as_str());
            let action = e["event"]["action"].as_str().unwrap().to_owned();
            (action, e["event"]["count"].as_u64().unwrap())
        })
        .collect();
    let expected = [("warned", 3), ("warned", 4), ("warned", 5), ("stopped", 6)];
    let expected: Vec<(String, u64)> = expected.iter().map(|(a, n)| (a.to_string(), *n)).collect();
    assert_eq!(guards, expected);
    let settled = &events.last().unwrap()["event"];
    assert_eq!(
        settled,
        &json!({"type": "agent_settled", "aborted": false, "stopReason": "repeated_call"})
    );
    let results: Vec<String> = (events.iter())
        .filter(|e| e["event"]["type"] == "tool_execution_end")
        .map(|e| e["event"]["result"].to_string())
        .collect();
    let notes: Vec<bool> = results
        .iter()
        .map(|r| r.contains("will not change"))
        .collect();
    assert_eq!(notes, [false, false, true, true, true, false]);
    assert!(
        results[5].contains("6 times in a row, so the run is stopped"),
        "{}",
        results[5]
    );
    // The model saw the note on its fourth request.
    assert!(
        mock.requests()[3]
            .body
            .to_string()
            .contains("will not change")
    );
}

#[tokio::test]
async fn max_turns_ends_a_run_per_session_or_per_connection() {
    let looping = MockResponse {
        repeat: true,
        ..MockResponse::tool_call("loop", "ls", json!({}))
    };
    let (mock, client) = agent_setup(
        vec![looping],
        LspClient::agent_caps(false),
        json!({"maxTurns": 3, "loopGuard": {"warnAt": 0, "stopAt": 0}}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(events.last().unwrap()["event"]["stopReason"], "max_turns");
    assert!(!events.iter().any(|e| e["event"]["action"] == "warned"));

    let own = client
        .request("agent/newSession", json!({"maxTurns": 1}))
        .await;
    let own = own["sessionId"].as_str().unwrap();
    let (_, run, _) = prompt(&client, json!({"sessionId": own, "message": "go"})).await;
    let events = client.wait_settled(own, &run).await;
    assert_eq!(mock.requests().len(), 4);
    let stop = (events.iter())
        .find(|e| e["event"]["type"] == "loop_guard")
        .unwrap();
    assert_eq!(
        stop["event"],
        json!({"type": "loop_guard", "guard": "max_turns", "action": "stopped", "count": 1,
               "message": "Stopped: the run reached its turn limit (1)."})
    );
}

/// `initializationOptions.model` is the default of new sessions only: a fork made after a
/// switch keeps the model its source used at that point.
#[tokio::test]
async fn a_fork_keeps_the_model_its_source_switched_to() {
    let (mock, client) = two_provider_setup(vec![
        MockResponse::text("a1"),
        MockResponse::text("a2"),
        MockResponse::text("a3"),
    ])
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "q1"})).await;
    client.wait_settled(&session, &run).await;
    client
        .request(
            "agent/setModel",
            json!({"sessionId": session, "model": "anthropic/claude-haiku-4-5"}),
        )
        .await;
    let second = client
        .request(
            "agent/prompt",
            json!({"sessionId": session, "message": "q2"}),
        )
        .await;
    client
        .wait_settled(&session, second["runId"].as_str().unwrap())
        .await;
    let forked = client
        .request(
            "agent/forkSession",
            json!({"sessionId": session, "messageId": second["messageId"]}),
        )
        .await;
    let fork = forked["sessionId"].as_str().unwrap();
    let state = client
        .request("agent/getState", json!({"sessionId": fork}))
        .await;
    assert_eq!(
        state["model"],
        json!({"provider": "anthropic", "id": "claude-haiku-4-5"})
    );
    let (_, run, _) = prompt(&client, json!({"sessionId": fork, "message": "q3"})).await;
    client.wait_settled(fork, &run).await;
    let paths: Vec<String> = mock.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        ["/v1/chat/completions", "/v1/messages", "/v1/messages"]
    );
}
