//! `agent-lsp run`'s way to put a question to the user: on a terminal, the question on stderr
//! with numbered options, and one line read from stdin (a number, several for a multiple
//! choice, or a typed answer; an empty line or end of input gives no answer). Without a
//! terminal on stdin there is no one to ask.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::OnceLock;
use std::sync::mpsc;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::tools::{Question, UserAnswer};

/// Asks `question` on the terminal; `cancel` (Ctrl-C's abort) withdraws it.
pub async fn ask(question: &Question, cancel: &CancellationToken) -> UserAnswer {
    if !std::io::stdin().is_terminal() {
        return UserAnswer::Unavailable(
            "stdin is not a terminal (agent-lsp run asks questions only on a terminal)".into(),
        );
    }
    let mut prompt = render(question);
    loop {
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        let line = tokio::select! {
            line = next_line() => line,
            () = cancel.cancelled() => return UserAnswer::Cancelled(None),
        };
        let Some(line) = line else {
            return UserAnswer::Declined;
        };
        match parse(question, line.trim()) {
            Ok(answer) => return answer,
            Err(why) => prompt = format!("{why}\n> "),
        }
    }
}

/// The question, its numbered options and how to answer.
fn render(question: &Question) -> String {
    let mut text = match &question.mcp_server {
        Some(server) => format!("\nagent-lsp asks for the MCP server {server}:\n"),
        None => "\nagent-lsp asks:\n".to_owned(),
    };
    text.push_str(&question.text);
    text.push('\n');
    for (i, option) in question.options.iter().enumerate() {
        text.push_str(&format!("  {}. {}", i + 1, option.label));
        if let Some(description) = &option.description {
            text.push_str(&format!(" — {description}"));
        }
        text.push('\n');
    }
    let how = match (
        question.options.is_empty(),
        question.multi_select,
        question.allow_text,
    ) {
        (true, _, _) => "Type your answer",
        (false, true, true) => "Answer with numbers (e.g. 1,3) or in your own words",
        (false, true, false) => "Answer with numbers (e.g. 1,3)",
        (false, false, true) => "Answer with a number or in your own words",
        (false, false, false) => "Answer with a number",
    };
    text.push_str(&format!("{how}; an empty line gives no answer.\n> "));
    text
}

/// A line as the answer: option numbers, else typed text where it is welcome.
fn parse(question: &Question, line: &str) -> Result<UserAnswer, String> {
    if line.is_empty() {
        return Ok(UserAnswer::Declined);
    }
    let numbers: Option<Vec<usize>> = (line.split([',', ' ']).filter(|w| !w.is_empty()))
        .map(|w| w.parse::<usize>().ok())
        .collect();
    let count = question.options.len();
    let chosen = numbers.filter(|n| !n.is_empty() && count > 0);
    if let Some(numbers) = chosen {
        if numbers.iter().any(|n| *n == 0 || *n > count) {
            return Err(format!("Choose from 1 to {count}."));
        }
        if numbers.len() > 1 && !question.multi_select {
            return Err("Choose one.".into());
        }
        let selected = numbers
            .iter()
            .map(|n| question.options[n - 1].label.clone());
        return Ok(UserAnswer::Answered {
            selected: selected.collect(),
            text: None,
        });
    }
    match question.allow_text {
        true => Ok(UserAnswer::Answered {
            selected: Vec::new(),
            text: Some(line.to_owned()),
        }),
        false => Err(format!("Answer with a number from 1 to {count}.")),
    }
}

/// The next line of stdin (`None` at its end), read on a thread of its own: a blocking read
/// cannot be cancelled, and a line read for a withdrawn question is dropped with it.
async fn next_line() -> Option<String> {
    static READER: OnceLock<mpsc::Sender<oneshot::Sender<Option<String>>>> = OnceLock::new();
    let reader = READER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<oneshot::Sender<Option<String>>>();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            for reply in rx {
                let mut line = String::new();
                let read = stdin.lock().read_line(&mut line);
                let _ = reply.send(matches!(read, Ok(n) if n > 0).then_some(line));
            }
        });
        tx
    });
    let (tx, rx) = oneshot::channel();
    reader.send(tx).ok()?;
    rx.await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    // The tool's own test question, so both read the same `Which?` / `a` / `b`.
    use crate::tools::question::tests::choice as question;

    fn selected(labels: &[&str]) -> UserAnswer {
        UserAnswer::Answered {
            selected: labels.iter().map(|l| l.to_string()).collect(),
            text: None,
        }
    }

    #[test]
    fn lines_become_answers() {
        let single = question(false, true);
        assert_eq!(parse(&single, "2"), Ok(selected(&["b"])));
        assert_eq!(parse(&single, ""), Ok(UserAnswer::Declined));
        assert!(parse(&single, "3").is_err());
        assert!(parse(&single, "1,2").is_err());
        assert_eq!(
            parse(&single, "neither"),
            Ok(UserAnswer::Answered {
                selected: Vec::new(),
                text: Some("neither".into())
            })
        );
        assert_eq!(
            parse(&question(true, false), "1, 2"),
            Ok(selected(&["a", "b"]))
        );
        assert!(parse(&question(true, false), "both").is_err());
        let typed = Question {
            allow_text: true,
            ..Question::default()
        };
        assert!(
            matches!(parse(&typed, "42"), Ok(UserAnswer::Answered { text: Some(t), .. }) if t == "42")
        );
    }

    #[test]
    fn the_question_shows_numbered_options() {
        let text = render(&question(false, true));
        assert!(text.contains("Which?\n  1. a\n  2. b\n"), "{text}");
        assert!(text.ends_with("> "), "{text}");
    }
}
