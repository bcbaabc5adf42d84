//! What the ACP client offers, as the session's tools see it: with `fs.readTextFile` /
//! `fs.writeTextFile`, `read`, `edit` and `write` go through `fs/read_text_file` /
//! `fs/write_text_file` (the client's unsaved buffers, its review of every change); with
//! `terminal`, `bash` runs in a client terminal embedded in the tool call, and so does a
//! background job (`terminal_job.rs`). Otherwise the disk and the local `bash`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::acp::request::request;
use crate::acp::terminal_job;
use crate::agent::message::ToolDeclaration;
use crate::agent::tool::{AgentTool, AgentToolResult, ToolError, ToolInput, ToolRef};
use crate::core::FrontEnd;
use crate::rpc::outgoing::{Outgoing, RequestError};
use crate::sandbox::{CallMode, Sandbox};
use crate::tools::paths::Roots;
use crate::tools::{
    self, BashTool, DiskWorkspace, FileSnapshot, JobHost, Jobs, ToolContext, ToolOptions,
    Workspace, WorkspaceError, WriteOutcome, WriteRequest,
};

/// What the client offered in `initialize`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientCaps {
    pub read_text_file: bool,
    pub write_text_file: bool,
    pub terminal: bool,
    /// The client answers form elicitations (`elicitation/create`): questions for the user.
    pub elicitation_form: bool,
}

/// How long a file request may take before the tool fails.
const FS_TIMEOUT: Duration = Duration::from_secs(60);
/// A command's default limit, as the local `bash` tool has none: ten minutes.
const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(600);
/// The output a client terminal keeps (it drops the start beyond this).
const OUTPUT_LIMIT: u64 = 50 * 1024;

/// What a session's client-side tools share with the session: the connection, the client's
/// capabilities, the session id (known once the session file exists), the terminal of each
/// running `bash` call, the files approved calls are changing.
pub struct SessionLink {
    pub out: Outgoing,
    pub caps: ClientCaps,
    pub session_id: OnceLock<String>,
    pub terminals: Mutex<HashMap<String, String>>,
    pub views: CallViews,
}

/// The client's content of the files allowed `edit` and `write` calls are changing, from the
/// moment a call is allowed to its end: read from the client once, then what the call wrote.
/// Over a remote link every `fs/*` request is a round trip; without this an approved edit made
/// 7 reads (the diff shown, the journal's before and after, the edit, the check before the
/// write, the diff after). The user cannot change the file in between (no question is asked
/// while a view is open, and the call takes milliseconds); a question's own diff is read
/// before the view opens, so typing while it is open is never overwritten.
#[derive(Default)]
pub struct CallViews {
    views: Mutex<HashMap<PathBuf, View>>,
}

#[derive(Default)]
struct View {
    /// The calls looking at the file through this view.
    calls: Vec<String>,
    /// The content, once read or written (`None` inside: no such file).
    content: Option<Option<FileSnapshot>>,
}

impl CallViews {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, View>> {
        self.views.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `call` changes `path` from now until [`CallViews::close`]. What an earlier call of the
    /// file saw is dropped: this one reads the client again.
    pub fn open(&self, call: &str, path: &Path) {
        let mut views = self.lock();
        let view = views.entry(path.to_path_buf()).or_default();
        view.calls.push(call.to_owned());
        view.content = None;
    }

    /// `call` ended: the files it viewed are read from the client again.
    pub fn close(&self, call: &str) {
        self.lock().retain(|_, view| {
            view.calls.retain(|c| c != call);
            !view.calls.is_empty()
        });
    }

    /// Every call of the session ended (a run's end, whatever happened to its calls).
    pub fn close_all(&self) {
        self.lock().clear();
    }

    /// The content of `path` in an open view, if it was read or written already; `None` when
    /// there is no view or it holds nothing yet.
    fn content(&self, path: &Path) -> Option<Option<FileSnapshot>> {
        self.lock().get(path)?.content.clone()
    }

    /// What the client has at `path` is not known any more (a write that failed).
    fn forget(&self, path: &Path) {
        if let Some(view) = self.lock().get_mut(path) {
            view.content = None;
        }
    }

    /// What the client has at `path` now, if a view of it is open.
    fn keep(&self, path: &Path, content: Option<FileSnapshot>) {
        if let Some(view) = self.lock().get_mut(path) {
            view.content = Some(content);
        }
    }
}

impl SessionLink {
    pub fn new(out: Outgoing, caps: ClientCaps) -> Arc<SessionLink> {
        Arc::new(SessionLink {
            out,
            caps,
            session_id: OnceLock::new(),
            terminals: Mutex::default(),
            views: CallViews::default(),
        })
    }

    fn id(&self) -> String {
        self.session_id.get().cloned().unwrap_or_default()
    }

    /// The terminal a tool call shows, if it ran in one.
    pub fn terminal_of(&self, call: &str) -> Option<String> {
        self.terminals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(call)
    }
}

/// What the model is told when its file tools go through the client.
const FS_NOTE: &str = "You run inside the user's editor: read, edit and write see and change the \
editor's buffers (unsaved changes included), and the user reviews your edits there. grep, find \
and ls search the files on disk.";

/// The ACP front end of a session: the client's file system and terminals when offered.
pub struct AcpFrontEnd(pub Arc<SessionLink>);

impl FrontEnd for AcpFrontEnd {
    fn workspace(&self, disk: DiskWorkspace) -> Arc<dyn Workspace> {
        let caps = self.0.caps;
        if !caps.read_text_file && !caps.write_text_file {
            return Arc::new(disk);
        }
        Arc::new(ClientWorkspace {
            disk,
            link: self.0.clone(),
        })
    }

    fn prompt_note(&self) -> Option<&str> {
        let caps = self.0.caps;
        (caps.read_text_file || caps.write_text_file).then_some(FS_NOTE)
    }

    fn extra_tools(&self, workspace: &Arc<dyn Workspace>, options: &ToolOptions) -> Vec<ToolRef> {
        if !self.0.caps.terminal {
            return Vec::new();
        }
        let ctx = ToolContext::new(workspace.clone(), options);
        let (jobs, spill_dir) = (ctx.jobs.clone(), ctx.bash.spill_dir.clone());
        let local = BashTool::new(ctx);
        vec![Arc::new(TerminalBash {
            decl: local.declaration().clone(),
            root: workspace.root().to_path_buf(),
            link: self.0.clone(),
            sandbox: options.sandbox.clone(),
            local: Arc::new(local),
            jobs,
            spill_dir,
        })]
    }
}

/// Files through the client where it offers them, the disk for the rest.
struct ClientWorkspace {
    disk: DiskWorkspace,
    link: Arc<SessionLink>,
}

fn client_failure(path: &Path, e: RequestError) -> WorkspaceError {
    WorkspaceError::Editor {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

impl Workspace for ClientWorkspace {
    fn roots(&self) -> &Roots {
        self.disk.roots()
    }

    fn read(&self, path: PathBuf) -> BoxFuture<'static, Result<FileSnapshot, WorkspaceError>> {
        if !self.link.caps.read_text_file {
            return self.disk.read(path);
        }
        let link = self.link.clone();
        let disk = self.disk.clone();
        Box::pin(async move {
            if let Some(seen) = link.views.content(&path) {
                return seen.ok_or_else(|| WorkspaceError::NotFound(path.display().to_string()));
            }
            let params = acp::ReadTextFileRequest::new(link.id(), path.clone());
            let reply: Result<acp::ReadTextFileResponse, _> =
                request(&link.out, "fs/read_text_file", params, FS_TIMEOUT).await;
            let read = match reply {
                Ok(reply) => {
                    let mut snapshot = FileSnapshot::from_disk(reply.content.into_bytes());
                    snapshot.from_editor = true;
                    Ok(snapshot)
                }
                // A file neither open nor on disk is missing; the client's error would not
                // say so.
                Err(e) => match disk.read(path.clone()).await {
                    Err(missing @ WorkspaceError::NotFound(_)) => Err(missing),
                    _ => Err(client_failure(&path, e)),
                },
            };
            match &read {
                Ok(snapshot) => link.views.keep(&path, Some(snapshot.clone())),
                Err(WorkspaceError::NotFound(_)) => link.views.keep(&path, None),
                Err(_) => {}
            }
            read
        })
    }

    fn write(&self, req: WriteRequest) -> BoxFuture<'static, Result<WriteOutcome, WorkspaceError>> {
        if !self.link.caps.write_text_file {
            return self.disk.write(req);
        }
        let WriteRequest {
            path,
            content,
            expected,
        } = req;
        let current = self.read(path.clone());
        let link = self.link.clone();
        Box::pin(async move {
            let created = match current.await {
                Ok(now) => {
                    if expected.is_some_and(|e| !now.is(&e)) {
                        return Err(WorkspaceError::Conflict(path.display().to_string()));
                    }
                    false
                }
                Err(WorkspaceError::NotFound(_)) => true,
                Err(e) => return Err(e),
            };
            let text = String::from_utf8(content).map_err(|_| WorkspaceError::Editor {
                path: path.display().to_string(),
                reason: "the new content is not UTF-8 text".into(),
            })?;
            let params = acp::WriteTextFileRequest::new(link.id(), path.clone(), text.clone());
            let sent: Result<Value, _> =
                request(&link.out, "fs/write_text_file", params, FS_TIMEOUT).await;
            if let Err(e) = sent {
                // It may have been written or not: the next read asks the client.
                link.views.forget(&path);
                return Err(client_failure(&path, e));
            }
            let mut written = FileSnapshot::from_disk(text.into_bytes());
            written.from_editor = true;
            let id = written.id;
            link.views.keep(&path, Some(written));
            Ok(WriteOutcome {
                id,
                created,
                via_editor: true,
                unsaved: None,
            })
        })
    }

    /// ACP has no delete: on disk, beneath the root.
    fn remove(&self, path: PathBuf) -> BoxFuture<'static, Result<(), WorkspaceError>> {
        self.disk.remove(path)
    }
}

/// `bash` in a client terminal: created, shown in the tool call, waited for (racing the
/// timeout and the abort, which kill it), read, released. A background job (`background:
/// true`) is a job of the session in a terminal of its own (`terminal_job.rs`), the call
/// answered once the terminal is created. A command the session's sandbox confines runs in
/// the local `bash` instead, sandboxed, job or not: the client's terminal is outside
/// agent-lsp, where no sandbox of ours applies.
struct TerminalBash {
    decl: ToolDeclaration,
    root: PathBuf,
    link: Arc<SessionLink>,
    sandbox: Option<Arc<Sandbox>>,
    local: Arc<BashTool>,
    /// The session's background jobs, where a job in a terminal is kept as a local one.
    jobs: Arc<Jobs>,
    /// Where a job's long unread output is saved.
    spill_dir: Option<PathBuf>,
}

impl AgentTool for TerminalBash {
    fn declaration(&self) -> &ToolDeclaration {
        &self.decl
    }

    fn execute(&self, input: ToolInput) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        let escalates = input.args.get("sandbox").and_then(Value::as_bool) == Some(false);
        let mode = match &self.sandbox {
            Some(sandbox) => sandbox.call_mode(&input.tool_call_id, escalates),
            None => Ok(CallMode::Unconfined),
        };
        match mode {
            // The local `bash` asks the sandbox again and gets the same answer: confined.
            Ok(CallMode::Confined(_)) => return self.local.execute(input),
            Err(refused) => return Box::pin(std::future::ready(Err(ToolError::new(refused)))),
            Ok(CallMode::Unconfined | CallMode::Approved) => {}
        }
        let ToolInput {
            tool_call_id: id,
            args,
            cancel,
            ..
        } = input;
        if args.get("background").and_then(Value::as_bool) == Some(true) {
            return Box::pin(self.start_job(id, args, cancel));
        }
        let link = self.link.clone();
        let root = self.root.clone();
        Box::pin(async move {
            let command = command_of(&args)?;
            let timeout = args
                .get("timeout")
                .and_then(Value::as_f64)
                .filter(|s| s.is_finite() && *s > 0.0)
                .map_or(DEFAULT_COMMAND_TIMEOUT, Duration::from_secs_f64);
            run_in_terminal(&link, &id, &command, &root, timeout, &cancel).await
        })
    }
}

impl TerminalBash {
    /// Starts a background job in a terminal of its own; the call's last update shows it.
    fn start_job(
        &self,
        call: String,
        args: Value,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<AgentToolResult, ToolError>> + use<> {
        let (link, jobs) = (self.link.clone(), self.jobs.clone());
        let (root, spill_dir) = (self.root.clone(), self.spill_dir.clone());
        async move {
            let command = command_of(&args)?;
            let timeout = tools::parse_timeout(args.get("timeout").and_then(Value::as_f64))?;
            if cancel.is_cancelled() {
                return Err(ToolError::new("Command aborted"));
            }
            let create = async {
                let job = terminal_job::create(&link.out, link.id(), &command, &root).await?;
                (link.terminals.lock().unwrap_or_else(|e| e.into_inner()))
                    .insert(call.clone(), job.terminal_id().to_owned());
                Ok(Arc::new(job) as Arc<dyn JobHost>)
            };
            let job = (jobs.start_hosted(&command, timeout, &call, &spill_dir, create)).await?;
            Ok(tools::started(&job, &command))
        }
    }
}

fn command_of(args: &Value) -> Result<String, ToolError> {
    (args.get("command").and_then(Value::as_str))
        .map(str::to_owned)
        .ok_or_else(|| ToolError::new("bash needs a command"))
}

async fn run_in_terminal(
    link: &SessionLink,
    call: &str,
    command: &str,
    cwd: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let failed = |e: RequestError| ToolError::new(format!("The client's terminal failed: {e}"));
    let session = link.id();
    let create = acp::CreateTerminalRequest::new(session.clone(), "/bin/sh")
        .args(vec!["-c".to_owned(), command.to_owned()])
        .cwd(cwd.to_path_buf())
        .output_byte_limit(OUTPUT_LIMIT);
    let created: acp::CreateTerminalResponse =
        request(&link.out, "terminal/create", create, FS_TIMEOUT)
            .await
            .map_err(failed)?;
    let terminal = created.terminal_id.0.to_string();
    link.terminals
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(call.to_owned(), terminal.clone());
    let shown = acp::ToolCallContent::Terminal(acp::Terminal::new(terminal.clone()));
    let fields = acp::ToolCallUpdateFields::new().content(vec![shown]);
    let update =
        acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(call.to_owned(), fields));
    link.out.notify(
        "session/update",
        acp::SessionNotification::new(session.clone(), update),
    );
    let on = |_: ()| acp::WaitForTerminalExitRequest::new(session.clone(), terminal.clone());
    let wait = request::<_, acp::WaitForTerminalExitResponse>(
        &link.out,
        "terminal/wait_for_exit",
        on(()),
        timeout + FS_TIMEOUT,
    );
    let ended = tokio::select! {
        exit = wait => Ended::Exited(exit.map_err(failed)?),
        () = cancel.cancelled() => Ended::Aborted,
        () = tokio::time::sleep(timeout) => Ended::TimedOut,
    };
    if !matches!(ended, Ended::Exited(_)) {
        let kill = acp::KillTerminalRequest::new(session.clone(), terminal.clone());
        let _: Result<Value, _> = request(&link.out, "terminal/kill", kill, FS_TIMEOUT).await;
    }
    let read = acp::TerminalOutputRequest::new(session.clone(), terminal.clone());
    let output: Result<acp::TerminalOutputResponse, _> =
        request(&link.out, "terminal/output", read, FS_TIMEOUT).await;
    let release = acp::ReleaseTerminalRequest::new(session, terminal);
    let _: Result<Value, _> = request(&link.out, "terminal/release", release, FS_TIMEOUT).await;
    let output = output.map_err(failed)?;
    let mut text = output.output;
    if output.truncated {
        text.insert_str(0, "[earlier output truncated]\n");
    }
    let text = if text.is_empty() {
        "(no output)".to_owned()
    } else {
        text
    };
    match ended {
        Ended::Aborted => Err(ToolError::new(format!("{text}\n\nCommand aborted"))),
        Ended::TimedOut => Err(ToolError::new(format!(
            "{text}\n\nCommand timed out after {} seconds",
            timeout.as_secs_f64()
        ))),
        Ended::Exited(exit) => match exit.exit_status.exit_code {
            Some(0) => Ok(AgentToolResult::text(text)),
            Some(code) => Err(ToolError::new(format!(
                "{text}\n\nCommand exited with code {code}"
            ))),
            None => Err(ToolError::new(format!(
                "{text}\n\nCommand ended by signal {}",
                exit.exit_status.signal.unwrap_or_default()
            ))),
        },
    }
}

enum Ended {
    Exited(acp::WaitForTerminalExitResponse),
    Aborted,
    TimedOut,
}
