//! The model's plan (`todo_write`) through the daemon: `plan_update`, `agent/getState.plan`,
//! the session file, and a resumed session's plan.

use super::*;

fn todo_write(id: &str, todos: Value) -> MockResponse {
    MockResponse::tool_call(id, "todo_write", json!({ "todos": todos }))
}

#[tokio::test]
async fn a_plan_is_shown_kept_in_the_state_and_restored_on_resume() {
    let first_plan = json!([
        {"content": "Read the parser", "status": "in_progress"},
        {"content": "Fix the bug", "status": "pending"}
    ]);
    let second_plan = json!([
        {"content": "Read the parser", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress"}
    ]);
    let (mock, client) = agent_setup(
        vec![
            todo_write("p1", first_plan.clone()),
            todo_write("p2", second_plan.clone()),
            MockResponse::text("planned"),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "plan it"})).await;
    let events = client.wait_settled(&session, &run).await;
    // Asked nothing: planning changes nothing on the machine.
    assert!(
        !client
            .log()
            .iter()
            .any(|m| m["method"] == "agent/beforeToolCall")
    );
    let updates: Vec<&Value> = (events.iter())
        .filter(|e| e["event"]["type"] == "plan_update")
        .collect();
    assert_eq!(updates.len(), 2, "{events:?}");
    assert_eq!(updates[0]["event"]["todos"], first_plan);
    assert_eq!(updates[1]["event"]["todos"], second_plan);
    assert_eq!(updates[1]["runId"], run.as_str());
    // Each update precedes the end of the call that made it.
    let at = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).unwrap();
    let update = at(&|e| e["event"]["type"] == "plan_update");
    let end =
        at(&|e| e["event"]["type"] == "tool_execution_end" && e["event"]["toolCallId"] == "p1");
    assert!(update < end);
    // The model reads the checklist back.
    let body = mock.requests()[1].body.to_string();
    assert!(body.contains("Plan updated (0/2 done):"), "{body}");
    assert!(body.contains("[>] Read the parser"), "{body}");

    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["plan"], second_plan, "{state}");
    let file = state["sessionFile"].as_str().unwrap().to_owned();
    let stored: Vec<Value> = (std::fs::read_to_string(&file).unwrap().lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["customType"] == "agent-lsp.plan")
        .collect();
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[1]["type"], "custom");
    assert_eq!(stored[1]["data"]["todos"], second_plan);

    // The session file is locked while its daemon lives; a second daemon may resume it after.
    let env = same_home(&client);
    let mut first = client;
    assert!(first.stop().await.success());
    let (second, _) = resume_in_new_daemon(env, &mock, &session).await;
    let state = second
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["plan"], second_plan, "{state}");

    let fresh = second.request("agent/newSession", json!({})).await;
    let state = second
        .request("agent/getState", json!({"sessionId": fresh["sessionId"]}))
        .await;
    assert_eq!(state["plan"], json!([]), "{state}");
}

#[tokio::test]
async fn a_malformed_plan_is_a_tool_error_and_the_plan_stays() {
    let (_mock, client) = agent_setup(
        vec![
            todo_write("bad", json!([{"content": "x", "status": "someday"}])),
            todo_write("empty", json!([{"content": "  ", "status": "pending"}])),
            MockResponse::text("ok"),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "plan it"})).await;
    let events = client.wait_settled(&session, &run).await;
    let ends: Vec<&Value> = (events.iter())
        .filter(|e| e["event"]["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 2);
    assert!(
        ends.iter().all(|e| e["event"]["isError"] == true),
        "{ends:?}"
    );
    let text = |i: usize| ends[i]["event"]["result"]["content"][0]["text"].as_str();
    // The loop's schema validation names the item and the allowed values.
    let expected =
        r#"todos.0.status: "someday" is not one of "pending", "in_progress" or "completed""#;
    assert!(text(0).unwrap().contains(expected), "{:?}", text(0));
    assert_eq!(text(1), Some("Every plan item needs content."));
    assert!(!events.iter().any(|e| e["event"]["type"] == "plan_update"));
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["plan"], json!([]));
}
