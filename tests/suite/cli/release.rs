//! The install manifests (issue 33) checked against what they describe: the ACP Registry entry
//! against the registry's own schema. (tests/release/dist.sh checks the archives they name.)

use serde_json::Value;

fn json(path: &str) -> Value {
    let text = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_acp_registry_entry_follows_the_registry_schema_and_the_package() {
    let schema = json("editors/acp-registry/agent.schema.json");
    let entry = json("editors/acp-registry/agent-lsp/agent.json");
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&entry)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(entry["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(entry["repository"], env!("CARGO_PKG_REPOSITORY"));
    // The schema is not a rubber stamp: a wrong platform and a missing cmd are refused.
    let mut bad = entry.clone();
    bad["distribution"]["binary"]["linux-riscv"] =
        bad["distribution"]["binary"]["linux-x86_64"].clone();
    bad["distribution"]["binary"]["linux-x86_64"]
        .as_object_mut()
        .unwrap()
        .remove("cmd");
    assert_eq!(validator.iter_errors(&bad).count(), 2);
}
