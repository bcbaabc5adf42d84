//! ACP authentication (issue 33, protocol.md §9.4) through the official client library: the
//! methods `initialize` advertises, a `terminal` login run as a client runs it, `authenticate`
//! before and after, a prompt with the stored key, and `logout`.

use agent_lsp::testing::{MockProvider, MockScript};
use serde_json::json;

use super::support::AcpEnv;

const KEY: &str = "sk-ant-acp-41c9";

#[tokio::test]
async fn initialize_advertises_key_methods_and_the_terminal_login_only_to_a_client_that_runs_it() {
    let env = AcpEnv::without_model();
    for terminal in [false, true] {
        let t = env
            .run(json!({"client": {"authTerminal": terminal},
                        "steps": [{"op": "initialize"}]}))
            .await;
        let init = t.result("initialize");
        let methods = init["authMethods"].as_array().unwrap();
        let ids: Vec<&str> = methods.iter().map(|m| m["id"].as_str().unwrap()).collect();
        let mut expected = vec!["anthropic-api-key", "openai-api-key"];
        if terminal {
            expected.push("agent-lsp-login");
        }
        assert_eq!(ids, expected, "terminal: {terminal}");
        assert_eq!(methods[0]["type"], "env_var");
        assert_eq!(methods[0]["vars"], json!([{"name": "ANTHROPIC_API_KEY"}]));
        if terminal {
            assert_eq!(methods[2]["type"], "terminal");
            assert_eq!(methods[2]["args"], json!(["login"]));
        }
        assert!(
            init["agentCapabilities"]["auth"]["logout"].is_object(),
            "{init}"
        );
        // The SDK's schema takes every method: the draft `env_var` ones as `agent` methods
        // (it calls `authenticate` for them), the terminal one as a terminal method.
        let parsed = &t.0["results"]["initialize"]["parsed"]["authMethods"];
        let parsed_ids: Vec<&str> = (parsed.as_array().unwrap().iter())
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(parsed_ids, expected);
        assert!(parsed[0].get("type").is_none(), "{parsed}");
        if terminal {
            assert_eq!(parsed[2]["type"], "terminal");
        }
    }
}

#[tokio::test]
async fn a_terminal_login_authenticates_and_the_next_session_uses_the_stored_key() {
    let mock = MockProvider::start(
        MockScript::from_json(&json!({"responses": [{"text": "logged in"}]}).to_string()).unwrap(),
    )
    .await
    .unwrap();
    let mut env = AcpEnv::without_model();
    env.extra
        .push(("ANTHROPIC_BASE_URL".into(), mock.anthropic_base_url()));
    let t = env
        .run(json!({"client": {"authTerminal": true}, "steps": [
            {"op": "initialize"},
            {"op": "new", "cwd": env.project(), "as": "before"},
            {"op": "request", "method": "authenticate",
             "params": {"methodId": "anthropic-api-key"}, "as": "auth-before"},
            {"op": "request", "method": "authenticate",
             "params": {"methodId": "agent-lsp-login"}, "as": "auth-terminal"},
            {"op": "terminalAuth", "methodId": "agent-lsp-login",
             "input": format!("anthropic\n{KEY}\n"), "as": "login"},
            {"op": "request", "method": "authenticate",
             "params": {"methodId": "anthropic-api-key"}, "as": "auth-after"},
            {"op": "new", "cwd": env.project(), "as": "after"},
            {"op": "prompt", "text": "hi", "as": "p"},
            {"op": "request", "method": "logout", "params": {}, "as": "logout"},
            {"op": "request", "method": "authenticate",
             "params": {"methodId": "anthropic-api-key"}, "as": "auth-logged-out"},
        ]}))
        .await;
    let before = t.error("before");
    assert_eq!(before["code"], -32000, "auth_required: {before}");
    assert!(
        before["message"]
            .as_str()
            .unwrap()
            .contains("agent-lsp login"),
        "{before}"
    );
    assert_eq!(t.error("auth-before")["code"], -32000);
    assert!(
        t.error("auth-before")["message"]
            .as_str()
            .unwrap()
            .contains("ANTHROPIC_API_KEY is neither set"),
        "{}",
        t.error("auth-before")
    );
    assert_eq!(
        t.error("auth-terminal")["code"],
        -32602,
        "a terminal method is not passed to authenticate"
    );
    let login = t.result("login");
    assert_eq!(login["exitCode"], 0, "{login}");
    assert!(
        login["output"]
            .as_str()
            .unwrap()
            .contains("Stored ANTHROPIC_API_KEY"),
        "{login}"
    );
    assert_eq!(t.result("auth-after"), &json!({}));
    assert_eq!(t.stop_reason("p"), "end_turn");
    assert_eq!(t.agent_text(), "logged in");
    assert_eq!(
        mock.requests()[0]
            .headers
            .get("x-api-key")
            .map(String::as_str),
        Some(KEY),
        "the stored key reached the provider"
    );
    assert_eq!(t.result("logout"), &json!({}));
    assert!(
        !env.home
            .path()
            .join("config/agent-lsp/credentials/keys.json")
            .exists()
    );
    assert_eq!(t.error("auth-logged-out")["code"], -32000);
}
