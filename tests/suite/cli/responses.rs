//! The OpenAI Responses API through the real binary: a models.json provider choosing
//! `openai-responses`, a two-turn tool run whose second request carries the reasoning item back,
//! and the session file holding it as pi stores it.

use agent_lsp::testing::{MockResponse, MockToolCall, MockUsage};
use serde_json::{Value, json};

use super::super::support::cli_run::{CliEnv, json_lines, session_lines, stderr};
use super::mock;

#[tokio::test]
async fn a_tool_run_replays_the_reasoning_item_on_the_next_request() {
    let mock = mock(vec![
        MockResponse {
            thinking: Some("Read the notes first.".into()),
            tool_calls: vec![MockToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: json!({"path": "notes.txt"}),
                raw_arguments: None,
            }],
            usage: Some(MockUsage {
                input: 100,
                output: 40,
                cache_read: 900,
                reasoning: 32,
                ..MockUsage::default()
            }),
            ..MockResponse::default()
        },
        MockResponse::text("The notes say hello."),
    ])
    .await;
    let env = CliEnv::new();
    let config = env.home.path().join("config/agent-lsp");
    std::fs::create_dir_all(&config).unwrap();
    let models = json!({"providers": {"gateway": {
        "baseUrl": mock.openai_base_url(), "api": "openai-responses", "apiKey": "gw-key",
        "models": [{"id": "reasoner", "reasoning": true, "contextWindow": 200000}]}}});
    std::fs::write(config.join("models.json"), models.to_string()).unwrap();
    std::fs::write(env.project().join("notes.txt"), "hello\n").unwrap();
    let args = [
        "run",
        "--json",
        "--model",
        "gateway/reasoner",
        "--thinking",
        "high",
        "summarise notes.txt",
    ];
    let out = env.run(&args).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));

    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    for request in &requests {
        assert_eq!(request.path, "/v1/responses");
        assert_eq!(request.header("authorization"), Some("Bearer gw-key"));
        assert_eq!(request.status, 200, "{:?}", request.violation);
        assert_eq!(request.body["store"], false);
        assert_eq!(
            request.body["include"],
            json!(["reasoning.encrypted_content"])
        );
        assert_eq!(request.body["reasoning"]["effort"], "high");
        // pi's session affinity: the session id as the prompt cache key and in headers.
        let session = request.header("session-id").expect("a session-id header");
        assert_eq!(request.header("x-client-request-id"), Some(session));
        assert_eq!(request.body["prompt_cache_key"], session);
    }
    let input = requests[1].body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input
        .iter()
        .map(|i| i["type"].as_str().or(i["role"].as_str()).unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "developer",
            "user",
            "reasoning",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(
        input[2],
        json!({"id": "rs_mock-0", "type": "reasoning",
               "summary": [{"type": "summary_text", "text": "Read the notes first."}],
               "encrypted_content": "enc-mock-0"})
    );
    assert_eq!(input[3]["id"], "fc_call_1");
    assert_eq!(input[3]["call_id"], "call_1");
    assert_eq!(input[4]["call_id"], "call_1");
    assert!(
        input[4]["output"].as_str().unwrap().contains("hello"),
        "{}",
        input[4]
    );

    // The events show the summary as thinking and end with the answer.
    let events = json_lines(&out);
    let thinking_end = events
        .iter()
        .find(|e| e["assistantMessageEvent"]["type"] == "thinking_end")
        .expect("a thinking_end event");
    assert_eq!(
        thinking_end["assistantMessageEvent"]["content"],
        "Read the notes first."
    );
    assert_eq!(events.last().unwrap()["type"], "agent_settled");

    // The session stores pi's representation: the whole item as the thinking signature.
    let file = env.session_files().remove(0);
    let assistant: Vec<Value> = session_lines(&file)
        .into_iter()
        .filter(|l| l["message"]["role"] == "assistant")
        .map(|l| l["message"].clone())
        .collect();
    assert_eq!(assistant.len(), 2);
    let first = &assistant[0];
    assert_eq!(first["api"], "openai-responses");
    let signature = first["content"][0]["thinkingSignature"].as_str().unwrap();
    let item: Value = serde_json::from_str(signature).unwrap();
    assert_eq!(item, input[2]);
    assert_eq!(first["content"][1]["id"], "call_1|fc_call_1");
    assert_eq!(
        (
            first["usage"]["input"].clone(),
            first["usage"]["cacheRead"].clone()
        ),
        (json!(100), json!(900))
    );
    assert_eq!(
        assistant[1]["content"][0]["textSignature"],
        r#"{"v":1,"id":"msg_mock-1"}"#
    );
}
