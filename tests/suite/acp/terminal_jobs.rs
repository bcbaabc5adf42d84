//! Background jobs with a client that offers terminals: a job that would run unsandboxed anyway
//! runs in a client terminal of its own (shown in the tool call), `bash_output` reads what is
//! new through `terminal/output`, `bash_kill`, the job's own exit, `session/close` and the
//! agent's exit end it with `terminal/kill` and `terminal/release`; a job the sandbox confines
//! runs here, sandboxed.

use serde_json::{Value, json};

use super::support::{AcpEnv, Transcript, steps};

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"toolCalls": [{"id": id, "name": name, "arguments": args}]})
}

fn background(command: &str) -> Value {
    call(
        "b1",
        "bash",
        json!({"command": command, "background": true}),
    )
}

fn read_job(id: &str) -> Value {
    call(id, "bash_output", json!({"jobId": "job-1"}))
}

/// The text of a call's final update (after the terminal, when it shows one).
fn result_text(t: &Transcript, id: &str) -> String {
    let calls = t.tool_call(id);
    let done = calls
        .iter()
        .rev()
        .find(|u| u["status"].is_string())
        .unwrap();
    let content = done["content"].as_array().unwrap();
    let text = content.iter().find(|c| c["type"] == "content").unwrap();
    text["content"]["text"].as_str().unwrap().to_owned()
}

/// The job's state as the last update of the call that started it carried it.
fn last_job(t: &Transcript) -> Value {
    (t.tool_call("b1").into_iter().rev())
        .find_map(|u| u["_meta"]["agent-lsp"]["job"].as_object().cloned())
        .map(Value::Object)
        .expect("a job update")
}

/// The positions on the wire of the agent's requests of `method`.
fn positions(t: &Transcript, method: &str) -> Vec<usize> {
    (t.incoming().iter().enumerate())
        .filter(|(_, m)| m["method"] == method && m.get("id").is_some())
        .map(|(i, _)| i)
        .collect()
}

/// Where on the wire the agent answered the client's (first) request of `request_method`.
fn answer_position(t: &Transcript, request_method: &str) -> usize {
    let id = (t.wire().iter())
        .find(|w| w["dir"] == "out" && w["msg"]["method"] == request_method)
        .map(|w| w["msg"]["id"].clone())
        .unwrap();
    (t.incoming().iter())
        .position(|m| m["id"] == id && m.get("method").is_none())
        .unwrap()
}

fn assert_killed_then_released(t: &Transcript) {
    let terminal = &t.0["terminals"][0];
    assert_eq!(terminal["killed"], true, "{terminal}");
    assert_eq!(terminal["released"], true, "{terminal}");
    let (kills, releases) = (
        positions(t, "terminal/kill"),
        positions(t, "terminal/release"),
    );
    assert_eq!((kills.len(), releases.len()), (1, 1));
    assert!(kills[0] < releases[0], "killed, then released");
}

#[tokio::test]
async fn a_job_runs_in_a_client_terminal_and_bash_output_reads_only_what_is_new() {
    // The terminal runs in the project: `go` is the file the test writes between the reads.
    let command = "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second; \
                   while true; do sleep 0.05; done";
    let env = AcpEnv::with_script(json!({"responses": [
        background(command), {"text": "started"},
        read_job("o1"), {"text": "read"},
        read_job("o2"), {"text": "read again"},
        call("k1", "bash_kill", json!({"jobId": "job-1"})), {"text": "stopped"}
    ]}))
    .await;
    let go = env.file("go");
    let t = env
        .run(json!({
            "client": {"terminal": true, "permissions": ["allow_once"]},
            "steps": steps(&env, vec![
                json!({"op": "prompt", "text": "start it", "as": "p1"}),
                json!({"op": "untilTerminal", "index": 0, "contains": "first"}),
                json!({"op": "prompt", "text": "read it", "as": "p2"}),
                json!({"op": "writeFile", "path": go, "content": ""}),
                json!({"op": "untilTerminal", "index": 0, "contains": "second"}),
                json!({"op": "prompt", "text": "read it again", "as": "p3"}),
                json!({"op": "prompt", "text": "stop it", "as": "p4"}),
            ]),
        }))
        .await;
    assert_eq!(t.stop_reason("p4"), "end_turn");
    let terminals = t.0["terminals"].as_array().unwrap();
    assert_eq!(terminals.len(), 1, "{terminals:?}");
    assert_eq!(terminals[0]["args"], json!(["-c", command]));
    assert_eq!(terminals[0]["cwd"], env.project().display().to_string());
    assert_eq!(terminals[0]["outputByteLimit"], 262144);
    // The call answered at once, showing the job's terminal.
    let start = t.tool_call("b1");
    let done = start
        .iter()
        .rev()
        .find(|u| u["status"].is_string())
        .unwrap();
    assert_eq!(done["status"], "completed");
    assert_eq!(
        done["content"][0],
        json!({"type": "terminal", "terminalId": "term-1"})
    );
    let text = result_text(&t, "b1");
    assert!(
        text.starts_with(&format!(
            "Started background job job-1 (in the client's terminal): {command}\n(no output yet)"
        )),
        "{text}"
    );
    let first = result_text(&t, "o1");
    assert!(first.starts_with("first\n"), "{first}");
    assert!(
        !first.contains("second") && first.ends_with("[job-1 running]"),
        "{first}"
    );
    let second = result_text(&t, "o2");
    assert!(second.starts_with("second\n"), "{second}");
    assert!(
        !second.contains("first") && second.ends_with("[job-1 running]"),
        "{second}"
    );
    let stopped = result_text(&t, "k1");
    assert!(stopped.ends_with("[job-1 killed: stopped]"), "{stopped}");
    assert_killed_then_released(&t);
    let job = last_job(&t);
    assert_eq!(job["status"], "killed", "{job}");
    // Reads go to the client: one per bash_output, and the last one before the release.
    assert!(positions(&t, "terminal/output").len() >= 3);
}

#[tokio::test]
async fn a_terminal_job_that_exits_by_itself_is_reported_ended_and_released() {
    let env = AcpEnv::with_script(json!({"responses": [
        background("echo done-now; exit 3"), {"text": "started"},
        read_job("o1"), {"text": "read"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"terminal": true, "permissions": ["allow_once"]},
            "steps": steps(&env, vec![
                json!({"op": "prompt", "text": "start it", "as": "p1"}),
                json!({"op": "untilTerminal", "index": 0, "released": true}),
                json!({"op": "prompt", "text": "read it", "as": "p2"}),
            ]),
        }))
        .await;
    assert_eq!(t.stop_reason("p2"), "end_turn");
    let terminal = &t.0["terminals"][0];
    assert_eq!(terminal["released"], true, "{terminal}");
    assert_eq!(terminal["killed"], false, "{terminal}");
    assert!(positions(&t, "terminal/kill").is_empty());
    // Its output was read before the release: the model still gets it.
    let read = result_text(&t, "o1");
    assert!(read.starts_with("done-now\n"), "{read}");
    assert!(read.ends_with("[job-1 exited: exit code 3]"), "{read}");
    // Its end, held between the turns, is told at the start of the next one.
    let job = last_job(&t);
    assert_eq!(
        (&job["status"], &job["exitCode"]),
        (&json!("exited"), &json!(3))
    );
    let retitled = (t.tool_call("b1").into_iter().rev())
        .find(|u| u["_meta"]["agent-lsp"]["job"].is_object())
        .unwrap();
    assert!(
        (retitled["title"].as_str().unwrap()).ends_with("(job-1: exited, exit code 3)"),
        "{retitled}"
    );
}

#[tokio::test]
async fn session_close_kills_and_releases_a_running_terminal_job() {
    let env = AcpEnv::with_script(json!({"responses": [
        background("while true; do echo tick; sleep 0.05; done"), {"text": "started"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"terminal": true, "permissions": ["allow_once"]},
            "steps": steps(&env, vec![
                json!({"op": "prompt", "text": "start it", "as": "p1"}),
                json!({"op": "request", "method": "session/close",
                       "params": {"sessionId": "$session"}, "as": "close"}),
            ]),
        }))
        .await;
    t.result("close");
    assert_killed_then_released(&t);
    // Both before `session/close` was answered.
    let closed = answer_position(&t, "session/close");
    assert!(positions(&t, "terminal/release")[0] < closed);
}

#[tokio::test]
async fn the_agents_exit_kills_and_releases_a_running_terminal_job() {
    let env = AcpEnv::with_script(json!({"responses": [
        background("while true; do echo tick; sleep 0.05; done"), {"text": "started"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"terminal": true, "permissions": ["allow_once"]},
            "steps": steps(&env, vec![
                json!({"op": "prompt", "text": "start it", "as": "p1"}),
                json!({"op": "exitAgent"}),
            ]),
        }))
        .await;
    assert_eq!(t.stop_reason("p1"), "end_turn");
    assert_killed_then_released(&t);
}

/// A chatty job prints more than the terminal keeps between two reads: the read says output
/// was dropped, and returns what the client still holds.
#[tokio::test]
async fn a_read_after_the_client_dropped_output_says_so() {
    let command = "head -c 300000 /dev/zero | tr '\\0' x; echo; echo the-end; \
                   while true; do sleep 0.05; done";
    let env = AcpEnv::with_script(json!({"responses": [
        background(command), {"text": "started"},
        read_job("o1"), {"text": "read"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"terminal": true, "permissions": ["allow_once"]},
            "steps": steps(&env, vec![
                json!({"op": "prompt", "text": "start it", "as": "p1"}),
                json!({"op": "untilTerminal", "index": 0, "contains": "the-end"}),
                json!({"op": "prompt", "text": "read it", "as": "p2"}),
            ]),
        }))
        .await;
    assert_eq!(t.stop_reason("p2"), "end_turn");
    assert_eq!(t.0["terminals"][0]["truncated"], true);
    let read = result_text(&t, "o1");
    assert!(read.contains("the-end\n"), "{}", &read[read.len() - 600..]);
    assert!(
        read.ends_with(
            "[job-1 running]\n\nThe client's terminal keeps only the last 256KB of a job's \
             output: part of what the job printed since the last read may be missing, and the \
             start of what is shown may have been read before."
        ),
        "{}",
        &read[read.len() - 600..]
    );
}

/// In bypassPermissions a command runs unasked, so in the sandbox: a job the sandbox confines
/// runs here (no `terminal/create`), and `session/close` stops it.
#[tokio::test]
async fn a_job_the_sandbox_confines_runs_here_and_session_close_stops_it() {
    let mark = crate::suite::support::jobs::marker();
    let command = format!("echo here; sleep 900.{mark}");
    let env = AcpEnv::with_script(json!({"responses": [
        background(&command), {"text": "started"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"terminal": true, "permissions": []},
            "steps": steps(&env, vec![
                json!({"op": "request", "method": "session/set_mode", "as": "mode",
                       "params": {"sessionId": "$session", "modeId": "bypassPermissions"}}),
                json!({"op": "prompt", "text": "start it", "as": "p1"}),
                json!({"op": "request", "method": "session/close",
                       "params": {"sessionId": "$session"}, "as": "close"}),
            ]),
        }))
        .await;
    t.result("close");
    assert!(t.0["terminals"].as_array().unwrap().is_empty());
    let text = result_text(&t, "b1");
    assert!(
        text.starts_with("Started background job job-1 (pid "),
        "{text}"
    );
    assert_eq!(last_job(&t)["status"], "running");
    crate::suite::support::jobs::gone(&mark, &[]).await;
}
