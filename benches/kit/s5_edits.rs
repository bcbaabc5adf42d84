//! Scenario 5: the daemon with a large document open (10 MB at full size) and many `edit` tool
//! calls (1,000), each applied through `workspace/applyEdit` and echoed by the client's
//! `didChange`. Bars: p50 ≤ 5 ms and p99 ≤ 20 ms server time per edit; memory flat. pi has
//! no LSP daemon.
//!
//! Server time of one edit, from the client's clock: from the moment the model's response
//! passed the relay ([`super::proxy`]; everything after is the daemon's) to the arrival of
//! `applyEdit`, plus from the client's `didChange` to the `tool_execution_end` event, minus the
//! client's time answering the `agent/saveDocuments` in between. The client's own time
//! (applying the edit, answering) and the model's time are excluded; the pipe transit is
//! included.

use std::time::{Duration, Instant};

use agent_lsp::testing::MockResponse;
use anyhow::{Context, ensure};
use ropey::Rope;
use serde_json::{Value, json};

use super::lsp::{Daemon, uri};
use super::measure::{ms, percentile};
use super::proxy::Relay;
use super::report::{Bar, Report};
use super::{Ctx, MockHost, Sandbox};

#[derive(Clone, Copy, Debug)]
pub struct Size {
    pub doc_bytes: usize,
    pub edits: usize,
}

pub const FULL: Size = Size {
    doc_bytes: 10_000_000,
    edits: 1_000,
};

fn marker(i: usize) -> String {
    format!("<<edit {i:05}>>")
}

/// A document of ~`doc_bytes` with one unique marker per edit, spread over the whole text.
pub fn document(size: Size) -> String {
    // Ordinary lines are 51 bytes: estimate the line count to spread the markers evenly.
    let every = (size.doc_bytes / 51 / size.edits.max(1)).max(1);
    let mut text = String::with_capacity(size.doc_bytes + 64);
    let mut line = 0;
    while text.len() < size.doc_bytes || line / every < size.edits {
        if line % every == 0 && line / every < size.edits {
            text.push_str(&format!("{:<48}{:>15}\n", marker(line / every), line));
        } else {
            text.push_str(&format!("fn line_{line:08}() -> u32 {{ {line:>20} }}\n"));
        }
        line += 1;
    }
    text
}

fn edit_call(i: usize) -> MockResponse {
    MockResponse::tool_call(
        &format!("call_{i}"),
        "edit",
        json!({"path": "big.txt", "edits": [{"oldText": marker(i), "newText": format!("<<done {i:05}>>")}]}),
    )
}

/// Client-side instants of each edit, in order.
#[derive(Default)]
struct Clock {
    apply_edit: Vec<Instant>,
    did_change: Vec<Instant>,
    /// When `agent/saveDocuments` arrived and when the client had answered it: the client's
    /// own time inside the second half of the window, taken out of the server time.
    save_asked: Vec<Instant>,
    save_answered: Vec<Instant>,
    tool_end: Vec<Instant>,
}

pub fn run(ctx: &Ctx, size: Size) -> anyhow::Result<Report> {
    let host = MockHost::start()?;
    let relay = Relay::start(host.addr())?;
    let sandbox = Sandbox::new()?;
    let path = sandbox.project().join("big.txt");
    let text = document(size);
    std::fs::write(&path, &text)?;
    (0..size.edits).for_each(|i| host.push(edit_call(i)));
    host.push(MockResponse::text("All edits made."));

    let env = sandbox.env_for(&relay.openai_base_url());
    let mut daemon = Daemon::spawn(&ctx.agent_bin, &env, &sandbox.project())?;
    daemon.initialize(&sandbox.project(), true)?;
    let doc_uri = uri(&path);
    daemon.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": doc_uri, "languageId": "plaintext", "version": 1, "text": text}}),
    )?;
    let mut buffer = Rope::from_str(&text);
    drop(text);
    let mut version = 1;
    let prompt = daemon.request_start("agent/prompt", json!({"message": "Make the edits"}))?;
    let (mut clock, mut rss, mut errors) = (Clock::default(), Vec::new(), 0);
    let mut rss_open = 0;
    loop {
        let message = daemon.next()?;
        let value = message.parse()?;
        if value.get("id") == Some(&json!(prompt)) && value.get("method").is_none() {
            ensure!(value.get("error").is_none(), "agent/prompt failed: {value}");
            // The document is open (didOpen precedes the prompt): memory before any edit.
            rss_open = daemon.memory_kib().1;
            continue;
        }
        match value.get("method").and_then(Value::as_str) {
            Some("$/agentEvent") => {
                let event = &value["params"]["event"];
                match event["type"].as_str() {
                    Some("tool_execution_end") => {
                        errors += usize::from(event["isError"] != json!(false));
                        clock.tool_end.push(message.at);
                        if clock.tool_end.len() % (size.edits / 10).max(1) == 0 {
                            rss.push(daemon.memory_kib().1);
                        }
                    }
                    Some("agent_settled") => break,
                    _ => {}
                }
            }
            Some("workspace/applyEdit") => {
                clock.apply_edit.push(message.at);
                let changes = apply(&mut buffer, &value["params"]["edit"], &doc_uri)?;
                version += 1;
                daemon.reply(&value["id"], json!({"applied": true}))?;
                daemon.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": doc_uri, "version": version}, "contentChanges": changes}),
                )?;
                clock.did_change.push(Instant::now());
            }
            Some("agent/saveDocuments") => {
                clock.save_asked.push(message.at);
                daemon.reply(&value["id"], json!({"saved": value["params"]["uris"]}))?;
                clock.save_answered.push(Instant::now());
            }
            Some(_) if value.get("id").is_some() => daemon.reply(&value["id"], Value::Null)?,
            _ => {}
        }
    }
    let (peak, _) = daemon.memory_kib();
    let mirror = daemon.request("agent/getDocument", json!({"uri": doc_uri}))?;
    ensure!(
        mirror["text"].as_str() == Some(buffer.to_string().as_str()),
        "the daemon's mirror differs from the client's buffer after the edits"
    );
    daemon.shutdown()?;
    ensure!(
        errors == 0,
        "{errors} of {} edits failed",
        clock.tool_end.len()
    );
    let final_text = buffer.to_string();
    for i in 0..size.edits {
        ensure!(
            final_text.contains(&format!("<<done {i:05}>>")),
            "edit {i} is missing"
        );
    }
    let times = server_times(&clock, &relay.ends(), size.edits)?;
    report(size, &times, rss_open, &rss, peak)
}

/// Per edit: (applyEdit arrival − the model's last bytes) + (tool end − didChange sent) − the
/// client's time answering `agent/saveDocuments` (from its arrival to the answer sent).
fn server_times(
    clock: &Clock,
    model_done: &[Instant],
    edits: usize,
) -> anyhow::Result<Vec<Duration>> {
    for (what, n) in [
        ("applyEdit requests", clock.apply_edit.len()),
        ("didChange echoes", clock.did_change.len()),
        ("saveDocuments requests", clock.save_asked.len()),
        ("tool ends", clock.tool_end.len()),
    ] {
        ensure!(n == edits, "{n} {what} for {edits} edits");
    }
    ensure!(
        model_done.len() > edits,
        "{} model responses for {edits} edits",
        model_done.len()
    );
    Ok((0..edits)
        .map(|k| {
            // Only the part inside the window: the request may arrive while the client is
            // still applying the edit (before its didChange).
            let asked = clock.save_asked[k].max(clock.did_change[k]);
            let client = clock.save_answered[k].saturating_duration_since(asked);
            (clock.apply_edit[k].saturating_duration_since(model_done[k])
                + clock.tool_end[k].saturating_duration_since(clock.did_change[k]))
            .saturating_sub(client)
        })
        .collect())
}

/// Applies the `applyEdit` edits to the client's buffer; returns them as `didChange` events
/// (last first, so that applying them one after another equals applying them together).
fn apply(buffer: &mut Rope, edit: &Value, doc_uri: &str) -> anyhow::Result<Vec<Value>> {
    let edits = edit["documentChanges"]
        .as_array()
        .and_then(|changes| changes.iter().find(|c| c["textDocument"]["uri"] == doc_uri))
        .and_then(|c| c["edits"].as_array())
        .context("applyEdit without documentChanges for the document")?;
    let offset = |rope: &Rope, p: &Value| -> anyhow::Result<usize> {
        let line = p["line"].as_u64().context("position without line")? as usize;
        let column = p["character"]
            .as_u64()
            .context("position without character")? as usize;
        Ok(rope.byte_to_char(rope.line_to_byte(line) + column))
    };
    let mut ordered: Vec<&Value> = edits.iter().collect();
    ordered.sort_by_key(|e| {
        let s = &e["range"]["start"];
        std::cmp::Reverse((s["line"].as_u64(), s["character"].as_u64()))
    });
    for e in &ordered {
        let start = offset(buffer, &e["range"]["start"])?;
        let end = offset(buffer, &e["range"]["end"])?;
        buffer.remove(start..end);
        buffer.insert(start, e["newText"].as_str().unwrap_or_default());
    }
    Ok(ordered
        .into_iter()
        .map(|e| json!({"range": e["range"], "text": e["newText"]}))
        .collect())
}

fn report(
    size: Size,
    times: &[Duration],
    rss_open: u64,
    rss: &[u64],
    peak: u64,
) -> anyhow::Result<Report> {
    let p50 = percentile(times.to_vec(), 50.0);
    let p99 = percentile(times.to_vec(), 99.0);
    let mut report = Report::new(format!(
        "5 daemon: a {:.1} MB document, {} `edit`s",
        size.doc_bytes as f64 / 1e6,
        size.edits
    ));
    report.line(format!(
        "server time per edit: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        ms(p50),
        ms(p99),
        ms(times.iter().copied().max().unwrap_or_default())
    ));
    let mib = |k: u64| k as f64 / 1024.0;
    report.line(format!(
        "daemon RSS with the document open {:.1} MiB, then every {} edits (MiB): {}; peak {:.1} MiB",
        mib(rss_open),
        (size.edits / 10).max(1),
        rss.iter()
            .map(|k| format!("{:.1}", mib(*k)))
            .collect::<Vec<_>>()
            .join(", "),
        mib(peak)
    ));
    let no_pi = "n/a: no LSP daemon";
    report.bar(Bar::new("p50 server time per edit", ms(p50), 5.0, "ms").pi(no_pi));
    report.bar(Bar::new("p99 server time per edit", ms(p99), 20.0, "ms").pi(no_pi));
    // Flat: from the first sample (after 10% of the edits) to the last, the daemon grows by
    // less than one copy of the document (a leak of any per-edit copy would be far above).
    let growth = match (rss.first(), rss.last()) {
        (Some(first), Some(last)) => mib(last.saturating_sub(*first)),
        _ => 0.0,
    };
    report.bar(
        Bar::new(
            "RSS growth, 10% → 100% of the edits",
            growth,
            size.doc_bytes as f64 / (1024.0 * 1024.0),
            "MiB",
        )
        .pi(no_pi),
    );
    Ok(report)
}
