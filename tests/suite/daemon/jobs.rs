//! Daemon tests: background jobs (`bash` with `background: true`, `bash_output`, `bash_kill`;
//! `agent/listJobs`, `agent/killJob`, `agent/jobOutput`, `job_update`), their process trees
//! checked in `/proc` from outside, in the sandbox with and without namespaces and outside it.

use super::*;
use crate::suite::support::jobs::{gone, marker, running, sleepers};

/// The bash call that starts `command` as a background job.
fn background(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(id, "bash", json!({"command": command, "background": true}))
}

/// A job that prints `tick N` every 50 ms, with a child that never ends by itself.
fn ticker(mark: &str) -> String {
    format!("sleep 900.{mark} & i=0; while true; do echo \"tick $i\"; i=$((i+1)); sleep 0.05; done")
}

/// The result texts of the tool calls of run `run`, in order.
fn results_of(events: &[Value], run: &str) -> Vec<(String, bool, Value)> {
    events
        .iter()
        .filter(|e| e["runId"] == run && e["event"]["type"] == "tool_execution_end")
        .map(|e| {
            let result = &e["event"]["result"];
            (
                result["content"][0]["text"].as_str().unwrap().to_owned(),
                e["event"]["isError"].as_bool().unwrap(),
                result["details"].clone(),
            )
        })
        .collect()
}

/// The `job_update` events of the session, in order: `(seq, runId, job)`.
fn job_updates(events: &[Value]) -> Vec<(u64, Value, Value)> {
    events
        .iter()
        .filter(|e| e["event"]["type"] == "job_update")
        .map(|e| {
            (
                e["seq"].as_u64().unwrap(),
                e["runId"].clone(),
                e["event"]["job"].clone(),
            )
        })
        .collect()
}

/// The numbers of the `tick N` lines of `text`.
fn ticks(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|l| l.strip_prefix("tick ")?.parse().ok())
        .collect()
}

/// Polls `agent/jobOutput` until `pred` holds for its output; the result.
async fn output_until(
    client: &LspClient,
    session: &str,
    job: &str,
    pred: impl Fn(&str) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + HANG_BOUND;
    loop {
        let params = json!({"sessionId": session, "jobId": job});
        let out = client.request("agent/jobOutput", params).await;
        if pred(out["output"].as_str().unwrap_or_default()) {
            return out;
        }
        let jobs = (client.request("agent/listJobs", json!({"sessionId": session}))).await;
        assert!(
            tokio::time::Instant::now() < deadline,
            "the job's output never came: {out}; {jobs}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A prompt whose run makes `calls` (then answers "ok"); its events once settled.
async fn run_calls(
    client: &LspClient,
    mock: &MockProvider,
    session: &str,
    calls: Vec<MockResponse>,
) -> (String, Vec<Value>) {
    for call in calls {
        mock.push_response(call);
    }
    mock.push_response(MockResponse::text("ok"));
    let (_, run, _) = prompt(client, json!({"sessionId": session, "message": "go on"})).await;
    let events = client.wait_settled(session, &run).await;
    (run, events)
}

/// The pid `bash` reported for the job it started (the launcher's, when sandboxed).
fn started_pid(text: &str) -> u32 {
    let after = text.split("(pid ").nth(1).expect("a pid in the result");
    after.split(')').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_background_job_is_polled_for_new_output_and_killed_with_its_whole_tree() {
    let mark = marker();
    let (mock, client) = agent_setup(
        vec![
            background("c1", &ticker(&mark)),
            MockResponse::text("started"),
        ],
        LspClient::agent_caps(false),
        json!({"approval": {"bash": "allow"}}),
    )
    .await;
    let (session, run1, _) = prompt(&client, json!({"message": "start the server"})).await;
    let events = client.wait_settled(&session, &run1).await;
    let started = results_of(&events, &run1);
    let (text, is_error, details) = &started[0];
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("Started background job job-1 (pid "),
        "{text}"
    );
    assert!(
        text.ends_with(
            "Read its output with bash_output {\"jobId\":\"job-1\"}; stop it with bash_kill."
        ),
        "{text}"
    );
    assert_eq!(details["jobId"], "job-1");
    assert_eq!(details["sandbox"]["mode"], "workspaceWrite", "{details}");
    let launcher = started_pid(text);
    // The job's start is an event of the run that started it, before the call's end.
    let updates = job_updates(&events);
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].1, run1.as_str());
    assert_eq!(updates[0].2["status"], "running");
    assert_eq!(updates[0].2["command"], ticker(&mark).as_str());
    let end_at = events
        .iter()
        .find(|e| e["event"]["type"] == "tool_execution_end")
        .unwrap()["seq"]
        .as_u64()
        .unwrap();
    assert!(updates[0].0 < end_at);
    let listed = client
        .request("agent/listJobs", json!({"sessionId": session}))
        .await;
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["jobs"][0]["jobId"], "job-1");
    assert_eq!(listed["jobs"][0]["status"], "running");
    assert_eq!(listed["jobs"][0]["exitCode"], Value::Null);
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["jobs"], listed["jobs"]);

    // The model reads what it printed so far, then only what came after.
    output_until(&client, &session, "job-1", |o| ticks(o).contains(&3)).await;
    assert_eq!(sleepers(&mark).len(), 1, "the job's child runs");
    let read = vec![MockResponse::tool_call(
        "c2",
        "bash_output",
        json!({"jobId": "job-1"}),
    )];
    let (run2, events) = run_calls(&client, &mock, &session, read).await;
    let (first, is_error, details) = results_of(&events, &run2).remove(0);
    assert!(!is_error, "{first}");
    assert!(first.ends_with("\n\n[job-1 running]"), "{first}");
    assert_eq!(details, json!({"jobId": "job-1", "status": "running"}));
    let seen = ticks(&first);
    assert_eq!(seen[..4], [0, 1, 2, 3], "{first}");
    let last = *seen.last().unwrap();
    output_until(&client, &session, "job-1", |o| {
        ticks(o).contains(&(last + 12))
    })
    .await;
    let filtered = vec![MockResponse::tool_call(
        "c3",
        "bash_output",
        json!({"jobId": "job-1", "filter": "^tick [0-9]*[05]$"}),
    )];
    let (run3, events) = run_calls(&client, &mock, &session, filtered).await;
    let (second, _, _) = results_of(&events, &run3).remove(0);
    let fresh = ticks(&second);
    assert!(!fresh.is_empty(), "{second}");
    assert!(
        fresh.iter().all(|n| *n > last && n % 5 == 0),
        "only new lines that match: {second}"
    );

    // Stopped: its final status and what it printed since, and nothing of it is left.
    let kill = vec![MockResponse::tool_call(
        "c4",
        "bash_kill",
        json!({"jobId": "job-1"}),
    )];
    let (run4, events) = run_calls(&client, &mock, &session, kill).await;
    let (stopped, is_error, details) = results_of(&events, &run4).remove(0);
    assert!(!is_error, "{stopped}");
    assert!(
        stopped.ends_with("\n\n[job-1 killed: stopped]"),
        "{stopped}"
    );
    assert!(
        ticks(&stopped).iter().all(|n| *n > *fresh.last().unwrap()),
        "{stopped}"
    );
    assert_eq!(
        details,
        json!({"jobId": "job-1", "status": "killed", "exitCode": null})
    );
    gone(&mark, &[launcher]).await;
    let updates = job_updates(&client.events(&session));
    let statuses: Vec<&Value> = updates.iter().map(|u| &u.2["status"]).collect();
    assert_eq!(statuses, ["running", "killed"]);
    assert_eq!(updates[1].1, run4.as_str());
    assert!(
        updates[1].2["endedAt"].as_i64().unwrap() >= updates[1].2["startedAt"].as_i64().unwrap()
    );
    let listed = client
        .request("agent/listJobs", json!({"sessionId": session}))
        .await;
    assert_eq!(listed["jobs"][0], updates[1].2);
    // Its output stays readable for the client, whose reading moves nothing.
    let out = client
        .request(
            "agent/jobOutput",
            json!({"sessionId": session, "jobId": "job-1"}),
        )
        .await;
    assert_eq!(out["jobId"], "job-1");
    assert_eq!(out["truncated"], false);
    assert_eq!(ticks(out["output"].as_str().unwrap())[0], 0);
}

#[tokio::test]
async fn a_job_without_namespaces_dies_whole_and_the_client_lists_reads_and_kills_it() {
    let mark = marker();
    let mock = MockProvider::start(MockScript {
        responses: vec![
            background(
                "c1",
                &format!("setsid sleep 901.{mark} & {}", ticker(&mark)),
            ),
            MockResponse::text("started"),
        ],
    })
    .await
    .unwrap();
    let client = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env: vec![("AGENT_LSP_TEST_SANDBOX_NO_NAMESPACES".into(), "1".into())],
    })
    .await;
    client
        .initialize(
            LspClient::agent_caps(false),
            json!({"approval": {"bash": "allow"}}),
        )
        .await;
    let (session, run, _) = prompt(&client, json!({"message": "start"})).await;
    let events = client.wait_settled(&session, &run).await;
    let (text, _, details) = results_of(&events, &run).remove(0);
    assert_eq!(details["sandbox"]["mode"], "workspaceWrite", "{details}");
    let launcher = started_pid(&text);
    output_until(&client, &session, "job-1", |o| ticks(o).contains(&2)).await;
    assert_eq!(
        sleepers(&mark).len(),
        2,
        "both children run: {:?}",
        running(&mark)
    );

    let unknown = client
        .request_raw(
            "agent/killJob",
            json!({"sessionId": session, "jobId": "job-9"}),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("job-9"),
        "{unknown}"
    );
    let killed = client
        .request(
            "agent/killJob",
            json!({"sessionId": session, "jobId": "job-1"}),
        )
        .await;
    assert_eq!(killed["job"]["status"], "killed", "{killed}");
    assert_eq!(killed["job"]["jobId"], "job-1");
    gone(&mark, &[launcher]).await;
    // The kill's event came before its answer, with no run active.
    let updates = job_updates(&client.events(&session));
    assert_eq!(updates.len(), 2, "{updates:?}");
    assert_eq!(updates[1].1, Value::Null);
    assert_eq!(updates[1].2, killed["job"]);
}

#[tokio::test]
async fn a_job_still_running_at_shutdown_is_killed_and_a_hand_approved_one_too() {
    let mark = marker();
    let (_mock, client) = agent_setup(
        vec![
            background("c1", &ticker(&mark)),
            MockResponse::text("started"),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    // Approved by hand: outside the sandbox, in a process group of its own.
    let (session, run, _) = prompt(&client, json!({"message": "start"})).await;
    let events = client.wait_settled(&session, &run).await;
    let (text, _, details) = results_of(&events, &run).remove(0);
    assert_eq!(
        details["sandbox"],
        json!({"mode": "off", "approvedByUser": true})
    );
    let shell = started_pid(&text);
    output_until(&client, &session, "job-1", |o| ticks(o).contains(&1)).await;
    let asked = requests_of(&client, "agent/beforeToolCall");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["params"]["kind"], "execute");
    assert_eq!(
        asked[0]["params"]["title"],
        format!("Run in the background: {}", ticker(&mark)).as_str()
    );
    assert!(!running(&mark).is_empty());
    // `shutdown` ends the jobs while the daemon still runs.
    client.request("shutdown", Value::Null).await;
    gone(&mark, &[shell]).await;
    client
        .wait_for("the job's end", |m| {
            m["method"] == "$/agentEvent" && m["params"]["event"]["job"]["status"] == "killed"
        })
        .await;
}

#[tokio::test]
async fn a_background_job_cannot_write_outside_the_workspace() {
    let outside = crate::suite::support::outside_tmp();
    let target = outside.path().join("escaped.txt");
    let (mock, client) = agent_setup(
        vec![
            background("c1", &format!("echo x > {}", target.display())),
            MockResponse::text("started"),
        ],
        LspClient::agent_caps(false),
        json!({"approval": {"bash": "allow"}}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "start"})).await;
    client.wait_settled(&session, &run).await;
    let ended = client
        .wait_for("the job's end", |m| {
            m["method"] == "$/agentEvent" && m["params"]["event"]["job"]["status"] == "exited"
        })
        .await;
    assert_eq!(ended["params"]["event"]["job"]["exitCode"], 1, "{ended}");
    assert!(!target.exists());
    let read = vec![MockResponse::tool_call(
        "c2",
        "bash_output",
        json!({"jobId": "job-1"}),
    )];
    let (run2, events) = run_calls(&client, &mock, &session, read).await;
    let (text, is_error, details) = results_of(&events, &run2).remove(0);
    assert!(!is_error, "{text}");
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(
        text.contains("\n\n[job-1 exited: exit code 1]\n\nThis command ran sandboxed"),
        "{text}"
    );
    assert!(
        text.contains("It may have failed because the sandbox refused an access"),
        "{text}"
    );
    assert_eq!(details["exitCode"], 1);
    // Reading an unknown job is the model's error, naming the jobs there are.
    let read = vec![MockResponse::tool_call(
        "c3",
        "bash_output",
        json!({"jobId": "job-7"}),
    )];
    let (run3, events) = run_calls(&client, &mock, &session, read).await;
    let (text, is_error, _) = results_of(&events, &run3).remove(0);
    assert!(is_error);
    assert_eq!(
        text,
        "No background job \"job-7\" in this session: there are job-1 (exited)."
    );
}

/// The journal's entries of job `job` in the session file at `path`.
fn job_entries(path: &str, job: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["customType"] == "agent-lsp.effect" && e["data"]["job"] == job)
        .map(|e| e["data"].clone())
        .collect()
}

/// The file names (last path component) of a journal entry.
fn names(entry: &Value) -> Vec<String> {
    (entry["files"].as_array().unwrap().iter())
        .map(|f| {
            f["path"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn a_jobs_file_effects_are_journaled_at_each_read_and_at_its_end() {
    let triggers = crate::suite::support::outside_tmp();
    let (first, second) = (
        triggers.path().join("first"),
        triggers.path().join("second"),
    );
    let command = format!(
        "until [ -e {first} ]; do sleep 0.02; done; echo made > made.txt; echo written; \
         until [ -e {second} ]; do sleep 0.02; done; echo late > late.txt; echo done",
        first = first.display(),
        second = second.display()
    );
    let (mock, client) = agent_setup(
        vec![background("c1", &command), MockResponse::text("started")],
        LspClient::agent_caps(false),
        json!({"approval": {"bash": "allow", "write": "allow"}}),
    )
    .await;
    let (session, run1, _) = prompt(&client, json!({"message": "start"})).await;
    client.wait_settled(&session, &run1).await;
    std::fs::write(&first, "").unwrap();
    output_until(&client, &session, "job-1", |o| o.contains("written")).await;
    // While the job runs, the agent writes a file of its own, then reads the job.
    let calls = vec![
        MockResponse::tool_call(
            "c2",
            "write",
            json!({"path": "other.txt", "content": "mine\n"}),
        ),
        MockResponse::tool_call("c3", "bash_output", json!({"jobId": "job-1"})),
    ];
    let (run2, _) = run_calls(&client, &mock, &session, calls).await;
    let changes = client
        .request(
            "agent/runChanges",
            json!({"sessionId": session, "runId": run2}),
        )
        .await;
    let mut changed: Vec<(String, String)> = (changes["files"].as_array().unwrap().iter())
        .map(|f| {
            let name = f["path"].as_str().unwrap().rsplit('/').next().unwrap();
            (name.to_owned(), f["change"].as_str().unwrap().to_owned())
        })
        .collect();
    changed.sort();
    assert_eq!(
        changed,
        [
            ("made.txt".to_owned(), "created".to_owned()),
            ("other.txt".to_owned(), "created".to_owned())
        ],
        "{changes}"
    );
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    let file = state["sessionFile"].as_str().unwrap().to_owned();
    let entries = job_entries(&file, "job-1");
    // The start (nothing changed yet), then the read: the job's file, not the agent's.
    assert_eq!(entries.len(), 2, "{entries:#?}");
    assert_eq!(entries[0]["toolCallId"], "c1");
    assert_eq!(entries[0]["run"], run1.as_str());
    assert_eq!(names(&entries[0]), Vec::<String>::new());
    assert_eq!(entries[1]["toolCallId"], "c3");
    assert_eq!(entries[1]["tool"], "bash_output");
    assert_eq!(entries[1]["run"], run2.as_str());
    assert_eq!(names(&entries[1]), ["made.txt"]);

    // It ends by itself between runs: its last entry, under the call that started it.
    std::fs::write(&second, "").unwrap();
    client
        .wait_for("the job's end", |m| {
            m["method"] == "$/agentEvent" && m["params"]["event"]["job"]["status"] == "exited"
        })
        .await;
    let deadline = tokio::time::Instant::now() + HANG_BOUND;
    while job_entries(&file, "job-1").len() < 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no entry at the job's end"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let last = &job_entries(&file, "job-1")[2];
    assert_eq!(last["toolCallId"], "c1");
    assert_eq!(last["tool"], "bash");
    assert_eq!(names(last), ["late.txt"]);
    // What the job made is reverted with the run that recorded it.
    let reverted = client
        .request("agent/revert", json!({"sessionId": session, "runId": run2}))
        .await;
    assert_eq!(
        reverted["reverted"].as_array().unwrap().len(),
        3,
        "{reverted}"
    );
    for name in ["made.txt", "other.txt", "late.txt"] {
        assert!(!client.workspace.path().join(name).exists(), "{name}");
    }
}

#[tokio::test]
async fn a_sandboxed_dev_server_dies_with_the_daemon_even_when_it_is_killed() {
    // A real server, on a port the system picks, serving a folder only this test names.
    let mark = marker();
    let served = crate::suite::support::outside_tmp();
    let folder = served.path().join(&mark);
    std::fs::create_dir(&folder).unwrap();
    let command = format!(
        "python3 -u -m http.server 0 --bind 127.0.0.1 --directory {}",
        folder.display()
    );
    // Sandboxed with the network on: with it off, no socket can be made at all.
    let (_mock, mut client) = agent_setup(
        vec![background("c1", &command), MockResponse::text("started")],
        LspClient::agent_caps(false),
        json!({"approval": {"bash": "allow"}, "sandboxNetwork": true}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "serve"})).await;
    let events = client.wait_settled(&session, &run).await;
    let (text, _, details) = results_of(&events, &run).remove(0);
    assert_eq!(
        details["sandbox"],
        json!({"mode": "workspaceWrite", "network": true})
    );
    let launcher = started_pid(&text);
    let out = output_until(&client, &session, "job-1", |o| {
        o.contains("Serving HTTP on")
    })
    .await;
    assert!(out["output"].as_str().unwrap().contains("port "), "{out}");
    assert!(!running(&mark).is_empty(), "the server runs");
    // No shutdown, no exit: the daemon is killed, and its jobs' lifelines close with it.
    client.child.start_kill().unwrap();
    client.child.wait().await.unwrap();
    gone(&mark, &[launcher]).await;
}
