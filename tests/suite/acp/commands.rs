//! Slash commands in ACP sessions: `available_commands_update` (templates, built-ins, MCP
//! prompts as they arrive), a template with arguments, `/model`, `/compact`, MCP prompts.

use serde_json::{Value, json};

use super::support::{AcpEnv, Transcript, steps};

/// The last `available_commands_update`'s commands.
fn last_commands(t: &Transcript) -> Vec<Value> {
    let update = (t.updates().into_iter().rev())
        .find(|u| u["sessionUpdate"] == "available_commands_update")
        .expect("no available_commands_update");
    update["availableCommands"].as_array().unwrap().clone()
}

fn command<'a>(commands: &'a [Value], name: &str) -> &'a Value {
    (commands.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no {name} in {commands:?}"))
}

/// The text of the last user message the mock was sent.
fn last_user_text(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let user = (messages.iter().rev())
        .find(|m| m["role"] == "user")
        .unwrap();
    match &user["content"] {
        Value::String(s) => s.clone(),
        blocks => (blocks.as_array().unwrap().iter())
            .filter_map(|b| b["text"].as_str())
            .collect(),
    }
}

#[tokio::test]
async fn a_template_with_arguments_is_expanded_and_listed_after_session_new() {
    let env = AcpEnv::with_script(json!({"responses": [{"text": "reviewed"}]})).await;
    let prompts = env.project().join(".agent-lsp/prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(
        prompts.join("review.md"),
        "---\ndescription: Review a file\nargument-hint: <file> [focus]\n---\nReview $1 for $2.",
    )
    .unwrap();
    let t = env
        .run(json!({"steps": steps(&env, vec![
            json!({"op": "until", "update": "available_commands_update"}),
            json!({"op": "prompt", "text": "/review src/main.rs \"error handling\"", "as": "p"}),
        ])}))
        .await;
    let commands = last_commands(&t);
    let review = command(&commands, "review");
    assert_eq!(review["description"], "Review a file");
    assert_eq!(review["input"]["hint"], "<file> [focus]");
    assert_eq!(
        command(&commands, "compact")["input"]["hint"],
        "[instructions]"
    );
    assert_eq!(
        command(&commands, "model")["input"]["hint"],
        "[provider/id]"
    );
    assert_eq!(t.stop_reason("p"), "end_turn");
    assert_eq!(t.agent_text(), "reviewed");
    let requests = env.mock.as_ref().unwrap().requests();
    assert_eq!(
        last_user_text(&requests[0].body),
        "Review src/main.rs for error handling."
    );
}

#[tokio::test]
async fn slash_model_says_the_model_and_switches_it_with_a_config_option_update() {
    let env = AcpEnv::with_script(json!({"responses": [{"text": "from o4"}]})).await;
    let t = env
        .run(json!({"steps": steps(&env, vec![
            json!({"op": "prompt", "text": "/model", "as": "show"}),
            json!({"op": "prompt", "text": "/model openai/o4-mini", "as": "switch"}),
            json!({"op": "prompt", "text": "/model nope/nope", "as": "bad"}),
            json!({"op": "prompt", "text": "hi", "as": "p"}),
        ])}))
        .await;
    assert_eq!(t.stop_reason("show"), "end_turn");
    assert_eq!(t.stop_reason("switch"), "end_turn");
    assert_eq!(t.error("bad")["code"], -32602);
    let text = t.agent_text();
    assert!(
        text.starts_with("Model: openai/gpt-4.1 (thinking: off)Switched to openai/o4-mini"),
        "{text}"
    );
    let configs: Vec<_> = (t.updates().into_iter())
        .filter(|u| u["sessionUpdate"] == "config_option_update")
        .collect();
    assert_eq!(configs.len(), 1, "only the switch updates the options");
    assert_eq!(
        configs[0]["configOptions"][0]["currentValue"],
        "openai/o4-mini"
    );
    let requests = env.mock.as_ref().unwrap().requests();
    assert_eq!(requests.len(), 1, "the commands never reached the model");
    assert_eq!(requests[0].body["model"], "o4-mini");
}

#[tokio::test]
async fn slash_compact_summarises_shows_the_summary_and_the_next_prompt_starts_from_it() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"text": "hello"},
        {"text": "SUMMARY OF IT"},
        {"text": "after"}
    ]}))
    .await;
    let config = env.home.path().join("config/agent-lsp");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("settings.json"),
        json!({"compaction": {"keepRecentTokens": 1}}).to_string(),
    )
    .unwrap();
    let t = env
        .run(json!({"steps": steps(&env, vec![
            json!({"op": "prompt", "text": "hi", "as": "p1"}),
            json!({"op": "prompt", "text": "/compact keep the names", "as": "c"}),
            json!({"op": "prompt", "text": "go on", "as": "p2"}),
        ])}))
        .await;
    assert_eq!(t.stop_reason("p1"), "end_turn");
    assert_eq!(t.stop_reason("c"), "end_turn");
    assert_eq!(t.stop_reason("p2"), "end_turn");
    let text = t.agent_text();
    assert!(text.starts_with("hello"), "{text}");
    assert!(text.contains("Compacted the conversation"), "{text}");
    assert!(text.contains("SUMMARY OF IT"), "{text}");
    assert!(text.ends_with("after"), "{text}");
    let requests = env.mock.as_ref().unwrap().requests();
    assert_eq!(requests.len(), 3, "one summary request");
    let asked = requests[1].body.to_string();
    assert!(
        asked.contains("keep the names"),
        "the instructions: {asked}"
    );
    let next = requests[2].body.to_string();
    assert!(next.contains("SUMMARY OF IT"), "{next}");
}

#[tokio::test]
async fn mcp_prompts_arrive_as_a_commands_update_and_expand() {
    let everything = crate::suite::mcp::npm_servers()
        .join("@modelcontextprotocol/server-everything/dist/index.js");
    let env = AcpEnv::with_script(json!({"responses": [{"text": "sunny"}]})).await;
    let server = json!({"name": "everything", "command": "node",
                        "args": [everything.display().to_string()], "env": []});
    let t = env
        .run(json!({"steps": [
            {"op": "initialize"},
            {"op": "new", "cwd": env.project(), "mcpServers": [server]},
            {"op": "until", "update": "available_commands_update", "count": 2},
            {"op": "prompt", "text": "/everything:args-prompt \"New York\" NY", "as": "p"},
        ]}))
        .await;
    let commands = last_commands(&t);
    assert_eq!(
        command(&commands, "everything:args-prompt")["input"]["hint"],
        "<city> [state]"
    );
    assert_eq!(t.stop_reason("p"), "end_turn");
    let requests = env.mock.as_ref().unwrap().requests();
    assert_eq!(
        last_user_text(&requests[0].body),
        "What's weather in New York, NY?"
    );
}
