//! A shell command split into the simple commands it runs, for the permission rules: a rule
//! allows a command only when it allows every simple command in it, so `git status && git push`
//! is not allowed by `Bash(git status:*)`.
//!
//! The parser is tree-sitter's bash grammar (`tree-sitter-bash`): maintained by the tree-sitter
//! project, used by Codex for the same job, and light (a C parser and the small `tree-sitter`
//! runtime, whose dependencies are already ours); `brush-parser` pulls in two proc-macro stacks
//! and `yash-syntax` is GPL, `conch-parser` unmaintained.
//!
//! Every `command` node is a simple command, wherever it sits: in a list (`&&`, `||`, `;`,
//! `&`), a pipeline, a subshell or group, a function body, a loop or condition, a command
//! substitution (`$(…)`, backticks, also inside strings and here-documents) or a process
//! substitution. So are declarations (`export A=…`), `unset`, `[[ … ]]` tests and a variable
//! assignment standing alone (`PATH=…; git status` changes what the next command runs).
//! A redirection that writes a file is reported apart: rules match commands, not files.

use tree_sitter::{Node, Parser};

/// What a command runs, as far as the rules are concerned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Script {
    /// Each simple command's words, joined by single spaces, in source order.
    pub commands: Vec<String>,
    /// The redirections that write a file (`> out.txt`, `>> log`, `&> f`): any makes the
    /// command one no `Bash` rule allows. `/dev/null` and descriptor copies (`2>&1`) are not.
    pub writes: Vec<String>,
}

/// Commands longer than this are not parsed (and so never allowed by a rule).
const MAX_LEN: usize = 64 * 1024;

/// Nodes that are one simple command each.
const SIMPLE: [&str; 4] = [
    "command",
    "declaration_command",
    "unset_command",
    "test_command",
];

/// Redirections, whose words are not the command's arguments.
const REDIRECTS: [&str; 3] = ["file_redirect", "heredoc_redirect", "herestring_redirect"];

/// Splits `command`; `None` when it cannot be parsed (a syntax error, or too long): such a
/// command is never allowed by a rule.
pub fn parse(command: &str) -> Option<Script> {
    if command.len() > MAX_LEN {
        return None;
    }
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()?;
    let tree = parser.parse(command, None)?;
    let root = tree.root_node();
    if root.has_error() {
        return None;
    }
    let mut script = Script::default();
    // An explicit stack: a deeply nested command must not overflow ours.
    let mut stack = vec![root];
    let mut found = Vec::new();
    while let Some(node) = stack.pop() {
        let kind = node.kind();
        if SIMPLE.contains(&kind) || standalone_assignment(node) {
            found.push((node.start_byte(), words(node, command)));
        } else if kind == "file_redirect" && writes_a_file(node, command) {
            script.writes.push(text(node, command).to_owned());
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    found.sort_by_key(|(start, _)| *start);
    script.commands = found.into_iter().map(|(_, words)| words).collect();
    Some(script)
}

/// `A=1` as a statement of its own, not the prefix of a command or part of a declaration.
fn standalone_assignment(node: Node) -> bool {
    node.kind() == "variable_assignment"
        && node
            .parent()
            .is_none_or(|p| !matches!(p.kind(), "command" | "declaration_command"))
}

/// A node's words (its children but redirections), joined by single spaces.
fn words(node: Node, source: &str) -> String {
    if node.child_count() == 0 || node.kind() == "variable_assignment" {
        return text(node, source).to_owned();
    }
    let mut cursor = node.walk();
    let parts: Vec<&str> = node
        .children(&mut cursor)
        .filter(|child| !REDIRECTS.contains(&child.kind()))
        .map(|child| text(child, source))
        .collect();
    parts.join(" ")
}

/// Whether a `file_redirect` writes (or might write) a file: any output redirection but one to
/// `/dev/null` and a descriptor copy. An input redirection (`< file`) only reads. A redirection
/// with more than one word (`echo > f hi`: the grammar puts `hi` there) is counted as writing.
fn writes_a_file(node: Node, source: &str) -> bool {
    let mut cursor = node.walk();
    let children: Vec<Node> = node.children(&mut cursor).collect();
    let Some(op) = children
        .iter()
        .find(|c| !c.is_named())
        .map(|c| text(*c, source))
    else {
        return true;
    };
    let targets: Vec<&str> = (children.iter())
        .filter(|c| c.is_named() && c.kind() != "file_descriptor")
        .map(|c| text(*c, source))
        .collect();
    let [target] = targets.as_slice() else {
        return true;
    };
    match op {
        "<" => false,
        ">&" | "<&" => !(*target == "-" || target.chars().all(|c| c.is_ascii_digit())),
        ">" | ">>" | ">|" | "&>" | "&>>" => *target != "/dev/null",
        _ => true,
    }
}

fn text<'s>(node: Node, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(command: &str) -> Vec<String> {
        parse(command).unwrap().commands
    }

    #[test]
    fn lists_pipelines_and_subshells_split() {
        assert_eq!(commands("git status"), ["git status"]);
        assert_eq!(
            commands("git status && git push"),
            ["git status", "git push"]
        );
        assert_eq!(commands("a || b; c & d | e"), ["a", "b", "c", "d", "e"]);
        assert_eq!(commands("(a; b) && { c; }"), ["a", "b", "c"]);
        assert_eq!(commands("git  \\\n  status   -s"), ["git status -s"]);
    }

    #[test]
    fn substitutions_are_commands_too() {
        assert_eq!(
            commands("echo $(rm -rf /)"),
            ["echo $(rm -rf /)", "rm -rf /"]
        );
        assert_eq!(
            commands("echo \"a $(b)\" `c`"),
            ["echo \"a $(b)\" `c`", "b", "c"]
        );
        assert_eq!(commands("diff <(a) <(b)").len(), 3);
        assert_eq!(commands("cat <<EOF\n$(i)\nEOF"), ["cat", "i"]);
        assert_eq!(commands("if t; then d; fi"), ["t", "d"]);
        assert_eq!(commands("f() { g; }; f"), ["g", "f"]);
        assert_eq!(commands("export A=$(h)"), ["export A=$(h)", "h"]);
    }

    #[test]
    fn assignments_standing_alone_count() {
        assert_eq!(
            commands("PATH=/tmp; git status"),
            ["PATH=/tmp", "git status"]
        );
        assert_eq!(commands("FOO=1 npm test"), ["FOO=1 npm test"]);
    }

    #[test]
    fn writing_redirections_are_reported() {
        let script = parse("cargo test > out.txt 2>&1").unwrap();
        assert_eq!(script.commands, ["cargo test"]);
        assert_eq!(script.writes, ["> out.txt"]);
        assert!(parse("cargo test 2>/dev/null").unwrap().writes.is_empty());
        assert!(parse("cargo test 2>&1 | tee").unwrap().writes.is_empty());
        assert!(parse("wc -l < in.txt").unwrap().writes.is_empty());
        assert_eq!(parse("echo >> log").unwrap().writes.len(), 1);
        assert_eq!(parse("echo &> log").unwrap().writes.len(), 1);
        assert_eq!(parse("echo > /dev/null hi").unwrap().writes.len(), 1);
    }

    #[test]
    fn what_cannot_be_parsed_is_none() {
        assert_eq!(parse("echo (("), None);
        assert_eq!(parse("if then"), None);
        assert_eq!(parse(&"a".repeat(MAX_LEN + 1)), None);
        assert!(parse(&format!("{}x{}", "(".repeat(2000), ")".repeat(2000))).is_some());
    }
}
