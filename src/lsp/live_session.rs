//! The daemon's part of a live session: the core [`Session`] with its [`Emitter`] (which
//! numbers every `$/agentEvent`) and the connection it belongs to. How the daemon decides, asks
//! and shows is its [`View`](crate::core::session::View), in `view.rs`.

use std::sync::Arc;

use crate::core::session::{Refusal, Session};
use crate::core::{CompactError, LiveSettings};
use crate::lsp::conn::ConnCtx;
use crate::lsp::events::Emitter;
use crate::lsp::protocol::{EventBody, SessionEvent};
use crate::rpc::jsonrpc::{ResponseError, code};

pub use crate::core::session::{QueueKind, new_id};

/// A live session of the daemon.
pub type LiveSession = Session<LspView>;

/// What the daemon keeps of a session besides the core.
pub struct LspView {
    pub emitter: Emitter,
    pub ctx: Arc<ConnCtx>,
}

impl LspView {
    pub fn new(ctx: Arc<ConnCtx>, session_id: &str) -> LspView {
        LspView {
            emitter: Emitter::new(ctx.out.output().clone(), session_id, ctx.config.events()),
            ctx,
        }
    }
}

/// Tells the client the session's model or thinking level changed (`model_update`).
pub fn announce_settings(session: &LiveSession, settings: &LiveSettings) {
    let run = session.active_run();
    let event = SessionEvent::ModelUpdate(settings.clone());
    (session.view.emitter).emit(run.as_deref(), EventBody::Session(event));
}

/// A prompt while `agent/compact` runs.
const COMPACTING: &str = "A compaction is running; prompt again after its compaction_end";
/// `agent/compact` while a run is active.
const COMPACT_BUSY: &str =
    "Cannot compact while a run is active; abort it or wait for agent_settled";

/// Why a prompt, steer or follow-up was refused.
pub fn prompt_refusal(e: Refusal) -> ResponseError {
    match e {
        Refusal::Running => ResponseError::new(code::AGENT_BUSY, Refusal::Running.to_string()),
        Refusal::Compacting => ResponseError::new(code::AGENT_BUSY, COMPACTING),
        Refusal::Agent(text) => ResponseError::internal(text),
    }
}

/// Why `agent/compact` (or `/compact`) was refused.
pub fn compact_refusal(e: Refusal) -> ResponseError {
    match e {
        Refusal::Running => ResponseError::new(code::AGENT_BUSY, COMPACT_BUSY),
        Refusal::Compacting => ResponseError::new(code::AGENT_BUSY, CompactError::Busy.to_string()),
        Refusal::Agent(text) => ResponseError::internal(text),
    }
}
