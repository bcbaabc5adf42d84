//! Tests of MCP tool names, schemas and result conversion.

use serde_json::json;

use super::*;

fn info() -> McpToolInfo {
    McpToolInfo {
        server: "s".into(),
        tool: "t".into(),
        kind: "other",
        policy: None,
        title: "t (MCP server s)".into(),
    }
}

#[test]
fn names_are_provider_safe_short_and_unique() {
    assert_eq!(tool_name("fs", "read_file"), "fs__read_file");
    assert_eq!(
        tool_name("my server", "get.item/v2"),
        "my_server__get_item_v2"
    );
    let long = tool_name("server", &"x".repeat(100));
    assert_eq!(long.len(), 64);
    assert!(
        long.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    );
    assert_eq!(long, tool_name("server", &"x".repeat(100)), "deterministic");
    assert_ne!(long, tool_name("server", &"x".repeat(101)));
    let pairs = [
        ("a".to_owned(), "b.c".to_owned()),
        ("a".to_owned(), "b_c".to_owned()),
    ];
    let names = unique_names(&pairs);
    assert_eq!(
        names[0], "a__b_c",
        "the first in name order keeps the plain name"
    );
    assert_ne!(names[0], names[1]);
    let reversed = unique_names(&[pairs[1].clone(), pairs[0].clone()]);
    assert_eq!(
        reversed,
        [names[1].clone(), names[0].clone()],
        "independent of order"
    );
}

#[test]
fn schemas_get_an_object_type_and_properties() {
    assert_eq!(
        normalize_schema(json!({})),
        json!({"type": "object", "properties": {}})
    );
    let kept =
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
    assert_eq!(normalize_schema(kept.clone()), kept);
}

#[test]
fn results_become_content_blocks() {
    let result = json!({"content": [
        {"type": "text", "text": "hello"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
        {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/octet-stream"}},
        {"type": "resource_link", "uri": "file:///c", "name": "c", "description": "a file"}
    ]});
    let converted = convert_result(&result, &info());
    assert_eq!(
        converted.content[0],
        ContentBlock::text(
            "hello\ninside\n[binary resource file:///b.bin (application/octet-stream) not shown]\n\
             [resource link: c (file:///c): a file]"
        )
    );
    assert!(matches!(&converted.content[1], ContentBlock::Image(i) if i.mime_type == "image/png"));
    assert_eq!(converted.is_error, None);
    let error = convert_result(
        &json!({"content": [{"type": "text", "text": "no"}], "isError": true}),
        &info(),
    );
    assert_eq!(error.is_error, Some(true));
    let structured = convert_result(
        &json!({"content": [], "structuredContent": {"n": 1}}),
        &info(),
    );
    assert_eq!(structured.content[0], ContentBlock::text("{\"n\":1}"));
}

#[test]
fn long_output_is_cut_like_bash_with_a_notice() {
    let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
    let converted = convert_result(
        &json!({"content": [{"type": "text", "text": text}]}),
        &info(),
    );
    let ContentBlock::Text(t) = &converted.content[0] else {
        panic!()
    };
    assert!(t.text.contains("line 4999"), "the tail is kept");
    assert!(!t.text.contains("line 0\n"));
    assert!(
        t.text
            .ends_with("[Showing lines 3001-5000 of 5000 (50.0KB limit).]"),
        "{}",
        &t.text[t.text.len() - 80..]
    );
    assert!(
        converted.details.unwrap()["truncation"]["truncated"]
            .as_bool()
            .unwrap()
    );
}
