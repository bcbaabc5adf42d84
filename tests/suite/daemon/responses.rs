//! The daemon with a Responses model (built-in `openai/gpt-5` at the mock): switched to
//! Anthropic in the middle of a run, the next request carries the history without the
//! Responses reasoning item (its summary becomes text) and with sanitized tool ids.

use super::*;

#[tokio::test]
async fn a_responses_turn_reaches_anthropic_without_its_reasoning_item() {
    let mut first = bash_call("c1", "echo switched");
    first.thinking = Some("Run it.".into());
    let mock = MockProvider::start(MockScript {
        responses: vec![first, MockResponse::text("done by claude")],
    })
    .await
    .unwrap();
    let client = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env: vec![
            ("ANTHROPIC_BASE_URL".into(), mock.anthropic_base_url()),
            ("ANTHROPIC_API_KEY".into(), "anthropic-key".into()),
        ],
    })
    .await;
    client
        .initialize(
            LspClient::agent_caps(false),
            json!({"model": "openai/gpt-5"}),
        )
        .await;
    client.set_approvals(Box::new(|_| None));
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let asked = client
        .wait_for("approval", |m| m["method"] == "agent/beforeToolCall")
        .await;
    let switched = client
        .request(
            "agent/setModel",
            json!({"sessionId": session, "model": "anthropic/claude-sonnet-4-5"}),
        )
        .await;
    assert_eq!(switched["model"]["api"], "anthropic-messages", "{switched}");
    client
        .reply(&asked["id"], json!({"decision": "allow"}))
        .await;
    client.wait_settled(&session, &run).await;

    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(requests[0].path, "/v1/responses");
    assert_eq!(requests[1].path, "/v1/messages");
    assert_eq!(requests[1].status, 200, "{:?}", requests[1].violation);
    let body = requests[1].body.to_string();
    assert!(
        !body.contains("enc-mock-0") && !body.contains("rs_mock-0"),
        "{body}"
    );
    let messages = requests[1].body["messages"].as_array().unwrap();
    let blocks = messages[1]["content"].as_array().unwrap();
    assert_eq!(blocks[0], json!({"type": "text", "text": "Run it."}));
    assert_eq!(blocks[1]["type"], "tool_use");
    let id = blocks[1]["id"].as_str().unwrap();
    assert!(!id.contains('|') && id.starts_with("c1"), "{id}");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], id);
}
