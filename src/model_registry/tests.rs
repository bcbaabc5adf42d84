//! Unit tests for model resolution: every branch of the default, keys, models.json, errors.

use std::io::{Read, Write};
use std::net::TcpListener;

use super::*;

fn env(pairs: &[(&str, &str)]) -> EnvSource {
    EnvSource::from_pairs(pairs.iter().copied())
}

/// `pairs` plus `XDG_CONFIG_HOME` at a temp dir whose `agent-lsp/models.json` holds
/// `models_json`; the dir lives as long as the returned guard.
fn with_models_json(models_json: &str, pairs: &[(&str, &str)]) -> (tempfile::TempDir, EnvSource) {
    let config = tempfile::tempdir().unwrap();
    let dir = config.path().join("agent-lsp");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("models.json"), models_json).unwrap();
    let home = config.path().to_str().unwrap();
    let e = EnvSource::from_pairs(
        [("XDG_CONFIG_HOME", home)]
            .into_iter()
            .chain(pairs.iter().copied()),
    );
    (config, e)
}

/// An env with an empty HOME (no models.json, no stored keys) and Ollama looked for on `port`.
fn ollama_env(home: &tempfile::TempDir, port: u16) -> EnvSource {
    env(&[
        ("HOME", home.path().to_str().unwrap()),
        ("OLLAMA_HOST", &format!("127.0.0.1:{port}")),
    ])
}

/// A port on which nothing listens (bound, then released).
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn provider_slash_id_resolves_a_builtin_with_its_key() {
    let resolved =
        resolve_model(Some("openai/gpt-4.1"), &env(&[("OPENAI_API_KEY", "sk-1")])).unwrap();
    assert_eq!(resolved.model.base_url, "https://api.openai.com/v1");
    assert_eq!(resolved.model.api, "openai-completions");
    assert_eq!(resolved.model.cost.input, 2.0);
    assert_eq!(resolved.api_key.as_deref(), Some("sk-1"));
    assert_eq!(resolved.spec(), "openai/gpt-4.1");
}

#[test]
fn base_url_env_repoints_the_provider_and_makes_the_key_optional() {
    let e = env(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")]);
    let resolved = resolve_model(Some("anthropic/claude-haiku-4-5"), &e).unwrap();
    assert_eq!(resolved.model.base_url, "http://127.0.0.1:9");
    assert_eq!(resolved.api_key, None);
}

#[test]
fn a_missing_key_names_the_variable() {
    let err = resolve_model(Some("anthropic/claude-sonnet-4-5"), &env(&[])).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("ANTHROPIC_API_KEY"), "{text}");
}

#[test]
fn the_default_follows_the_keys_present() {
    let both: &[_] = &[("ANTHROPIC_API_KEY", "k"), ("OPENAI_API_KEY", "o")];
    let openai: &[_] = &[("OPENAI_API_KEY", "o")];
    let chosen: &[_] = &[("OPENAI_API_KEY", "o"), ("AGENT_LSP_MODEL", "gpt-4o-mini")];
    for (pairs, spec) in [
        (both, "anthropic/claude-sonnet-4-5"),
        (openai, "openai/gpt-4.1"),
        (chosen, "openai/gpt-4o-mini"),
    ] {
        assert_eq!(resolve_model(None, &env(pairs)).unwrap().spec(), spec);
    }
}

#[test]
fn unknown_ids_on_known_providers_get_generic_limits() {
    let e = env(&[("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")]);
    let resolved = resolve_model(Some("openai/my-local-model"), &e).unwrap();
    assert_eq!(resolved.model.id, "my-local-model");
    assert_eq!(resolved.model.context_window, 128_000);
    assert_eq!(resolved.model.cost.output, 0.0);
    let err = resolve_model(Some("nosuch/x"), &e).unwrap_err();
    assert!(err.to_string().contains("known providers"), "{err}");
}

#[test]
fn no_model_error_says_what_to_set_without_ollama() {
    let home = tempfile::tempdir().unwrap();
    let e = ollama_env(&home, closed_port());
    let text = resolve_model(None, &e).unwrap_err().to_string();
    for needle in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "models.json",
        "--model",
    ] {
        assert!(text.contains(needle), "missing {needle}: {text}");
    }
    assert!(!text.contains("Ollama"), "{text}");
}

#[test]
fn no_model_error_offers_a_running_ollama() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 1024];
        let n = conn.read(&mut buf).unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("GET /api/tags "));
        let body = r#"{"models":[{"name":"qwen3:8b"},{"name":"llama3.2:latest"}]}"#;
        write!(
            conn,
            "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
    });
    let home = tempfile::tempdir().unwrap();
    let e = ollama_env(&home, port);
    let text = resolve_model(None, &e).unwrap_err().to_string();
    server.join().unwrap();
    assert!(text.contains("--model ollama/qwen3:8b"), "{text}");
    // And the suggestion works without any configuration.
    let resolved = resolve_model(Some("ollama/qwen3:8b"), &e).unwrap();
    assert_eq!(
        resolved.model.base_url,
        format!("http://127.0.0.1:{port}/v1")
    );
    assert_eq!(resolved.api_key, None);
}

#[test]
fn models_json_adds_openai_compatible_endpoints() {
    let models_json = r#"{"providers": {
            "vllm": {"baseUrl": "http://127.0.0.1:8000/v1/", "api": "openai-completions", "apiKey": "$VLLM_KEY",
                     "headers": {"x-team": "${TEAM}", "x-fixed": "literal"},
                     "compat": {"supportsDeveloperRole": false, "maxTokensField": "max_tokens"},
                     "models": [{"id": "qwen-coder", "contextWindow": 32768, "compat": {"maxTokensField": "max_completion_tokens"}}]},
            "openai": {"baseUrl": "http://127.0.0.1:7000/v1", "modelOverrides": {"gpt-4o": {"contextWindow": 64000}}}
        }}"#;
    let (_config, e) = with_models_json(models_json, &[("VLLM_KEY", "secret"), ("TEAM", "blue")]);
    let resolved = resolve_model(Some("vllm/qwen-coder"), &e).unwrap();
    assert_eq!(resolved.model.base_url, "http://127.0.0.1:8000/v1");
    assert_eq!(resolved.model.context_window, 32768);
    assert_eq!(resolved.model.max_tokens, 16_384);
    assert_eq!(resolved.api_key.as_deref(), Some("secret"));
    let headers = resolved.model.headers.clone().unwrap();
    assert_eq!(
        (headers["x-team"].as_str(), headers["x-fixed"].as_str()),
        (Some("blue"), Some("literal"))
    );
    let compat = resolved.model.compat.unwrap();
    assert_eq!(compat["supportsDeveloperRole"], false);
    assert_eq!(compat["maxTokensField"], "max_completion_tokens");
    // The only configured provider with models is the default when no key is set.
    assert_eq!(resolve_model(None, &e).unwrap().spec(), "vllm/qwen-coder");
    // Re-pointing a built-in provider keeps its models; overrides patch fields.
    let gpt = resolve_model(Some("openai/gpt-4o"), &e).unwrap();
    assert_eq!(gpt.model.base_url, "http://127.0.0.1:7000/v1");
    assert_eq!(gpt.model.context_window, 64000);
    assert_eq!(gpt.model.cost.output, 10.0);
}

#[test]
fn a_broken_models_json_is_a_clear_error() {
    let (_config, e) = with_models_json("{not json", &[("OPENAI_API_KEY", "k")]);
    let text = resolve_model(None, &e).unwrap_err().to_string();
    assert!(text.contains("models.json"), "{text}");
}

#[test]
fn cost_is_per_million_tokens_unless_the_provider_reported_one() {
    let model = resolve_model(
        Some("anthropic/claude-sonnet-4-5"),
        &env(&[("ANTHROPIC_API_KEY", "k")]),
    )
    .unwrap()
    .model;
    let mut usage = Usage {
        input: 1_000_000,
        output: 100_000,
        cache_read: 200_000,
        cache_write: 10_000,
        ..Default::default()
    };
    apply_cost(&model, &mut usage);
    assert!((usage.cost.input - 3.0).abs() < 1e-9);
    assert!((usage.cost.output - 1.5).abs() < 1e-9);
    assert!((usage.cost.cache_read - 0.06).abs() < 1e-9);
    assert!((usage.cost.cache_write - 0.0375).abs() < 1e-9);
    assert!((usage.cost.total - 4.5975).abs() < 1e-9);
    let mut reported = Usage {
        input: 5,
        ..Default::default()
    };
    reported.cost.total = 0.5;
    apply_cost(&model, &mut reported);
    assert_eq!(reported.cost.total, 0.5);
}

#[test]
fn thinking_levels_are_clamped_per_provider() {
    let e = env(&[("ANTHROPIC_API_KEY", "k"), ("OPENAI_API_KEY", "o")]);
    let gpt41 = resolve_model(Some("openai/gpt-4.1"), &e).unwrap().model;
    let gpt5 = resolve_model(Some("openai/gpt-5"), &e).unwrap().model;
    let sonnet = resolve_model(Some("anthropic/claude-sonnet-4-5"), &e)
        .unwrap()
        .model;
    for (model, asked, got) in [
        (&gpt41, ThinkingLevel::High, ThinkingLevel::Off),
        (&gpt5, ThinkingLevel::Xhigh, ThinkingLevel::High),
        (&gpt5, ThinkingLevel::Minimal, ThinkingLevel::Minimal),
        (&sonnet, ThinkingLevel::Max, ThinkingLevel::Xhigh),
    ] {
        assert_eq!(
            clamp_thinking(model, asked),
            got,
            "{} at {asked:?}",
            model.id
        );
    }
}

#[test]
fn config_values_resolve_like_pi() {
    let e = env(&[("MY_KEY", "from-env")]);
    let resolve = |raw: &str| config::resolve_value(raw, &e);
    assert_eq!(resolve("MY_KEY").unwrap(), "from-env");
    assert_eq!(resolve("$MY_KEY").unwrap(), "from-env");
    assert_eq!(resolve("${MY_KEY}").unwrap(), "from-env");
    assert_eq!(resolve("sk-literal").unwrap(), "sk-literal");
    assert_eq!(resolve("!printf ' from-cmd\\n'").unwrap(), "from-cmd");
    assert!(
        resolve("$UNSET")
            .unwrap_err()
            .to_string()
            .contains("$UNSET")
    );
    assert!(
        resolve("!exit 3")
            .unwrap_err()
            .to_string()
            .contains("failed")
    );
}

/// The example in `config.rs`'s module doc resolves as documented.
#[test]
fn the_documented_example_resolves() {
    let doc = include_str!("config.rs");
    let example: String = doc
        .lines()
        .skip_while(|l| *l != "//! ```json")
        .skip(1)
        .take_while(|l| *l != "//! ```")
        .map(|l| l.trim_start_matches("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let (_config, e) = with_models_json(&example, &[("VLLM_API_KEY", "v")]);
    let ollama = resolve_model(Some("ollama/qwen3:8b"), &e).unwrap();
    assert_eq!(
        (ollama.model.context_window, ollama.model.max_tokens),
        (32768, 8192)
    );
    assert_eq!(ollama.api_key, None);
    let vllm = resolve_model(Some("vllm/Qwen/Qwen2.5-Coder-32B-Instruct"), &e).unwrap();
    assert_eq!(vllm.model.base_url, "http://gpu-box:8000/v1");
    assert_eq!(vllm.api_key.as_deref(), Some("v"));
    let llama = resolve_model(Some("llamacpp/local"), &e).unwrap();
    assert!(llama.model.reasoning);
    assert_eq!(llama.model.api, "openai-completions");
    assert_eq!(
        clamp_thinking(&llama.model, ThinkingLevel::High),
        ThinkingLevel::High
    );
}

#[test]
fn openai_reasoning_models_speak_responses_unless_models_json_says_otherwise() {
    let keyed = env(&[("OPENAI_API_KEY", "k")]);
    let api = |spec: &str, e: &EnvSource| resolve_model(Some(spec), e).unwrap().model.api;
    for id in ["o3", "o4-mini", "gpt-5", "gpt-5-mini", "gpt-5-nano"] {
        assert_eq!(
            api(&format!("openai/{id}"), &keyed),
            "openai-responses",
            "{id}"
        );
    }
    assert_eq!(api("openai/gpt-4.1", &keyed), "openai-completions");
    let models_json = r#"{"providers": {
            "openai": {"modelOverrides": {"o3": {"api": "openai-completions"}}},
            "proxy": {"baseUrl": "http://127.0.0.1:9000/v1", "api": "openai-responses",
                      "models": [{"id": "r1", "reasoning": true}]}
        }}"#;
    let (_config, e) = with_models_json(models_json, &[("OPENAI_API_KEY", "k")]);
    assert_eq!(api("openai/o3", &e), "openai-completions");
    assert_eq!(api("openai/gpt-5", &e), "openai-responses");
    assert_eq!(api("proxy/r1", &e), "openai-responses");
}
