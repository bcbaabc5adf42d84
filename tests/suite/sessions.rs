//! Integration tests: sessions. Files are written through the real store on a temp dir and
//! checked line by line. pi 1.6.0 itself opens and continues our files in
//! `tests/interop/pi.sh`; here "pi opens our file" is also checked with a validator that encodes
//! pi's v3 rules field by field (`support::pi_session`), and "we open pi's file" with fixtures
//! (`tests/fixtures/sessions/`, one of them written by pi itself).

use std::io::Write;
use std::path::{Path, PathBuf};

use agent_lsp::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, MessageContent, StopReason, ThinkingLevel,
    ToolCall, ToolResultMessage, Usage,
};
use agent_lsp::agent::model::Model;
use agent_lsp::model_registry::EnvSource;
use agent_lsp::store::{EntryKind, ForkPoint, SessionError, SessionStore};
use serde_json::json;

use super::support::pi_session::assert_valid_pi_v3;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sessions")
        .join(name)
}

fn model() -> Model {
    Model {
        id: "gpt-4.1".into(),
        provider: "openai".into(),
        api: "openai-completions".into(),
        ..Model::default()
    }
}

fn assistant(
    content: Vec<ContentBlock>,
    stop: StopReason,
    input: u64,
    output: u64,
) -> AgentMessage {
    let mut usage = Usage {
        input,
        output,
        total_tokens: input + output,
        ..Default::default()
    };
    usage.cost.total = (input + output) as f64 / 1e6;
    AgentMessage::from(AssistantMessage {
        content,
        api: "openai-completions".into(),
        provider: "openai".into(),
        model: "gpt-4.1".into(),
        usage,
        stop_reason: stop,
        timestamp: 1_796_020_192_726,
        ..Default::default()
    })
}

fn tool_turn() -> Vec<AgentMessage> {
    vec![
        AgentMessage::from(agent_lsp::agent::message::UserMessage {
            content: "Read notes.txt".into(),
            timestamp: 1_796_020_190_000,
        }),
        assistant(
            vec![ContentBlock::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: json!({"path": "notes.txt"}),
                ..Default::default()
            })],
            StopReason::ToolUse,
            100,
            20,
        ),
        AgentMessage::from(ToolResultMessage {
            tool_call_id: "call_1".into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text("hello")],
            details: Some(json!({})),
            is_error: false,
            timestamp: 1_796_020_193_000,
            ..Default::default()
        }),
        assistant(
            vec![ContentBlock::text("It says hello.")],
            StopReason::Stop,
            130,
            6,
        ),
    ]
}

#[test]
fn a_session_round_trips_and_is_valid_pi_v3() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let cwd = Path::new("/work/project");
    let mut session = store.create(cwd, Some(&model())).unwrap();
    session
        .append_thinking_level(ThinkingLevel::Medium)
        .unwrap();
    for message in tool_turn() {
        session.append_message(&message).unwrap();
    }
    let first = session.entries()[2].id.clone();
    session.append_label(&first, Some("start")).unwrap();
    session.set_name("Notes\nreview").unwrap();
    let path = session.path().unwrap().to_path_buf();
    let id = session.id().to_string();
    assert!(
        path.starts_with(dir.path().join("--work-project--")),
        "{}",
        path.display()
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o700, "session directories are private");
    assert!(
        path.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .ends_with(&format!("_{id}.jsonl"))
    );
    drop(session);

    assert_valid_pi_v3(&path);
    let reopened = store.open(&id).unwrap();
    assert_eq!(reopened.messages(), tool_turn());
    let context = reopened.context();
    assert_eq!(context.thinking_level, ThinkingLevel::Medium);
    let model_ref = context.model.unwrap();
    assert_eq!(
        (model_ref.provider.as_str(), model_ref.model_id.as_str()),
        ("openai", "gpt-4.1")
    );
    assert_eq!(reopened.name().as_deref(), Some("Notes review"));
    assert_eq!(reopened.message_count(), 4);
    let usage = reopened.usage();
    assert_eq!((usage.input, usage.output), (230, 26));
    assert!((usage.cost.total - 256e-6).abs() < 1e-12);
    // The leaf is the last line; every entry's parent is the previous one on a linear session.
    let entries = reopened.entries();
    assert_eq!(
        reopened.leaf_id(),
        Some(entries.last().unwrap().id.as_str())
    );
    for pair in entries.windows(2) {
        assert_eq!(pair[1].parent_id.as_deref(), Some(pair[0].id.as_str()));
    }
}

#[test]
fn a_torn_last_line_is_repaired_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let mut session = store.create(Path::new("/p"), None).unwrap();
    for message in tool_turn() {
        session.append_message(&message).unwrap();
    }
    let path = session.path().unwrap().to_path_buf();
    drop(session);
    let intact = std::fs::read_to_string(&path).unwrap();
    // A crash in the middle of writing an entry: half a line, no newline.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(br#"{"type":"message","id":"deadbeef","parentId":"#)
        .unwrap();
    drop(file);

    let mut reopened = store.open(path.to_str().unwrap()).unwrap();
    assert_eq!(reopened.messages(), tool_turn());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        intact,
        "torn tail removed"
    );
    reopened
        .append_message(&AgentMessage::user_text("next"))
        .unwrap();
    drop(reopened);
    assert_valid_pi_v3(&path);
    assert_eq!(
        store.open(path.to_str().unwrap()).unwrap().message_count(),
        5
    );
}

#[test]
fn a_missing_final_newline_is_added_and_corruption_inside_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let mut session = store.create(Path::new("/p"), None).unwrap();
    session
        .append_message(&AgentMessage::user_text("one"))
        .unwrap();
    session
        .append_message(&AgentMessage::user_text("two"))
        .unwrap();
    let path = session.path().unwrap().to_path_buf();
    drop(session);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.trim_end_matches('\n')).unwrap();
    drop(store.open(path.to_str().unwrap()).unwrap());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);

    let mut lines: Vec<&str> = text.lines().collect();
    lines[1] = "{not json";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    match store.open(path.to_str().unwrap()) {
        Err(SessionError::Corrupt { line, .. }) => assert_eq!(line, 2),
        other => panic!("expected a corruption error, got {other:?}"),
    }
}

#[test]
fn one_writer_per_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let session = store.create(Path::new("/p"), None).unwrap();
    let path = session.path().unwrap().to_path_buf();
    let err = store.open(path.to_str().unwrap()).unwrap_err();
    assert!(matches!(err, SessionError::Locked { .. }), "{err}");
    assert!(err.to_string().contains("in use"), "{err}");
    drop(session);
    let reopened = store.open(path.to_str().unwrap()).unwrap();
    drop(reopened);
    // A lock file left by a killed process names a pid that may be reused by any live process
    // (here our parent): only the OS lock counts, so it is taken over.
    let lock = PathBuf::from(format!("{}.lock", path.display()));
    std::fs::write(&lock, std::os::unix::process::parent_id().to_string()).unwrap();
    let reopened = store.open(path.to_str().unwrap()).unwrap();
    assert_eq!(
        std::fs::read_to_string(&lock).unwrap(),
        std::process::id().to_string()
    );
    drop(reopened);
    assert!(!lock.exists());
}

#[test]
fn a_pi_written_v3_file_opens_and_continues() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("sessions/--home-dev-project--");
    std::fs::create_dir_all(&project).unwrap();
    let path = project.join("2026-11-29T10-00-00-000Z_0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl");
    std::fs::copy(fixture("pi-v3.jsonl"), &path).unwrap();
    let original = std::fs::read_to_string(&path).unwrap();
    let store = SessionStore::new(dir.path().join("sessions"));

    let mut session = store.open("0199a1b2").unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        original,
        "a v3 file is not rewritten"
    );
    assert_eq!(session.cwd(), "/home/dev/project");
    assert_eq!(session.name().as_deref(), Some("Notes review"));
    assert_eq!(session.leaf_id(), Some("a0000011"));
    let context = session.context();
    assert_eq!(context.thinking_level, ThinkingLevel::Low);
    assert_eq!(context.model.unwrap().model_id, "gpt-4.1");
    let texts: Vec<(String, String)> = context
        .messages
        .iter()
        .map(|m| {
            let text = match m {
                AgentMessage::User(u) => u.content.to_text(),
                AgentMessage::Assistant(a) => a.text(),
                other => panic!("unexpected {other:?}"),
            };
            (m.role().to_string(), text)
        })
        .collect();
    let expected = [
        (
            "user",
            "The conversation history before this point was compacted into the following summary:\n\n<summary>\n## Goal\nReview notes.txt\n</summary>",
        ),
        ("assistant", "It says hello."),
        (
            "user",
            "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nTried something else; it did not help.\n</summary>",
        ),
        ("user", "Remember the tests."),
        ("user", "Ran `ls`\n```\nnotes.txt\n```"),
        ("user", "Continue please"),
        ("assistant", "Done."),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(r, t)| (r.to_string(), t.to_string()))
        .collect();
    assert_eq!(texts, expected);

    // Continue: new entries hang off the leaf; old lines stay byte for byte.
    session
        .append_message(&AgentMessage::user_text("And now?"))
        .unwrap();
    let reply = assistant(
        vec![ContentBlock::text("Now this.")],
        StopReason::Stop,
        1,
        1,
    );
    session.append_message(&reply).unwrap();
    drop(session);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(&original));
    let session = store.open(path.to_str().unwrap()).unwrap();
    let n = session.entries().len();
    assert_eq!(
        session.entries()[n - 2].parent_id.as_deref(),
        Some("a0000011")
    );
    assert_eq!(session.messages().len(), 9);
    assert_eq!(session.messages().last(), Some(&reply));
}

#[test]
fn a_pi_v2_file_is_migrated_to_v3() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.jsonl");
    std::fs::copy(fixture("pi-v2.jsonl"), &path).unwrap();
    let store = SessionStore::new(dir.path());
    let session = store.open(path.to_str().unwrap()).unwrap();
    let messages = session.messages();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        messages[1],
        AgentMessage::from(agent_lsp::agent::message::UserMessage {
            content: MessageContent::Text("from a hook".into()),
            timestamp: 1_796_032_802_000,
        })
    );
    drop(session);
    let header: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["version"], 3);
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains(r#""role":"custom""#)
    );
    assert_valid_pi_v3(&path);
}

#[test]
fn forks_copy_the_branch_and_point_at_their_parent() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let mut source = store.create(Path::new("/p"), Some(&model())).unwrap();
    for message in tool_turn() {
        source.append_message(&message).unwrap();
    }
    let first_user = source.entries()[1].id.clone();
    source.append_label(&first_user, Some("start")).unwrap();
    source
        .append_message(&AgentMessage::user_text("second question"))
        .unwrap();
    let second_user = source.entries().last().unwrap().id.clone();

    let (clone, selected) = store.fork(&source, ForkPoint::Leaf).unwrap();
    assert_eq!(selected, None);
    assert_eq!(clone.messages(), source.messages());
    assert_eq!(
        clone.header().parent_session.as_deref(),
        source.path().and_then(|p| p.to_str())
    );
    assert_ne!(clone.id(), source.id());
    let labels: Vec<_> = clone
        .entries()
        .iter()
        .filter_map(|e| match &e.kind {
            EntryKind::Label { label, .. } => label.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(labels, ["start"]);
    assert_valid_pi_v3(clone.path().unwrap());

    let (fork, selected) = store
        .fork(&source, ForkPoint::BeforeUserMessage(&second_user))
        .unwrap();
    assert_eq!(selected.as_deref(), Some("second question"));
    assert_eq!(fork.messages(), tool_turn());
    let not_user = source.entries()[2].id.clone();
    assert!(
        store
            .fork(&source, ForkPoint::BeforeUserMessage(&not_user))
            .is_err()
    );
}

#[test]
fn branching_moves_the_leaf_and_context_follows_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let mut session = store.create(Path::new("/p"), None).unwrap();
    let root = session
        .append_message(&AgentMessage::user_text("q"))
        .unwrap();
    session
        .append_message(&AgentMessage::user_text("branch a"))
        .unwrap();
    session.branch(Some(&root)).unwrap();
    session
        .append_message(&AgentMessage::user_text("branch b"))
        .unwrap();
    let texts = |s: &agent_lsp::store::SessionFile| {
        s.messages()
            .iter()
            .map(|m| match m {
                AgentMessage::User(u) => u.content.to_text(),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(texts(&session), ["q", "branch b"]);
    let path = session.path().unwrap().to_path_buf();
    drop(session);
    // On load, the leaf is the last line of the file.
    assert_eq!(
        texts(&store.open(path.to_str().unwrap()).unwrap()),
        ["q", "branch b"]
    );
    assert!(
        store
            .create(Path::new("/p"), None)
            .unwrap()
            .branch(Some("nope"))
            .is_err()
    );
}

#[test]
fn listing_latest_and_the_default_directory() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let mut a = store.create(Path::new("/one"), None).unwrap();
    a.append_message(&AgentMessage::user_text("hi")).unwrap();
    a.set_name("first").unwrap();
    let a_id = a.id().to_string();
    drop(a);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let b = store.create(Path::new("/one"), None).unwrap();
    let b_id = b.id().to_string();
    drop(b);
    let c = store.create(Path::new("/two"), None).unwrap();
    let c_id = c.id().to_string();
    drop(c);

    let all = store.list().unwrap();
    assert_eq!(all.len(), 3);
    let one = store.list_for_cwd(Path::new("/one")).unwrap();
    assert_eq!(
        one.iter().map(|s| s.id.clone()).collect::<Vec<_>>(),
        [b_id.clone(), a_id.clone()]
    );
    let first = one.iter().find(|s| s.id == a_id).unwrap();
    assert_eq!(
        (
            first.name.as_deref(),
            first.message_count,
            first.cwd.as_str()
        ),
        (Some("first"), 1, "/one")
    );
    assert_eq!(
        store
            .latest_for_cwd(Path::new("/one"))
            .unwrap()
            .unwrap()
            .id(),
        b_id
    );
    assert_eq!(
        store
            .latest_for_cwd(Path::new("/two"))
            .unwrap()
            .unwrap()
            .id(),
        c_id
    );
    assert!(store.latest_for_cwd(Path::new("/three")).unwrap().is_none());
    assert!(matches!(
        store.open("ffffffff-none"),
        Err(SessionError::NotFound(_))
    ));

    let env = |pairs: &[(&str, &str)]| EnvSource::from_pairs(pairs.iter().copied());
    assert_eq!(
        SessionStore::default_dir(&env(&[("HOME", "/h")])),
        Some(PathBuf::from("/h/.local/share/agent-lsp/sessions"))
    );
    assert_eq!(
        SessionStore::default_dir(&env(&[("HOME", "/h"), ("XDG_DATA_HOME", "/x")])),
        Some(PathBuf::from("/x/agent-lsp/sessions"))
    );
    assert_eq!(
        SessionStore::default_dir(&env(&[
            ("XDG_DATA_HOME", "/x"),
            ("AGENT_LSP_SESSION_DIR", "/s")
        ])),
        Some(PathBuf::from("/s"))
    );
}

#[test]
fn summary_roles_are_not_stored_as_messages() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = SessionStore::new(dir.path())
        .create(Path::new("/p"), None)
        .unwrap();
    let summary: AgentMessage = serde_json::from_value(
        json!({"role": "compactionSummary", "summary": "s", "tokensBefore": 1, "timestamp": 1}),
    )
    .unwrap();
    assert!(session.append_message(&summary).is_err());
}

/// A crash can cut the file at any byte: opening always succeeds past the header, keeps exactly
/// the whole entries before the cut, and leaves a file that appends cleanly.
#[test]
fn a_file_cut_at_any_byte_reopens_to_its_complete_lines() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let mut session = store.create(Path::new("/p"), Some(&model())).unwrap();
    for message in tool_turn() {
        session.append_message(&message).unwrap();
    }
    let path = session.path().unwrap().to_path_buf();
    drop(session);
    let full = std::fs::read(&path).unwrap();
    let header_len = full.iter().position(|b| *b == b'\n').unwrap() + 1;
    for cut in (header_len..full.len()).step_by(11).chain([full.len() - 1]) {
        std::fs::write(&path, &full[..cut]).unwrap();
        let kept = &full[..cut];
        let tail_start = kept.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        // A last line cut just before its newline is still a whole entry, and is kept.
        let tail_whole = serde_json::from_slice::<serde_json::Value>(&kept[tail_start..]).is_ok();
        let complete = kept.iter().filter(|b| **b == b'\n').count() - 1 + usize::from(tail_whole);
        let mut reopened = store.open(path.to_str().unwrap()).unwrap();
        assert_eq!(reopened.entries().len(), complete, "cut at {cut}");
        reopened
            .append_message(&AgentMessage::user_text("after"))
            .unwrap();
        drop(reopened);
        assert_valid_pi_v3(&path);
    }
}
