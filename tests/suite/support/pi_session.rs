//! A field-by-field validator for pi's session format v3 (spec §C2), used on files agent-lsp
//! writes. pi itself cannot run here, so this checker encodes the spec's rules instead: header
//! shape, entry types and their fields, 8-hex ids, ISO timestamps, and a parent chain that only
//! points backwards.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{Map, Value};

/// Panics with the line number and reason when `path` is not a valid pi v3 session file.
pub fn assert_valid_pi_v3(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'), "the file must end with a newline");
    let mut lines = text.lines().enumerate();
    let (_, header) = lines.next().expect("a header line");
    check_header(&parse(header, 1));
    let mut ids = HashSet::new();
    for (index, line) in lines {
        let n = index + 1;
        let entry = parse(line, n);
        check_entry(&entry, &ids, n);
        ids.insert(entry["id"].as_str().unwrap().to_string());
    }
}

fn parse(line: &str, n: usize) -> Map<String, Value> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(map)) => map,
        other => panic!("line {n} is not a JSON object: {other:?}"),
    }
}

fn only_keys(map: &Map<String, Value>, allowed: &[&str], n: usize) {
    for key in map.keys() {
        assert!(
            allowed.contains(&key.as_str()),
            "line {n}: unexpected field {key:?}"
        );
    }
}

fn is_iso(v: &Value) -> bool {
    let Some(s) = v.as_str() else { return false };
    let b = s.as_bytes();
    s.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z'
        && s.chars().filter(|c| c.is_ascii_digit()).count() == 17
}

fn check_header(h: &Map<String, Value>) {
    only_keys(
        h,
        &["type", "version", "id", "timestamp", "cwd", "parentSession"],
        1,
    );
    assert_eq!(h["type"], "session", "header type");
    assert_eq!(h["version"], 3, "header version");
    let id = h["id"].as_str().expect("header id");
    assert!(
        uuid::Uuid::parse_str(id).is_ok(),
        "header id {id} is a UUID"
    );
    assert!(
        is_iso(&h["timestamp"]),
        "header timestamp is ISO: {}",
        h["timestamp"]
    );
    assert!(h["cwd"].is_string(), "header cwd");
    if let Some(p) = h.get("parentSession") {
        assert!(p.is_string(), "parentSession is a path");
    }
}

fn check_entry(e: &Map<String, Value>, earlier: &HashSet<String>, n: usize) {
    let id = e["id"].as_str().unwrap_or_else(|| panic!("line {n}: id"));
    assert!(
        id.len() == 8
            && id
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
        "line {n}: id {id} is 8 lowercase hex digits"
    );
    assert!(!earlier.contains(id), "line {n}: duplicate id {id}");
    match &e["parentId"] {
        Value::Null => {}
        Value::String(p) => assert!(earlier.contains(p), "line {n}: parentId {p} not earlier"),
        other => panic!("line {n}: parentId {other}"),
    }
    assert!(
        is_iso(&e["timestamp"]),
        "line {n}: timestamp {}",
        e["timestamp"]
    );
    fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec!["type", "id", "parentId", "timestamp"];
        all.extend_from_slice(extra);
        all
    }
    match e["type"].as_str().unwrap_or_default() {
        "message" => {
            only_keys(e, &with(&["message"]), n);
            check_message(e["message"].as_object().expect("message object"), n);
        }
        "model_change" => {
            only_keys(e, &with(&["provider", "modelId"]), n);
            assert!(
                e["provider"].is_string() && e["modelId"].is_string(),
                "line {n}"
            );
        }
        "thinking_level_change" => {
            only_keys(e, &with(&["thinkingLevel"]), n);
            let level = e["thinkingLevel"].as_str().unwrap_or_default();
            assert!(
                ["off", "minimal", "low", "medium", "high", "xhigh", "max"].contains(&level),
                "line {n}: thinkingLevel {level}"
            );
        }
        "compaction" => {
            only_keys(
                e,
                &with(&[
                    "summary",
                    "firstKeptEntryId",
                    "tokensBefore",
                    "details",
                    "fromHook",
                ]),
                n,
            );
            assert!(
                e["summary"].is_string() && e["firstKeptEntryId"].is_string(),
                "line {n}"
            );
            assert!(e["tokensBefore"].is_u64(), "line {n}: tokensBefore");
        }
        "branch_summary" => {
            only_keys(e, &with(&["fromId", "summary", "details", "fromHook"]), n);
            assert!(
                e["fromId"].is_string() && e["summary"].is_string(),
                "line {n}"
            );
        }
        "custom" => {
            only_keys(e, &with(&["customType", "data"]), n);
            assert!(e["customType"].is_string(), "line {n}");
        }
        "custom_message" => {
            only_keys(
                e,
                &with(&["customType", "content", "display", "details"]),
                n,
            );
            assert!(e["display"].is_boolean(), "line {n}: display");
        }
        "label" => {
            only_keys(e, &with(&["targetId", "label"]), n);
            let target = e["targetId"].as_str().unwrap_or_default();
            assert!(earlier.contains(target), "line {n}: label target {target}");
        }
        "session_info" => only_keys(e, &with(&["name"]), n),
        other => panic!("line {n}: unknown entry type {other:?}"),
    }
}

fn check_blocks(blocks: &Value, allowed: &[&str], n: usize) {
    for block in blocks
        .as_array()
        .unwrap_or_else(|| panic!("line {n}: content array"))
    {
        let kind = block["type"].as_str().unwrap_or_default();
        assert!(allowed.contains(&kind), "line {n}: block type {kind}");
        match kind {
            "text" => assert!(block["text"].is_string(), "line {n}: text"),
            "thinking" => assert!(block["thinking"].is_string(), "line {n}: thinking"),
            "image" => assert!(block["data"].is_string() && block["mimeType"].is_string()),
            "toolCall" => {
                assert!(
                    block["id"].is_string() && block["name"].is_string(),
                    "line {n}"
                );
                assert!(block["arguments"].is_object(), "line {n}: arguments object");
            }
            _ => {}
        }
    }
}

fn check_message(m: &Map<String, Value>, n: usize) {
    assert!(m["timestamp"].is_i64(), "line {n}: message timestamp in ms");
    match m["role"].as_str().unwrap_or_default() {
        "user" => {
            if !m["content"].is_string() {
                check_blocks(&m["content"], &["text", "image"], n);
            }
        }
        "assistant" => {
            check_blocks(&m["content"], &["text", "thinking", "toolCall"], n);
            for key in ["api", "provider", "model"] {
                assert!(m[key].is_string(), "line {n}: assistant {key}");
            }
            let stop = m["stopReason"].as_str().unwrap_or_default();
            assert!(
                ["stop", "length", "toolUse", "error", "aborted"].contains(&stop),
                "line {n}: stopReason {stop}"
            );
            let usage = m["usage"].as_object().expect("usage");
            for key in ["input", "output", "cacheRead", "cacheWrite", "totalTokens"] {
                assert!(usage[key].is_u64(), "line {n}: usage.{key}");
            }
            for key in ["input", "output", "cacheRead", "cacheWrite", "total"] {
                assert!(usage["cost"][key].is_number(), "line {n}: usage.cost.{key}");
            }
        }
        "toolResult" => {
            assert!(
                m["toolCallId"].is_string() && m["toolName"].is_string(),
                "line {n}"
            );
            check_blocks(&m["content"], &["text", "image"], n);
            assert!(m["isError"].is_boolean(), "line {n}: isError");
        }
        "system" | "bashExecution" | "custom" => {}
        other => panic!("line {n}: role {other:?} is not a pi role"),
    }
}
