//! Finding 9: the provider's API key was in every sandboxed command's environment (and in
//! agent-lsp's own `/proc/<pid>/environ`, readable by the command).

use super::attack;

const READ_KEY: &str = "echo \"key=${OPENAI_API_KEY:-none}\"; \
     for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null; done | grep -c '^OPENAI_API_KEY=test-key' || true";

#[tokio::test]
async fn the_providers_key_is_not_given_to_commands_unless_passed() {
    let a = attack(&[READ_KEY.into()], &[], |_| {}).await;
    a.assert_ran();
    // The jail's init is outside the command's Landlock domain: its environ is not readable.
    let result = a.result();
    assert!(
        result.starts_with("key=none\n") && result.ends_with("\n0"),
        "{result}"
    );

    let passed = attack(
        &[READ_KEY.into()],
        &["--sandbox-env", "OPENAI_API_KEY"],
        |_| {},
    )
    .await;
    passed.assert_ran();
    assert!(
        passed.result().starts_with("key=test-key\n"),
        "{}",
        passed.result()
    );
}

#[tokio::test]
async fn keys_named_by_models_json_are_removed_too() {
    let a = attack(&["echo \"gw=${GATEWAY_TOKEN:-none}\"".into()], &[], |env| {
        let config = env.home.path().join("config/agent-lsp");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("models.json"),
            r#"{"providers":{"gw":{"baseUrl":"http://127.0.0.1:9/v1","api":"openai-completions",
               "apiKey":"$GATEWAY_TOKEN","models":[{"id":"m"}]}}}"#,
        )
        .unwrap();
        env.set("GATEWAY_TOKEN", "gw-secret");
    })
    .await;
    a.assert_ran();
    assert_eq!(a.result(), "gw=none");
}

#[tokio::test]
async fn web_search_keys_are_removed_too() {
    let read = "echo \"brave=${BRAVE_API_KEY:-none} tavily=${TAVILY_API_KEY:-none}\"";
    let a = attack(&[read.into()], &[], |env| {
        env.set("BRAVE_API_KEY", "brave-secret");
        env.set("TAVILY_API_KEY", "tavily-secret");
    })
    .await;
    a.assert_ran();
    assert_eq!(a.result(), "brave=none tavily=none");
}
