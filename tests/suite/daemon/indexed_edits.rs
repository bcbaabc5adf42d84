//! Daemon tests: `edit` on a large buffer (~590 KB), through the real binary. A sequence of
//! edits (at the very start and end, across lines, on text earlier edits created, duplicates,
//! misses) must give exactly the disk workspace's results and file, the reference behaviour,
//! while every `didChange` keeps the mirror current.

use super::*;
use crate::suite::support::tool_harness::{Harness, text as result_text};

/// ~590 KB of distinct lines.
fn big_text() -> String {
    (0..13_000)
        .map(|i| format!("fn line_{i:06}() -> u32 {{ {i:>12} }}\n"))
        .collect()
}

fn edit_args(old: &str, new: &str) -> Value {
    json!({"path": "big.rs", "edits": [{"oldText": old, "newText": new}]})
}

#[tokio::test]
async fn edits_on_a_large_buffer_equal_the_disk_path() {
    let text = big_text();
    assert!(text.len() > 512 * 1024);
    let last_line = text.lines().last().unwrap().to_owned();
    let calls = vec![
        edit_args("fn line_000000()", "fn first()"),
        edit_args(&format!("{last_line}\n"), "// the end\n"),
        edit_args(
            "{         6000 }\nfn line_006001() -> u32",
            "{ 6000 }\nfn six_thousand_one() -> u64",
        ),
        // Text the earlier edits wrote: found only if the mirror followed the didChanges.
        edit_args("fn first()", "fn first_again()"),
        edit_args("// the end\n", "// the very end\n"),
        edit_args("six_thousand_one", "six_k_one"),
        // Errors keep pi's messages: several occurrences, none.
        edit_args("line_00500", "x"),
        edit_args("no such text", "x"),
        edit_args("fn six_thousand_one", "x"),
        // A second occurrence written by an edit far from the first: a search that missed
        // it would apply this edit instead of reporting both.
        edit_args("fn line_009000()", "fn line_000500()"),
        edit_args("fn line_000500()", "x"),
    ];
    let mut responses: Vec<MockResponse> = calls
        .iter()
        .enumerate()
        .map(|(i, args)| MockResponse::tool_call(&format!("call_{i}"), "edit", args.clone()))
        .collect();
    responses.push(MockResponse::text("done"));
    let (_mock, client) = agent_setup(responses, LspClient::agent_caps(false), json!({})).await;
    let path = client.workspace.path().join("big.rs");
    std::fs::write(&path, &text).unwrap();
    let uri = client.did_open(&path, &text).await;
    let (session, run, _) = prompt(&client, json!({"message": "edit"})).await;
    let events = client.wait_settled(&session, &run).await;
    let got = tool_results(&events);

    let h = Harness::new();
    h.put("big.rs", &text);
    let mut want = Vec::new();
    for args in &calls {
        want.push(match h.call("edit", args.clone()).await {
            Ok(r) => (result_text(&r), false),
            Err(e) => (e.to_string(), true),
        });
    }
    assert_eq!(got, want);
    let errors = got.iter().filter(|(_, is_error)| *is_error).count();
    assert_eq!(errors, 4, "{got:?}");
    assert!(
        got[10].0.starts_with("Found 2 occurrences"),
        "{}",
        got[10].0
    );
    assert!(got[6].0.starts_with("Found 10 occurrences"), "{}", got[6].0);
    assert_eq!(
        requests_of(&client, "workspace/applyEdit").len(),
        7,
        "one applyEdit per successful edit"
    );
    let file = h.get_str("big.rs");
    assert!(file.starts_with("fn first_again() -> u32"));
    assert!(file.ends_with("12998 }\n// the very end\n"));
    assert!(file.contains("{ 6000 }\nfn six_k_one() -> u64 {         6001 }\n"));
    assert_eq!(
        client.buffer(&uri).1,
        file,
        "the buffer equals the disk path's file"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), file, "saved");
}
