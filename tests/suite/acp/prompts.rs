//! Initialization, prompts and their updates, stop reasons, cancellation, bad input.

use serde_json::json;

use super::support::{AcpEnv, steps};

#[tokio::test]
async fn initialize_advertises_the_agent_and_unknown_input_keeps_the_connection() {
    let env = AcpEnv::with_script(json!({"responses": [{"text": "still here"}]})).await;
    let t = env
        .run(json!({"steps": steps(&env, vec![
            json!({"op": "raw", "line": "{not json"}),
            json!({"op": "raw", "line": "{\"jsonrpc\":\"2.0\",\"id\":\"raw-1\",\"method\":\"nope/nope\"}"}),
            json!({"op": "raw", "line": "{\"jsonrpc\":\"2.0\",\"method\":\"_unknown/notification\",\"params\":{\"_meta\":{\"x\":1}}}"}),
            json!({"op": "prompt", "text": "hi", "as": "p"}),
        ])}))
        .await;
    let init = t.result("initialize");
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentInfo"]["name"], "agent-lsp");
    assert_eq!(init["authMethods"][0]["id"], "anthropic-api-key");
    let caps = &init["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(caps["promptCapabilities"]["image"], true);
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(caps["mcpCapabilities"]["http"], true);
    for cap in ["list", "resume", "close"] {
        assert!(
            caps["sessionCapabilities"][cap].is_object(),
            "{cap}: {caps}"
        );
    }
    assert_eq!(caps["_meta"]["agent-lsp"]["steer"], "_agent-lsp/steer");
    assert_eq!(caps["_meta"]["agent-lsp"]["revert"], "_agent-lsp/revert");
    // The malformed line: a parse error with id null; the unknown method: -32601.
    let errors = t.null_id_errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["code"], -32700);
    let unknown = (t.incoming().into_iter())
        .find(|m| m["id"] == "raw-1")
        .expect("the unknown method was answered");
    assert_eq!(unknown["error"]["code"], -32601);
    // And the connection still works.
    assert_eq!(t.stop_reason("p"), "end_turn");
    assert_eq!(t.agent_text(), "still here");
}

#[tokio::test]
async fn without_a_model_session_new_asks_for_auth_naming_what_to_set() {
    let env = AcpEnv::without_model();
    let t = env.run(json!({"steps": steps(&env, vec![])})).await;
    let error = t.error("new");
    assert_eq!(error["code"], -32000, "ACP's auth_required: {error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("AGENT_LSP_MODEL=provider/id"), "{message}");
    assert!(
        message.contains("ANTHROPIC_API_KEY or OPENAI_API_KEY"),
        "{message}"
    );
}

#[tokio::test]
async fn a_prompt_with_an_edit_shows_thoughts_tool_calls_diffs_and_usage_before_its_answer() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"thinking": "let me look", "toolCalls": [
            {"id": "r1", "name": "read", "arguments": {"path": "a.txt"}},
            {"id": "e1", "name": "edit", "arguments": {"path": "a.txt",
                "edits": [{"oldText": "hello", "newText": "goodbye"}]}}]},
        {"text": "Edited.", "usage": {"input": 100, "output": 20, "cacheRead": 30}}
    ]}))
    .await;
    env.write("a.txt", "hello world\n");
    let t = env
        .run(json!({
            "client": {"permissions": ["allow_once"]},
            "steps": steps(&env, vec![json!({"op": "prompt", "text": "edit a.txt", "as": "p"})]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    assert_eq!(t.chunks("agent_thought_chunk"), "let me look");
    assert_eq!(t.agent_text(), "Edited.");
    let path = env.file("a.txt");
    // The read needs no permission and shows what it read.
    let read = t.tool_call("r1");
    assert_eq!(read[0]["sessionUpdate"], "tool_call");
    assert_eq!(read[0]["kind"], "read");
    assert_eq!(read[0]["title"], "Read a.txt");
    assert_eq!(read[0]["locations"][0]["path"], path);
    assert_eq!(read[0]["rawInput"]["path"], "a.txt");
    assert_eq!(t.final_status("r1"), "completed");
    let last = read.last().unwrap();
    assert!(
        last["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("hello world")
    );
    // The edit asks, with its diff, and its final update carries the whole-file diff.
    let asks = t.agent_requests("session/request_permission");
    assert_eq!(asks.len(), 1);
    let ask = asks[0];
    assert_eq!(ask["toolCall"]["toolCallId"], "e1");
    assert_eq!(ask["toolCall"]["kind"], "edit");
    let kinds: Vec<_> = (ask["options"].as_array().unwrap().iter())
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    // "Always" for the session, the project and the user (protocol.md §9.4).
    assert_eq!(
        kinds,
        [
            "allow_once",
            "allow_always",
            "allow_always",
            "allow_always",
            "reject_once",
            "reject_always"
        ]
    );
    let proposed = &ask["toolCall"]["content"][0];
    assert_eq!(proposed["type"], "diff");
    assert_eq!(proposed["path"], path);
    assert_eq!(proposed["oldText"], "hello world\n");
    assert_eq!(proposed["newText"], "goodbye world\n");
    let edit = t.tool_call("e1");
    let statuses: Vec<_> = edit.iter().filter_map(|u| u["status"].as_str()).collect();
    assert_eq!(statuses, ["in_progress", "completed"]);
    let done = edit.last().unwrap();
    assert_eq!(done["content"][0]["type"], "diff");
    assert_eq!(done["content"][0]["oldText"], "hello world\n");
    assert_eq!(done["content"][0]["newText"], "goodbye world\n");
    assert_eq!(
        env.read("a.txt"),
        "goodbye world\n",
        "no client fs: the disk"
    );
    // Usage: the context of the last response against the model's window.
    let usage = (t.updates().into_iter())
        .rfind(|u| u["sessionUpdate"] == "usage_update")
        .unwrap();
    assert_eq!(usage["used"], 150);
    assert!(usage["size"].as_u64().unwrap() > 0);
    assert_eq!(usage["cost"]["currency"], "USD");
}

#[tokio::test]
async fn stop_reasons_map_from_the_run() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"text": "cut", "stopReason": "length"},
        {"text": "no", "stopReason": "content_filter"},
        {"status": 400, "body": "{\"error\": {\"message\": \"bad request body\"}}"}
    ]}))
    .await;
    // A client newer than v1 is answered with v1; a cancel while idle changes nothing.
    let t = env
        .run(json!({"steps": [
            {"op": "initialize", "protocolVersion": 2},
            {"op": "new", "cwd": env.project()},
            {"op": "cancel"},
            {"op": "prompt", "text": "one", "as": "length"},
            {"op": "prompt", "text": "two", "as": "refusal"},
            {"op": "prompt", "text": "three", "as": "failed"},
        ]}))
        .await;
    assert_eq!(t.result("initialize")["protocolVersion"], 1);
    assert_eq!(t.stop_reason("length"), "max_tokens");
    assert_eq!(t.stop_reason("refusal"), "refusal");
    let error = t.error("failed");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("bad request body"),
        "{error}"
    );
}

#[tokio::test]
async fn cancel_while_streaming_answers_cancelled_after_the_last_update_and_the_session_goes_on() {
    let long = "word ".repeat(400);
    let env = AcpEnv::with_script(json!({"responses": [
        {"text": long, "chunkSize": 5, "delayMs": 5},
        {"text": "after"}
    ]}))
    .await;
    let t = env
        .run(json!({"steps": steps(&env, vec![
            json!({"op": "prompt", "text": "talk", "as": "p1", "wait": false}),
            json!({"op": "until", "update": "agent_message_chunk", "count": 3}),
            json!({"op": "cancel"}),
            json!({"op": "await", "name": "p1"}),
            json!({"op": "prompt", "text": "again", "as": "p2"}),
        ])}))
        .await;
    assert_eq!(t.stop_reason("p1"), "cancelled");
    assert_eq!(t.stop_reason("p2"), "end_turn");
    assert!(t.agent_text().ends_with("after"));
    assert!(
        t.agent_text().len() < long.len() + 5,
        "the stream stopped early"
    );
}
