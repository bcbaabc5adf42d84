//! Daemon tests of project instructions and slash commands: context files from nested
//! directories and the global one, skills in the system prompt, prompt templates (also
//! `.claude/commands/`) with arguments, the `/model` and `/compact` built-ins, and MCP prompts as
//! commands (`agent/listCommands`, `commands_update`).

use std::path::Path;

use super::*;
use crate::suite::mcp::npm_servers;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The system prompt of an OpenAI request.
fn system_prompt(body: &Value) -> String {
    let texts = crate::suite::support::cli_run::request_texts(body);
    let system = texts.iter().find(|(role, _)| role == "system");
    system.map(|(_, t)| t.clone()).unwrap_or_default()
}

/// The last user text of an OpenAI request.
fn last_user_text(body: &Value) -> String {
    let texts = crate::suite::support::cli_run::request_texts(body);
    let user = texts.iter().rev().find(|(role, _)| role == "user");
    user.map(|(_, t)| t.clone()).unwrap_or_default()
}

async fn new_session(client: &LspClient, cwd: &Path) -> String {
    let created = client
        .request("agent/newSession", json!({"cwd": cwd}))
        .await;
    created["sessionId"].as_str().unwrap().to_owned()
}

async fn prompt_and_settle(client: &LspClient, session: &str, text: &str) {
    let (_, run, _) = prompt(client, json!({"sessionId": session, "message": text})).await;
    client.wait_settled(session, &run).await;
}

#[tokio::test]
async fn context_files_from_the_global_dir_and_every_parent_reach_the_system_prompt() {
    let (mock, client) = agent_setup(
        vec![MockResponse::text("ok")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let root = std::fs::canonicalize(client.workspace.path()).unwrap();
    let global = client.home.path().join("config/agent-lsp/AGENTS.md");
    write(&global, "Global rule: answer in English.");
    write(&root.join("AGENTS.md"), "Project rule: run cargo fmt.");
    write(&root.join("crates/core/CLAUDE.md"), "Core rule: no unsafe.");
    // A directory's AGENTS.md wins over its CLAUDE.md, as in pi.
    write(
        &root.join("crates/AGENTS.md"),
        "Crates rule: small modules.",
    );
    write(&root.join("crates/CLAUDE.md"), "never loaded");
    let skill = client
        .home
        .path()
        .join("config/agent-lsp/skills/release/SKILL.md");
    write(
        &skill,
        "---\nname: release\ndescription: Cut a release & tag it\n---\nSteps…\n",
    );
    // `.agents/skills` of a parent directory of the cwd (pi walks up to the git root).
    let project_skill = root.join(".agents/skills/bench/SKILL.md");
    write(
        &project_skill,
        "---\ndescription: Run the benchmarks\n---\nRun them.\n",
    );
    let cwd = root.join("crates/core");
    let session = new_session(&client, &cwd).await;

    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    let expected = [
        global.display().to_string(),
        root.join("AGENTS.md").display().to_string(),
        root.join("crates/AGENTS.md").display().to_string(),
        root.join("crates/core/CLAUDE.md").display().to_string(),
    ];
    assert_eq!(state["contextFiles"], json!(expected), "{state}");

    prompt_and_settle(&client, &session, "hi").await;
    let prompt = system_prompt(&mock.requests()[0].body);
    let at = |text: &str| {
        prompt
            .find(text)
            .unwrap_or_else(|| panic!("{text:?} not in {prompt}"))
    };
    assert!(at("Global rule") < at("Project rule"));
    assert!(at("Project rule") < at("Crates rule"));
    assert!(at("Crates rule") < at("Core rule"));
    assert!(!prompt.contains("never loaded"));
    assert!(prompt.contains(&format!(
        "<project_instructions path=\"{}\">\nCore rule: no unsafe.\n</project_instructions>",
        root.join("crates/core/CLAUDE.md").display()
    )));
    // Skills: named with their path, for the model to read on demand (the body is not sent).
    assert!(prompt.contains("<name>release</name>"), "{prompt}");
    assert!(prompt.contains("<description>Cut a release &amp; tag it</description>"));
    assert!(prompt.contains(&format!("<location>{}</location>", skill.display())));
    assert!(
        prompt.contains("<name>bench</name>"),
        "named after its directory"
    );
    assert!(prompt.contains(&format!("<location>{}</location>", project_skill.display())));
    assert!(!prompt.contains("Steps…"));
    assert!(prompt.contains("Use the read tool to load a skill's file"));
}

#[tokio::test]
async fn context_files_false_leaves_them_out() {
    let (mock, client) = agent_setup(
        vec![MockResponse::text("ok")],
        LspClient::agent_caps(false),
        json!({"contextFiles": false}),
    )
    .await;
    let root = std::fs::canonicalize(client.workspace.path()).unwrap();
    write(&root.join("AGENTS.md"), "Project rule: run cargo fmt.");
    let session = new_session(&client, &root).await;
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["contextFiles"], json!([]), "{state}");
    prompt_and_settle(&client, &session, "hi").await;
    let prompt = system_prompt(&mock.requests()[0].body);
    assert!(!prompt.contains("Project rule"), "{prompt}");
    assert!(!prompt.contains("project_context"));
}

#[tokio::test]
async fn templates_expand_with_arguments_before_the_loop() {
    let (mock, client) = agent_setup(
        vec![
            MockResponse::text("reviewed"),
            MockResponse::text("fixed"),
            MockResponse::text("unknown went through"),
            MockResponse::text("followed up"),
            MockResponse::text("skilled"),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let root = std::fs::canonicalize(client.workspace.path()).unwrap();
    write(
        &root.join(".agent-lsp/prompts/review.md"),
        "---\ndescription: Review a file\nargument-hint: <file> [focus]\n---\nReview $1, focus: ${@:2}.\nAll: $@",
    );
    write(
        &root.join(".claude/commands/fix.md"),
        "Fix the issue $ARGUMENTS and add a test.\n",
    );
    let skill = root.join(".agent-lsp/skills/deploy/SKILL.md");
    write(
        &skill,
        "---\nname: deploy\ndescription: Deploy the app\n---\n\nRun ./deploy.sh.\n",
    );
    let session = new_session(&client, &root).await;

    let listed = client
        .request("agent/listCommands", json!({"sessionId": session}))
        .await;
    let commands = listed["commands"].as_array().unwrap();
    let find = |name: &str| {
        (commands.iter().find(|c| c["name"] == name))
            .unwrap_or_else(|| panic!("no {name} in {listed}"))
            .clone()
    };
    assert_eq!(find("compact")["source"], "builtin");
    assert_eq!(find("model")["argumentHint"], "[provider/id]");
    assert_eq!(
        find("review"),
        json!({"name": "review", "description": "Review a file", "source": "prompt",
               "argumentHint": "<file> [focus]"})
    );
    assert_eq!(
        find("fix")["description"],
        "Fix the issue $ARGUMENTS and add a test."
    );

    prompt_and_settle(
        &client,
        &session,
        "/review src/lib.rs \"error paths\" naming",
    )
    .await;
    prompt_and_settle(&client, &session, "/fix #12").await;
    prompt_and_settle(&client, &session, "/nope keep me").await;
    let requests = mock.requests();
    assert_eq!(
        last_user_text(&requests[0].body),
        "Review src/lib.rs, focus: error paths naming.\nAll: src/lib.rs error paths naming"
    );
    // Without front matter the body is the file as it is (pi trims only after front matter).
    assert_eq!(
        last_user_text(&requests[1].body),
        "Fix the issue #12 and add a test.\n"
    );
    assert_eq!(last_user_text(&requests[2].body), "/nope keep me");
    // agent/followUp (and agent/steer) expand too; idle, the message starts a run.
    let (id, rx) = client
        .request_start(
            "agent/followUp",
            json!({"sessionId": session, "message": "/fix #13"}),
        )
        .await;
    let answer = tokio::time::timeout(HANG_BOUND, rx).await.unwrap().unwrap();
    assert_eq!(answer["id"], id);
    let run = answer["result"]["runId"].as_str().unwrap().to_owned();
    client.wait_settled(&session, &run).await;
    assert_eq!(
        last_user_text(&mock.requests()[3].body),
        "Fix the issue #13 and add a test.\n"
    );
    prompt_and_settle(&client, &session, "/skill:deploy to staging").await;
    assert_eq!(
        last_user_text(&mock.requests()[4].body),
        format!(
            "<skill name=\"deploy\" location=\"{}\">\nReferences are relative to {}.\n\n\
             Run ./deploy.sh.\n</skill>\n\nto staging",
            skill.display(),
            skill.parent().unwrap().display()
        )
    );
    assert_eq!(find("skill:deploy")["source"], "skill");
    // The transcript holds the expanded text, as pi records it.
    let messages = client
        .request("agent/getMessages", json!({"sessionId": session}))
        .await;
    assert!(
        messages.to_string().contains("Fix the issue #12"),
        "{messages}"
    );
}

#[tokio::test]
async fn slash_model_switches_the_next_request_and_slash_compact_is_refused_clearly() {
    let (mock, client) = two_provider_setup(vec![
        MockResponse::text("from openai"),
        MockResponse::text("from claude"),
    ])
    .await;
    let root = std::fs::canonicalize(client.workspace.path()).unwrap();
    let session = new_session(&client, &root).await;
    prompt_and_settle(&client, &session, "first").await;

    let shown = client
        .request(
            "agent/prompt",
            json!({"sessionId": session, "message": "/model"}),
        )
        .await;
    assert_eq!(shown["disposition"], "command", "{shown}");
    assert_eq!(shown["command"], "model");
    assert_eq!(shown["model"]["id"], "mock-model");
    let switched = client
        .request(
            "agent/prompt",
            json!({"sessionId": session, "message": "/model anthropic/claude-sonnet-4-5"}),
        )
        .await;
    assert_eq!(switched["disposition"], "command", "{switched}");
    assert_eq!(switched["model"]["provider"], "anthropic");
    assert!(switched.get("runId").is_none());
    let update = client
        .wait_for("model_update", |m| {
            m["params"]["event"]["type"] == "model_update"
        })
        .await;
    assert_eq!(
        update["params"]["event"]["model"]["id"],
        "claude-sonnet-4-5"
    );
    let bad = client
        .request_raw(
            "agent/prompt",
            json!({"sessionId": session, "message": "/model nope/none"}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");

    prompt_and_settle(&client, &session, "second").await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "built-ins never reach a model");
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[1].path, "/v1/messages");
    assert_eq!(requests[1].body["model"], "claude-sonnet-4-5");

    let compact = client
        .request_raw(
            "agent/prompt",
            json!({"sessionId": session, "message": "/compact keep the API"}),
        )
        .await;
    let message = compact["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("/compact is not available"), "{compact}");
}

#[tokio::test]
async fn mcp_prompts_are_commands_listed_announced_and_expanded() {
    let everything = npm_servers().join("@modelcontextprotocol/server-everything/dist/index.js");
    let (mock, client) = agent_setup(
        vec![MockResponse::text("sunny")],
        LspClient::agent_caps(false),
        json!({"mcpServers": {"everything": {"command": "node", "args": [everything]}}}),
    )
    .await;
    let root = std::fs::canonicalize(client.workspace.path()).unwrap();
    let session = new_session(&client, &root).await;
    let update = client
        .wait_for("commands_update", |m| {
            m["params"]["event"]["type"] == "commands_update"
        })
        .await;
    assert_eq!(update["params"]["sessionId"], session.as_str());
    let announced = &update["params"]["event"]["commands"];
    let listed = client
        .request("agent/listCommands", json!({"sessionId": session}))
        .await;
    assert_eq!(
        &listed["commands"], announced,
        "the event carries the new set"
    );
    let commands = listed["commands"].as_array().unwrap();
    let args_prompt = (commands
        .iter()
        .find(|c| c["name"] == "everything:args-prompt"))
    .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(args_prompt["source"], "mcp");
    assert_eq!(args_prompt["argumentHint"], "<city> [state]");
    assert!(
        commands
            .iter()
            .any(|c| c["name"] == "everything:simple-prompt")
    );

    let answer = client
        .request(
            "agent/prompt",
            json!({"sessionId": session, "message": "/everything:args-prompt \"New York\" NY"}),
        )
        .await;
    assert_eq!(answer["disposition"], "expanding", "{answer}");
    assert_eq!(answer["command"], "everything:args-prompt");
    let end = client
        .wait_for("the run's end", |m| {
            m["params"]["event"]["type"] == "agent_settled"
        })
        .await;
    assert_eq!(end["params"]["sessionId"], session.as_str());
    let requests = mock.requests();
    assert_eq!(
        last_user_text(&requests[0].body),
        "What's weather in New York, NY?"
    );
}
