//! What a failed sandboxed command's output says about the sandbox: the lines that look like a
//! refusal, and which layer most likely refused each, so the model can ask to escalate
//! sensibly (or fix the command instead). The user's own permissions give the same errors,
//! which is why the note says "may".

use super::policy::SandboxPolicy;

/// A kind of refusal: the text that shows it (and, if set, a second text the line must hold
/// too), and what it means.
struct Mark {
    text: &'static str,
    also: Option<&'static str>,
    layer: &'static str,
}

impl Mark {
    fn matches(&self, line: &str) -> bool {
        line.contains(self.text) && self.also.is_none_or(|also| line.contains(also))
    }
}

const MARKS: [Mark; 10] = [
    Mark {
        text: "agent-lsp sandbox: this command created",
        also: None,
        layer: "a protected path was created and removed again",
    },
    Mark {
        text: "blocked by the sandbox's network allowlist",
        also: None,
        layer: "the network allowlist proxy (the host is not allowed)",
    },
    Mark {
        text: "Read-only file system",
        also: None,
        layer: "the read-only file system view: only the workspace and /tmp are writable, and \
                protected paths (.git, AGENTS.md, .mcp.json, …) never are",
    },
    Mark {
        text: "Permission denied",
        also: None,
        layer: "Landlock: a write outside the workspace and /tmp, or a TCP connection without network",
    },
    Mark {
        text: "Operation not permitted",
        also: None,
        layer: "seccomp: Unix sockets (docker, D-Bus, ssh-agent, tmux), sockets without network, \
                io_uring, terminal input injection or the kernel keyring",
    },
    Mark {
        text: "Network is unreachable",
        also: None,
        layer: "no network: the command's network namespace has no way out",
    },
    Mark {
        text: "from proxy after CONNECT",
        also: None,
        layer: "the network allowlist proxy (the host is not allowed)",
    },
    Mark {
        text: "No such file or directory",
        also: Some("/tmp/"),
        layer: "the command's /tmp is its own, empty at the start: files in your /tmp are not \
                visible to it",
    },
    Mark {
        text: "Could not resolve host",
        also: None,
        layer: "no network: names do not resolve in the sandbox",
    },
    Mark {
        text: "Temporary failure in name resolution",
        also: None,
        layer: "no network: names do not resolve in the sandbox",
    },
];

/// Lines of `output` that look like the sandbox refusing something (at most five).
pub fn refusal_lines(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter(|l| MARKS.iter().any(|m| m.matches(l)))
        .take(5)
        .collect()
}

/// The plain-words note appended to a failed sandboxed command's result.
pub fn refusal_note(policy: &SandboxPolicy, output: &str) -> Option<String> {
    let lines = refusal_lines(output);
    if lines.is_empty() {
        return None;
    }
    let quoted: Vec<String> = lines
        .iter()
        .map(|l| {
            let layer = MARKS.iter().find(|m| m.matches(l)).map_or("", |m| m.layer);
            format!("  {l}\n    (likely: {layer})")
        })
        .collect();
    Some(format!(
        "This command ran {}. It may have failed because the sandbox refused an access:\n{}\n\
         If the command really needs that access, call bash again with the same command, \
         \"sandbox\": false and a \"justification\" saying why: the user will be asked to \
         approve running it outside the sandbox.",
        policy.describe(),
        quoted.join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_note_quotes_refusals_only_and_names_the_layer() {
        let policy = SandboxPolicy::default();
        assert_eq!(refusal_note(&policy, "make: *** [all] Error 2"), None);
        let note = refusal_note(&policy, "ok\nbash: /etc/x: Read-only file system\n");
        let note = note.unwrap_or_default();
        assert!(note.contains("/etc/x: Read-only file system"), "{note}");
        assert!(note.contains("read-only file system view"), "{note}");
        let sock =
            refusal_note(&policy, "docker: socket: Operation not permitted").unwrap_or_default();
        assert!(sock.contains("seccomp: Unix sockets"), "{sock}");
    }
}
