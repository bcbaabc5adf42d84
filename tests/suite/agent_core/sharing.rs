//! The transcript is shared, not copied, per turn: the provider request and the tool hooks see
//! the loop's own snapshot (`Arc<Vec<AgentMessage>>`), and a hook that keeps its snapshot keeps
//! exactly what it saw while the loop goes on appending (copy-on-write).

use std::sync::{Arc, Mutex};

use agent_lsp::agent::config::AgentLoopConfig;
use agent_lsp::agent::hooks::{AfterToolCallHook, AgentContext, BeforeToolCallHook};
use agent_lsp::agent::message::{AgentMessage, CustomMessage};
use agent_lsp::agent::run_loop::run_agent_loop;
use agent_lsp::agent::stream_contract::{AssistantEventStream, StreamFn, StreamRequest};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::suite::support::mock_stream::*;

/// Address of a transcript snapshot (identifies the allocation, not the content).
fn addr(messages: &Arc<Vec<AgentMessage>>) -> usize {
    Arc::as_ptr(messages) as usize
}

/// A provider that, like the real ones, keeps nothing of the request: it only notes which
/// snapshot it was given and how long it was. Answers: one `echo` call per request until the
/// last, then text.
struct Noting {
    seen: Mutex<Vec<(usize, usize)>>,
    tool_turns: usize,
}

impl StreamFn for Noting {
    fn stream(&self, request: StreamRequest) -> AssistantEventStream {
        let messages = &request.context.messages;
        let mut seen = self.seen.lock().unwrap();
        seen.push((addr(messages), messages.len()));
        let reply = if seen.len() <= self.tool_turns {
            let id = format!("call-{}", seen.len());
            tool_use(vec![tool_call(&id, "echo", json!({"value": "x"}))])
        } else {
            text_reply("done")
        };
        terminal(reply)
    }
}

type Seen = Arc<Mutex<Vec<(usize, usize)>>>;

fn noting_before(seen: Seen, kept: Arc<Mutex<Vec<(usize, AgentContext)>>>) -> BeforeToolCallHook {
    Arc::new(move |ctx, _| {
        let messages = &ctx.context.messages;
        seen.lock().unwrap().push((addr(messages), messages.len()));
        kept.lock()
            .unwrap()
            .push((messages.len(), ctx.context.clone()));
        Box::pin(async { Ok(None) })
    })
}

fn noting_after(seen: Seen) -> AfterToolCallHook {
    Arc::new(move |ctx, _| {
        let messages = &ctx.context.messages;
        seen.lock().unwrap().push((addr(messages), messages.len()));
        Box::pin(async { Ok(None) })
    })
}

async fn run(
    provider: Arc<Noting>,
    before: Option<BeforeToolCallHook>,
    after: Option<AfterToolCallHook>,
    history: Vec<AgentMessage>,
) -> Vec<AgentMessage> {
    let mut config = AgentLoopConfig::new(create_model());
    config.hooks.before_tool_call = before;
    config.hooks.after_tool_call = after;
    let executed = Arc::new(Mutex::new(Vec::new()));
    let context = AgentContext::new(history, vec![echo_tool(executed)]);
    let outcome = run_agent_loop(
        vec![user("go")],
        context,
        config,
        Recorder::default().emit(),
        CancellationToken::new(),
        provider,
    )
    .await;
    assert_eq!(outcome.error, None);
    outcome.new_messages
}

#[tokio::test]
async fn requests_and_tool_hooks_get_the_loops_own_transcript() {
    let provider = Arc::new(Noting {
        seen: Mutex::new(Vec::new()),
        tool_turns: 3,
    });
    let hooks: Seen = Arc::default();
    let kept = Arc::new(Mutex::new(Vec::new()));
    let before = noting_before(hooks.clone(), kept.clone());
    let new = run(
        provider.clone(),
        Some(before),
        Some(noting_after(hooks.clone())),
        vec![],
    )
    .await;
    assert_eq!(roles(&new).len(), 9, "{:?}", roles(&new));
    let requests = provider.seen.lock().unwrap().clone();
    let hooks = hooks.lock().unwrap().clone();
    // The tools' system declaration and the prompt, then two messages a turn; each tool call's hooks see the request's transcript plus the
    // assistant message that made the call.
    assert_eq!(
        requests.iter().map(|r| r.1).collect::<Vec<_>>(),
        [2, 4, 6, 8]
    );
    assert_eq!(
        hooks.iter().map(|h| h.1).collect::<Vec<_>>(),
        [3, 3, 5, 5, 7, 7]
    );
    // The before hook keeps its context, so the next append copies the transcript (see
    // `a_kept_snapshot_keeps_what_the_hook_saw`); until then both hooks of a call share it.
    for pair in hooks.chunks(2) {
        assert_eq!(
            pair[0].0, pair[1].0,
            "before/after hooks got different copies"
        );
    }
}

#[tokio::test]
async fn without_kept_snapshots_the_transcript_is_never_copied() {
    let provider = Arc::new(Noting {
        seen: Mutex::new(Vec::new()),
        tool_turns: 3,
    });
    let hooks: Seen = Arc::default();
    // An after hook that keeps nothing: the loop's appends find the snapshot unshared.
    run(
        provider.clone(),
        None,
        Some(noting_after(hooks.clone())),
        vec![],
    )
    .await;
    let requests = provider.seen.lock().unwrap().clone();
    let hooks = hooks.lock().unwrap().clone();
    let first = requests[0].0;
    assert!(
        requests.iter().chain(hooks.iter()).all(|r| r.0 == first),
        "one allocation for the whole run: requests {requests:?}, hooks {hooks:?}"
    );
}

#[tokio::test]
async fn a_kept_snapshot_keeps_what_the_hook_saw() {
    let provider = Arc::new(Noting {
        seen: Mutex::new(Vec::new()),
        tool_turns: 3,
    });
    let kept = Arc::new(Mutex::new(Vec::new()));
    let before = noting_before(Arc::default(), kept.clone());
    let new = run(provider, Some(before), None, vec![]).await;
    let kept = kept.lock().unwrap();
    assert_eq!(kept.len(), 3);
    for (len, context) in kept.iter() {
        // Unchanged by the later appends, and a prefix of the final transcript.
        assert_eq!(context.messages.len(), *len);
        assert_eq!(context.messages.as_slice(), &new[..*len]);
        assert_eq!(context.tools.len(), 1);
    }
}

#[tokio::test]
async fn custom_roles_are_filtered_from_a_copy_and_stay_in_the_transcript() {
    let provider = Arc::new(Noting {
        seen: Mutex::new(Vec::new()),
        tool_turns: 1,
    });
    let note = AgentMessage::from(CustomMessage {
        role: "note".into(),
        fields: Default::default(),
    });
    let hooks: Seen = Arc::default();
    let new = run(
        provider.clone(),
        None,
        Some(noting_after(hooks.clone())),
        vec![note],
    )
    .await;
    assert_eq!(
        roles(&new),
        ["system", "user", "assistant", "toolResult", "assistant"]
    );
    let requests = provider.seen.lock().unwrap().clone();
    let hooks = hooks.lock().unwrap().clone();
    // The provider never sees the custom message; the hooks' context still holds it.
    assert_eq!(requests.iter().map(|r| r.1).collect::<Vec<_>>(), [2, 4]);
    assert_eq!(hooks.iter().map(|h| h.1).collect::<Vec<_>>(), [4]);
    assert!(requests.iter().all(|r| r.0 != hooks[0].0));
}

#[test]
fn the_model_is_read_without_copying_the_state() {
    let (agent, _) = super::agent_with(MockStream::responses(vec![text_reply("Hi")]));
    let mut model = create_model();
    model.id = "another".into();
    agent.set_model(model.clone());
    assert_eq!(agent.model(), model);
    assert_eq!(agent.state().model, model);
}
