//! The loopback mock provider, checked with a plain HTTP client: wire formats, faults, recording,
//! history invariants, and the `agent-lsp-mock` binary.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use agent_lsp::testing::{MockProvider, MockResponse, MockScript};
use serde_json::{Value, json};

/// A plain client that never goes through a proxy (the mock is on loopback).
fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

fn request(client: &reqwest::Client, url: &str, body: &Value) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
}

async fn post(url: &str, body: &Value) -> (u16, String) {
    let response = request(&client(), url, body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

fn user(text: &str) -> Value {
    json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": text}]})
}

fn script(json_text: &str) -> MockScript {
    MockScript::from_json(json_text).unwrap()
}

#[tokio::test]
async fn serves_openai_and_anthropic_streams_and_records_requests() {
    let mock = MockProvider::start(script(
        r#"{"responses": [{"text": "Hello"}, {"thinking": "hmm", "text": "Answer",
            "usage": {"input": 10, "output": 5, "cacheRead": 3}}]}"#,
    ))
    .await
    .unwrap();
    let openai = format!("{}/chat/completions", mock.openai_base_url());
    let (status, body) = post(&openai, &user("hi")).await;
    assert_eq!(status, 200);
    assert!(body.contains(r#""content":"Hello""#), "{body}");
    assert!(body.trim_end().ends_with("data: [DONE]"));

    let anthropic = format!("{}/v1/messages", mock.anthropic_base_url());
    let (status, body) = post(&anthropic, &user("again")).await;
    assert_eq!(status, 200);
    for needle in [
        "event: message_start",
        r#""cache_read_input_tokens":3"#,
        r#""thinking":"hmm""#,
        "signature_delta",
        r#""text":"Answer""#,
        r#""stop_reason":"end_turn""#,
        "event: message_stop",
    ] {
        assert!(body.contains(needle), "missing {needle} in {body}");
    }
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[1].body["messages"][0]["content"], "again");
    assert_eq!(requests[1].header("content-type"), Some("application/json"));
    assert_eq!(mock.remaining(), 0);
}

#[tokio::test]
async fn exhausted_script_and_status_faults_answer_with_http_errors() {
    let mock = MockProvider::start(script(
        r#"{"responses": [{"status": 429, "retryAfter": 7, "body": "slow down"}]}"#,
    ))
    .await
    .unwrap();
    let url = format!("{}/chat/completions", mock.openai_base_url());
    let response = request(&client(), &url, &user("x")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    assert_eq!(response.text().await.unwrap(), "slow down");
    let (status, body) = post(&url, &user("x")).await;
    assert_eq!(status, 500);
    assert!(body.contains("no more scripted responses"));
    mock.push_response(MockResponse::status(503, "pushed later"));
    let (status, body) = post(&url, &user("x")).await;
    assert_eq!((status, body.as_str()), (503, "pushed later"));
    assert_eq!(mock.requests()[2].response_index, Some(1));
}

#[tokio::test]
async fn history_violations_fail_the_request_loudly() {
    let mock = MockProvider::start(MockScript::texts(["unused"]))
        .await
        .unwrap();
    let url = format!("{}/chat/completions", mock.openai_base_url());
    let orphan = json!({"model": "m", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "user", "content": "next"}]});
    let (status, body) = post(&url, &orphan).await;
    assert_eq!(status, 400);
    assert!(body.contains("history invariant violated"), "{body}");
    let stray = json!({"model": "m", "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope"}]}]});
    let (status, _) = post(
        &format!("{}/v1/messages", mock.anthropic_base_url()),
        &stray,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(mock.violations().len(), 2);
    assert_eq!(mock.remaining(), 1, "violations do not consume a response");
}

#[tokio::test]
async fn refused_and_cut_connections_are_transport_errors() {
    let mock = MockProvider::start(script(
        r#"{"responses": [{"refuse": true}, {"text": "partial answer", "chunkSize": 2,
            "disconnectAfterChunks": 3}]}"#,
    ))
    .await
    .unwrap();
    let url = format!("{}/chat/completions", mock.openai_base_url());
    let client = client();
    assert!(request(&client, &url, &user("x")).send().await.is_err());
    let response = request(&client, &url, &user("x")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(
        response.text().await.is_err(),
        "a cut chunked body is an error"
    );
    let requests = mock.requests();
    assert!(requests[0].refused);
    assert_eq!(requests[1].response_index, Some(1));
}

#[tokio::test]
async fn byte_level_writes_split_utf8_and_faults_shape_the_stream() {
    let mock = MockProvider::start(script(
        r#"{"responses": [
            {"text": "héllo wörld 😀", "writeBytes": 3},
            {"text": "x", "malformedAfterChunks": 1, "omitDone": true, "stopReason": "weird"},
            {"toolCalls": [{"id": "t", "name": "write", "rawArguments": "{\"path\": \"a"}],
             "stopReason": "max_tokens", "omitDone": true}]}"#,
    ))
    .await
    .unwrap();
    let openai = format!("{}/chat/completions", mock.openai_base_url());
    let (_, body) = post(&openai, &user("x")).await;
    assert!(body.contains("héllo wörld 😀"), "{body}");
    let (_, body) = post(&openai, &user("x")).await;
    assert!(body.contains("data: {\"id\": \"broken\""));
    assert!(body.contains(r#""finish_reason":"weird""#));
    assert!(!body.contains("[DONE]"));
    let (_, body) = post(
        &format!("{}/v1/messages", mock.anthropic_base_url()),
        &user("x"),
    )
    .await;
    assert!(
        body.contains(r#""partial_json":"{\"path\": \"a""#),
        "{body}"
    );
    assert!(body.contains(r#""stop_reason":"max_tokens""#));
    assert!(!body.contains("message_stop"));
}

#[tokio::test]
async fn the_binary_announces_its_urls_serves_and_logs() {
    let dir = tempfile::tempdir().unwrap();
    let script_path = dir.path().join("script.json");
    std::fs::write(
        &script_path,
        r#"{"responses": [{"text": "from the binary"}]}"#,
    )
    .unwrap();
    let log_path = dir.path().join("requests.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-lsp-mock"))
        .arg("--script")
        .arg(&script_path)
        .arg("--log")
        .arg(&log_path)
        .env("HOME", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let announced: Value = serde_json::from_str(&line).unwrap();
    let port = announced["port"].as_u64().unwrap();
    assert_eq!(
        announced["openaiBaseUrl"],
        format!("http://127.0.0.1:{port}/v1")
    );
    assert_eq!(
        announced["anthropicBaseUrl"],
        format!("http://127.0.0.1:{port}")
    );
    let url = format!(
        "{}/chat/completions",
        announced["openaiBaseUrl"].as_str().unwrap()
    );
    let (status, body) = post(&url, &user("logged")).await;
    assert_eq!(status, 200);
    assert!(body.contains("from the binary"));
    drop(child.stdin.take());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "closing stdin stops the mock cleanly");
    let log = std::fs::read_to_string(&log_path).unwrap();
    let entry: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(entry["path"], "/v1/chat/completions");
    assert_eq!(entry["body"]["messages"][0]["content"], "logged");
}

#[tokio::test]
async fn the_shared_process_helper_serves_both_apis() {
    use crate::suite::support::mock_provider::MockProcess;
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProcess::start(
        dir.path(),
        &json!({"responses": [{"text": "one"}, {"text": "two"}]}),
    );
    assert!(
        mock.openai_base_url
            .ends_with(&format!(":{}/v1", mock.port))
    );
    let (_, body) = post(
        &format!("{}/chat/completions", mock.openai_base_url),
        &user("a"),
    )
    .await;
    assert!(body.contains(r#""content":"one""#));
    let (_, body) = post(
        &format!("{}/v1/messages", mock.anthropic_base_url),
        &user("b"),
    )
    .await;
    assert!(body.contains(r#""text":"two""#));
    let paths: Vec<Value> = mock.requests().iter().map(|r| r["path"].clone()).collect();
    assert_eq!(
        paths,
        [json!("/v1/chat/completions"), json!("/v1/messages")]
    );
}

#[tokio::test]
async fn the_binary_keeps_serving_with_stdin_at_dev_null() {
    let dir = tempfile::tempdir().unwrap();
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, r#"{"responses": [{"text": "still here"}]}"#).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-lsp-mock"))
        .arg("--script")
        .arg(&script_path)
        .env("HOME", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let announced: Value = serde_json::from_str(&line).unwrap();
    let url = format!(
        "{}/chat/completions",
        announced["openaiBaseUrl"].as_str().unwrap()
    );
    let (status, body) = post(&url, &user("x")).await;
    assert_eq!(status, 200);
    assert!(body.contains("still here"));
    assert!(child.try_wait().unwrap().is_none(), "still running");
    child.kill().unwrap();
    child.wait().unwrap();
}
