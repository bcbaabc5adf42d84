//! The model's side of background jobs: `bash` with `background: true` starts one
//! ([`start_background`]), `bash_output {jobId, filter?}` reads what it printed since the last
//! read, `bash_kill {jobId}` stops it. Output is cut as `bash` output is (the last 2000 lines or
//! 50KB, the whole of it spilled to a file when cut).

use std::collections::VecDeque;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::bash_output::OutputBuffer;
use super::common::{BashSettings, Call, ToolArgs, ToolContext};
use super::jobs::{Job, JobError, JobStatus, Jobs, Started, Unread};
use super::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Limits, truncate_tail};
use crate::agent::tool::{AgentToolResult, ToolError};
use crate::sandbox::SandboxPolicy;

pub const BASH_OUTPUT: &str = "bash_output";
pub const BASH_KILL: &str = "bash_kill";

/// What `bash`'s description says of background jobs.
pub const BACKGROUND_NOTE: &str = "For a command that keeps running (a dev server, a watch \
build, a log tail), pass background: true: it runs as a job of this session while you go on \
working, and the call returns at once with its job id. Poll its new output with bash_output, \
stop it with bash_kill when you no longer need it; jobs end with the session.";
/// `bash`'s `background` argument.
pub const BACKGROUND_ARG: &str = "true: start the command as a background job and return at once \
with its job id (for commands that do not end by themselves); read its output with bash_output, \
stop it with bash_kill";

const OUTPUT_DESCRIPTION: &str = "Read what a background job (started by bash with background: \
true) printed since the last bash_output call for it, stdout and stderr merged, and whether it \
still runs. Only the last 2000 lines or 50KB are returned; when output is cut the full output is \
saved to a file whose path is given. With filter (a regular expression), only the lines that \
match are returned; the others count as read too.";
const KILL_DESCRIPTION: &str = "Stop a background job started by bash with background: true: \
its command and every process it started. Returns how it ended and the output it printed since \
the last bash_output call.";

/// Starts `command` as a job of `jobs`: the result the model reads (its id and pid, what it
/// printed so far) and the sandbox policy it runs under.
pub fn start_background(
    jobs: &Jobs,
    settings: &BashSettings,
    command: &str,
    cwd: &Path,
    timeout: Option<f64>,
    call_id: &str,
) -> Result<(AgentToolResult, Option<SandboxPolicy>), ToolError> {
    let Started { job, policy } = jobs.start(settings, command, cwd, timeout, call_id)?;
    Ok((started(&job, command), policy))
}

/// What the model reads of a job it just started: its id, where it runs, what it printed so
/// far; `details {jobId}`.
pub fn started(job: &Job, command: &str) -> AgentToolResult {
    let mut unread = job.read();
    let so_far = match unread.output.total_bytes() {
        0 => "(no output yet)".to_owned(),
        _ => unread.output.render().0,
    };
    let (id, place) = (&job.id, job.whereabouts());
    let text = format!(
        "Started background job {id} ({place}): {command}\n{so_far}\nRead its output with \
         bash_output {{\"jobId\":\"{id}\"}}; stop it with bash_kill."
    );
    AgentToolResult {
        details: Some(json!({"jobId": id})),
        ..AgentToolResult::text(text)
    }
}

/// The parameters of a tool about one job: its `jobId`, and the properties of `more`.
fn about_a_job(more: Value) -> Value {
    let mut properties = json!({
        "jobId": {"type": "string", "description": "The job's id, as bash returned it (job-1)"}
    });
    if let (Some(properties), Value::Object(more)) = (properties.as_object_mut(), more) {
        properties.extend(more);
    }
    json!({"type": "object", "required": ["jobId"], "properties": properties})
}

/// `bash_output`'s arguments.
#[derive(Deserialize)]
pub struct BashOutputArgs {
    #[serde(rename = "jobId")]
    job_id: String,
    #[serde(default)]
    filter: Option<String>,
}

impl ToolArgs for BashOutputArgs {
    const NAME: &str = BASH_OUTPUT;
    const DESCRIPTION: &str = OUTPUT_DESCRIPTION;
    type State = ToolContext;

    fn parameters(_: &ToolContext) -> Value {
        about_a_job(json!({
            "filter": {"type": "string", "description": "Optional regular expression (Rust regex syntax): return only the lines that match"}
        }))
    }

    async fn run(self, ctx: ToolContext, _call: Call) -> Result<AgentToolResult, ToolError> {
        let filter = match &self.filter {
            Some(pattern) => Some(
                regex::Regex::new(pattern)
                    .map_err(|e| ToolError::new(format!("Invalid filter {pattern:?}: {e}")))?,
            ),
            None => None,
        };
        let job = (ctx.jobs.get(&self.job_id)).map_err(|e| unknown(&ctx.jobs, e))?;
        let id = &job.id;
        (job.refresh().await)
            .map_err(|e| ToolError::new(format!("Could not read the output of {id}: {e}")))?;
        Ok(reading(job.read(), filter.as_ref(), None))
    }
}

/// `bash_kill`'s arguments.
#[derive(Deserialize)]
pub struct BashKillArgs {
    #[serde(rename = "jobId")]
    job_id: String,
}

impl ToolArgs for BashKillArgs {
    const NAME: &str = BASH_KILL;
    const DESCRIPTION: &str = KILL_DESCRIPTION;
    type State = ToolContext;

    fn parameters(_: &ToolContext) -> Value {
        about_a_job(json!({}))
    }

    async fn run(self, ctx: ToolContext, _call: Call) -> Result<AgentToolResult, ToolError> {
        let job = (ctx.jobs.get(&self.job_id)).map_err(|e| unknown(&ctx.jobs, e))?;
        let had_ended = !job.is_running();
        let job = (ctx.jobs.kill(&self.job_id).await).map_err(|e| unknown(&ctx.jobs, e))?;
        let note = had_ended.then_some("it had ended before bash_kill");
        Ok(reading(job.read(), None, note))
    }
}

/// An unknown job id, with the jobs there are.
fn unknown(jobs: &Jobs, e: JobError) -> ToolError {
    let known: Vec<String> = (jobs.list().iter())
        .map(|j| format!("{} ({})", j.job_id, j.status.as_str()))
        .collect();
    let known = match known.is_empty() {
        true => "there are none".to_owned(),
        false => format!("there are {}", known.join(", ")),
    };
    ToolError::new(format!("{e}: {known}."))
}

/// What the model reads of a job: its new output, then its status.
fn reading(
    mut unread: Unread,
    filter: Option<&regex::Regex>,
    note: Option<&str>,
) -> AgentToolResult {
    let (text, mut details) = match filter {
        Some(re) => filtered(&mut unread.output, re),
        None if unread.output.total_bytes() == 0 => ("(no new output)".to_owned(), json!({})),
        None => unread.output.render(),
    };
    let info = &unread.info;
    let mut status = format!("[{} {}", info.job_id, info.status.as_str());
    if let Some(ending) = unread
        .ending
        .as_deref()
        .filter(|_| info.status != JobStatus::Running)
    {
        status.push_str(&format!(": {ending}"));
    }
    if let Some(note) = note {
        status.push_str(&format!("; {note}"));
    }
    status.push(']');
    // A sandboxed job that failed is told, as a command is, which refusal may have done it.
    let failed = match info.status {
        JobStatus::Exited => info.exit_code != Some(0),
        JobStatus::Failed => true,
        JobStatus::Running | JobStatus::Killed => false,
    };
    let note = (unread.policy.as_ref())
        .filter(|_| failed)
        .and_then(|policy| crate::sandbox::refusal_note(policy, &text));
    if let Some(note) = note {
        status.push_str(&format!("\n\n{note}"));
    }
    if let Some(gap) = &unread.gap {
        status.push_str(&format!("\n\n{gap}"));
    }
    if let Value::Object(map) = &mut details {
        map.insert("jobId".into(), json!(info.job_id));
        map.insert("status".into(), json!(info.status));
        if info.status != JobStatus::Running {
            map.insert("exitCode".into(), json!(info.exit_code));
        }
    }
    AgentToolResult {
        details: Some(details),
        ..AgentToolResult::text(format!("{text}\n\n{status}"))
    }
}

/// The lines of `out` that `re` matches, cut as `bash` output is.
fn filtered(out: &mut OutputBuffer, re: &regex::Regex) -> (String, Value) {
    let mut kept: VecDeque<String> = VecDeque::new();
    let (mut bytes, mut matched) = (0usize, 0usize);
    out.for_each_line(|line| {
        if !re.is_match(line) {
            return;
        }
        matched += 1;
        bytes += line.len() + 1;
        kept.push_back(line.to_owned());
        // Only the end is shown: what the cut below can never reach is let go now.
        while kept.len() > DEFAULT_MAX_LINES || bytes > 2 * DEFAULT_MAX_BYTES {
            bytes -= kept.pop_front().map_or(0, |l| l.len() + 1);
        }
    });
    if matched == 0 {
        return ("(no new output matches the filter)".to_owned(), json!({}));
    }
    let text = Vec::from(kept).join("\n");
    let trunc = truncate_tail(&text, Limits::default());
    if !trunc.truncated && trunc.output_lines == matched {
        return (trunc.content, json!({}));
    }
    let full = match out.full_output_path() {
        Some(path) => format!(" Full output: {}", path.display()),
        None => String::new(),
    };
    let mut details = json!({"matchedLines": matched});
    if let Some(path) = out.full_output_path() {
        details["fullOutputPath"] = json!(path.display().to_string());
    }
    let text = format!(
        "{}\n\n[Showing the last {} of {matched} matching lines.{full}]",
        trunc.content, trunc.output_lines
    );
    (text, details)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_keeps_the_matching_lines_of_all_the_output_and_cuts_them_as_bash_does() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = OutputBuffer::new(dir.path().to_path_buf());
        for i in 0..5000 {
            let kind = if i % 2 == 0 { "even" } else { "odd" };
            out.push(format!("\u{1b}[1m{kind}\u{1b}[0m {i}\n").as_bytes());
        }
        let re = regex::Regex::new("^even").unwrap();
        let (text, details) = filtered(&mut out, &re);
        let path = out.full_output_path().unwrap().display().to_string();
        assert!(
            text.starts_with("even 1000\neven 1002\n"),
            "{}",
            &text[..40]
        );
        assert!(
            text.ends_with(&format!(
                "even 4998\n\n[Showing the last 2000 of 2500 matching lines. Full output: {path}]"
            )),
            "{}",
            &text[text.len() - 200..]
        );
        assert_eq!(
            details,
            json!({"matchedLines": 2500, "fullOutputPath": path})
        );
        let none = regex::Regex::new("^never").unwrap();
        assert_eq!(
            filtered(&mut out, &none).0,
            "(no new output matches the filter)"
        );
    }
}
