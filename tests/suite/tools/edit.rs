//! `edit`: replacements, details, fuzzy matching, multi-edit errors, encodings, conflicts,
//! per-file serialisation.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use crate::suite::support::tool_harness::Harness;

#[tokio::test]
async fn replaces_and_reports_diff_patch_and_first_line() {
    let h = Harness::new();
    h.put("m.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    let r = h
        .call(
            "edit",
            json!({"path": "m.rs", "edits": [{"oldText": "\"hi\"", "newText": "\"bye\""}]}),
        )
        .await
        .unwrap();
    assert_eq!(
        r.content[0].as_text(),
        Some("Successfully replaced 1 block(s) in m.rs.")
    );
    assert_eq!(
        h.get_str("m.rs"),
        "fn main() {\n    println!(\"bye\");\n}\n"
    );
    let d = r.details.unwrap();
    assert_eq!(d["firstChangedLine"], 2);
    assert_eq!(
        d["diff"],
        " 1 fn main() {\n-2     println!(\"hi\");\n+2     println!(\"bye\");\n 3 }"
    );
    assert_eq!(
        d["patch"],
        "--- m.rs\n+++ m.rs\n@@ -1,3 +1,3 @@\n fn main() {\n-    println!(\"hi\");\n+    println!(\"bye\");\n }\n"
    );
}

#[tokio::test]
async fn multiple_edits_match_the_original_and_apply_together() {
    let h = Harness::new();
    h.put("f.txt", "alpha\nbeta\ngamma\n");
    let text = h
        .ok_text(
            "edit",
            json!({"path": "f.txt", "edits": [
                {"oldText": "gamma", "newText": "GAMMA"},
                {"oldText": "alpha\n", "newText": "alpha\nbeta\n"}
            ]}),
        )
        .await;
    assert_eq!(text, "Successfully replaced 2 block(s) in f.txt.");
    assert_eq!(h.get_str("f.txt"), "alpha\nbeta\nbeta\nGAMMA\n");
}

#[tokio::test]
async fn error_texts_and_all_or_nothing() {
    let h = Harness::new();
    h.put("f.txt", "one\ntwo\ntwo\nthree\n");
    let e = h.err_text("edit", json!({"path": "f.txt", "edits": [{"oldText": "one", "newText": "1"}, {"oldText": "four", "newText": "4"}]})).await;
    assert_eq!(
        e,
        "Could not find edits[1] in f.txt. The old text must match exactly including all whitespace and newlines.\n\nFile starts with:\n1 | one\n2 | two\n3 | two\n4 | three\n5 | "
    );
    let e = h.err_text("edit", json!({"path": "f.txt", "edits": [{"oldText": "one", "newText": "1"}, {"oldText": "two", "newText": "2"}]})).await;
    assert_eq!(
        e,
        "Found 2 occurrences of edits[1] in f.txt. Each oldText must be unique. Please provide more context to make it unique."
    );
    let e = h.err_text("edit", json!({"path": "f.txt", "edits": [{"oldText": "two\ntwo", "newText": "2"}, {"oldText": "two\nthree", "newText": "3"}]})).await;
    assert_eq!(
        e,
        "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint regions."
    );
    let e = h
        .err_text(
            "edit",
            json!({"path": "f.txt", "edits": [{"oldText": "three", "newText": "three"}]}),
        )
        .await;
    assert_eq!(
        e,
        "No changes made to f.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
    );
    let e = h
        .err_text(
            "edit",
            json!({"path": "f.txt", "edits": [{"oldText": "", "newText": "x"}]}),
        )
        .await;
    assert_eq!(e, "oldText must not be empty in f.txt.");
    let e = h
        .err_text("edit", json!({"path": "f.txt", "edits": []}))
        .await;
    assert_eq!(
        e,
        "Edit tool input is invalid. edits must contain at least one replacement."
    );
    let e = h
        .err_text(
            "edit",
            json!({"path": "missing.txt", "edits": [{"oldText": "a", "newText": "b"}]}),
        )
        .await;
    assert_eq!(e, "Could not edit file: missing.txt. Error code: ENOENT.");
    let e = h.err_text("edit", json!({"path": "f.txt", "edits": [{"oldText": "thre", "newText": "x"}, {"oldText": "tw0", "newText": "y"}]})).await;
    assert!(e.starts_with("Could not find edits[1] in f.txt."), "{e}");
    assert_eq!(
        h.get_str("f.txt"),
        "one\ntwo\ntwo\nthree\n",
        "failed edits change nothing"
    );
}

#[tokio::test]
async fn not_found_hint_points_at_closest_line() {
    let h = Harness::new();
    h.put(
        "c.py",
        "import os\n\ndef compute(value):\n    return value * 2\n",
    );
    let e = h.err_text("edit", json!({"path": "c.py", "edits": [{"oldText": "def compute(value, factor):\n    return value * factor", "newText": ""}]})).await;
    assert_eq!(
        e,
        "Could not find the exact text in c.py. The old text must match exactly including all whitespace and newlines.\n\n\
Closest match is around line 3:\n3 | def compute(value):\n4 |     return value * 2\n5 | "
    );
}

#[tokio::test]
async fn fuzzy_match_keeps_untouched_bytes() {
    let h = Harness::new();
    h.put(
        "q.txt",
        "title = \u{201C}Hello\u{201D}   \nnote \u{2014} keep\u{00A0}me  \nend\n",
    );
    h.ok_text("edit", json!({"path": "q.txt", "edits": [{"oldText": "title = \"Hello\"\nnote - keep me", "newText": "title = \"Bye\"\nnote - keep me"}]})).await;
    assert_eq!(
        h.get_str("q.txt"),
        "title = \"Bye\"\nnote - keep me  \nend\n"
    );
    h.put(
        "r.txt",
        "a \u{2018}x\u{2019}  \nuntouched \u{201C}q\u{201D}  \n",
    );
    h.ok_text(
        "edit",
        json!({"path": "r.txt", "edits": [{"oldText": "a 'x'", "newText": "b 'x'"}]}),
    )
    .await;
    assert_eq!(
        h.get_str("r.txt"),
        "b 'x'  \nuntouched \u{201C}q\u{201D}  \n"
    );
}

#[tokio::test]
async fn crlf_bom_and_permissions_survive() {
    let h = Harness::new();
    let p = h.put("w.txt", "\u{FEFF}first\r\nsecond\r\nthird\r\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
    h.ok_text("edit", json!({"path": "w.txt", "edits": [{"oldText": "first\nsecond", "newText": "1st\r\n2nd\n2.5"}]})).await;
    assert_eq!(h.get_str("w.txt"), "\u{FEFF}1st\r\n2nd\r\n2.5\r\nthird\r\n");
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o700
    );
}

#[tokio::test]
async fn legacy_and_string_arguments_are_accepted() {
    let h = Harness::new();
    h.put("l.txt", "a b c");
    h.ok_text(
        "edit",
        json!({"path": "l.txt", "oldText": "a", "newText": "A"}),
    )
    .await;
    h.ok_text(
        "edit",
        json!({"path": "l.txt", "edits": "[{\"oldText\":\"b\",\"newText\":\"B\"}]"}),
    )
    .await;
    h.ok_text("edit", json!({"path": "l.txt", "edits": [{"oldText": "c", "newText": "C"}], "oldText": " B", "newText": "_B"})).await;
    assert_eq!(h.get_str("l.txt"), "A_B C");
}

#[tokio::test]
async fn refuses_when_file_changed_since_read() {
    let h = Harness::new();
    h.put("f.txt", "x = 1\ny = 2\n");
    h.ok_text("read", json!({"path": "f.txt"})).await;
    h.put("f.txt", "x = 1\ny = 3\n");
    let e = h
        .err_text(
            "edit",
            json!({"path": "f.txt", "edits": [{"oldText": "x = 1", "newText": "x = 9"}]}),
        )
        .await;
    assert!(
        e.starts_with("File f.txt has been modified since you last read it"),
        "{e}"
    );
    assert_eq!(h.get_str("f.txt"), "x = 1\ny = 3\n");
    h.ok_text("read", json!({"path": "f.txt"})).await;
    h.ok_text(
        "edit",
        json!({"path": "f.txt", "edits": [{"oldText": "x = 1", "newText": "x = 9"}]}),
    )
    .await;
    assert_eq!(h.get_str("f.txt"), "x = 9\ny = 3\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_to_one_file_are_serialised() {
    let h = std::sync::Arc::new(Harness::new());
    let original: String = (0..40).map(|i| format!("line-{i:02}-old\n")).collect();
    h.put("shared.txt", &original);
    let mut tasks = Vec::new();
    for i in 0..40 {
        let h = h.clone();
        tasks.push(tokio::spawn(async move {
            h.call("edit", json!({"path": "shared.txt", "edits": [{"oldText": format!("line-{i:02}-old"), "newText": format!("line-{i:02}-new")}]})).await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let expected: String = (0..40).map(|i| format!("line-{i:02}-new\n")).collect();
    assert_eq!(h.get_str("shared.txt"), expected, "no edit may be lost");
}

#[tokio::test]
async fn non_utf8_files_are_not_edited() {
    let h = Harness::new();
    h.put("latin1.txt", b"caf\xe9\n");
    let e = h
        .err_text(
            "edit",
            json!({"path": "latin1.txt", "edits": [{"oldText": "caf", "newText": "cafe"}]}),
        )
        .await;
    assert_eq!(
        e,
        "Could not edit latin1.txt: it is not UTF-8 text. Use write to replace it, or bash for binary files."
    );
    assert_eq!(h.get("latin1.txt"), b"caf\xe9\n");
}
