//! `read`: text selection, truncation notices, images, binaries.

use serde_json::json;

use crate::suite::support::tool_harness::Harness;
use agent_lsp::agent::message::ContentBlock;

#[tokio::test]
async fn reads_text_with_offset_and_limit() {
    let h = Harness::new();
    h.put("a.txt", "one\ntwo\nthree\nfour\n");
    assert_eq!(
        h.ok_text("read", json!({"path": "a.txt"})).await,
        "one\ntwo\nthree\nfour\n"
    );
    assert_eq!(
        h.ok_text("read", json!({"path": "@a.txt", "offset": 2, "limit": 2}))
            .await,
        "two\nthree\n\n[2 more lines in file. Use offset=4 to continue.]"
    );
    assert_eq!(
        h.ok_text("read", json!({"path": "a.txt", "offset": 4}))
            .await,
        "four\n"
    );
    assert_eq!(
        h.err_text("read", json!({"path": "a.txt", "offset": 9}))
            .await,
        "Offset 9 is beyond end of file (5 lines total)"
    );
    assert_eq!(
        h.err_text("read", json!({"path": "nope.txt"})).await,
        "File not found: nope.txt"
    );
}

#[tokio::test]
async fn truncates_by_lines_and_bytes_with_continuation_hints() {
    let h = Harness::new();
    let many: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
    h.put("many.txt", &many);
    let out = h.ok_text("read", json!({"path": "many.txt"})).await;
    assert!(out.starts_with("line 1\nline 2\n"));
    assert!(
        out.ends_with("line 2000\n\n[Showing lines 1-2000 of 2501. Use offset=2001 to continue.]"),
        "{}",
        &out[out.len() - 120..]
    );
    let r = h.call("read", json!({"path": "many.txt"})).await.unwrap();
    let t = &r.details.unwrap()["truncation"];
    assert_eq!(
        (t["truncatedBy"].as_str(), t["outputLines"].as_u64()),
        (Some("lines"), Some(2000))
    );

    let wide: String = (1..=200)
        .map(|i| format!("{i:04}{}\n", "x".repeat(996)))
        .collect();
    h.put("wide.txt", &wide);
    let out = h
        .ok_text("read", json!({"path": "wide.txt", "offset": 10}))
        .await;
    assert!(
        out.ends_with(
            "\n\n[Showing lines 10-60 of 201 (50.0KB limit). Use offset=61 to continue.]"
        ),
        "{}",
        &out[out.len() - 120..]
    );

    h.put("giant.txt", format!("{}\nsmall\n", "y".repeat(60 * 1024)));
    assert_eq!(
        h.ok_text("read", json!({"path": "giant.txt"})).await,
        "[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' giant.txt | head -c 51200]"
    );
}

#[tokio::test]
async fn images_are_sniffed_by_content_and_binaries_refused() {
    let h = Harness::new();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    h.put("picture.dat", &png);
    let r = h
        .call("read", json!({"path": "picture.dat"}))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("Read image file [image/png]"));
    match &r.content[1] {
        ContentBlock::Image(img) => {
            assert_eq!(img.mime_type, "image/png");
            assert_eq!(img.data, "iVBORw0KGgoAAAANSUhEUg==");
        }
        other => panic!("expected an image, got {other:?}"),
    }
    h.put("blob.bin", b"ELF\0\x01\x02garbage");
    assert_eq!(
        h.err_text("read", json!({"path": "blob.bin"})).await,
        "Cannot read blob.bin: it is a binary file (13B). Use bash (for example `file` or `xxd | head`) to inspect it."
    );
    std::fs::create_dir(h.path("dir")).unwrap();
    assert_eq!(
        h.err_text("read", json!({"path": "dir"})).await,
        "dir is a directory, not a file. Use ls to list it."
    );
}

#[tokio::test]
async fn oversized_images_are_refused_not_resized() {
    let h = Harness::new();
    let mut gif = b"GIF89a".to_vec();
    gif.resize(agent_lsp::tools::read::MAX_IMAGE_BYTES + 500_000, 0);
    h.put("huge.gif", &gif);
    assert_eq!(
        h.err_text("read", json!({"path": "huge.gif"})).await,
        "Cannot attach huge.gif: the image/gif image is 4.1MB, over the 3.6MB limit (images are not resized). Use bash to make a smaller copy if an image tool is installed."
    );
}
