//! A scenario's result: measured lines for BENCH.md and the bars it is held to.

use std::fmt::Write as _;

/// One bar: `measured` must be at most `limit`.
#[derive(Clone, Debug)]
pub struct Bar {
    pub what: String,
    pub measured: f64,
    pub limit: f64,
    pub unit: &'static str,
}

impl Bar {
    pub fn new(what: impl Into<String>, measured: f64, limit: f64, unit: &'static str) -> Bar {
        Bar {
            what: what.into(),
            measured,
            limit,
            unit,
        }
    }

    pub fn met(&self) -> bool {
        self.measured <= self.limit
    }
}

/// What a scenario measured.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub title: String,
    /// Free-form measured lines (`name: value`).
    pub lines: Vec<String>,
    pub bars: Vec<Bar>,
}

impl Report {
    pub fn new(title: impl Into<String>) -> Report {
        Report {
            title: title.into(),
            ..Report::default()
        }
    }

    pub fn line(&mut self, text: impl Into<String>) {
        self.lines.push(text.into());
    }

    pub fn bar(&mut self, bar: Bar) {
        self.bars.push(bar);
    }

    pub fn all_met(&self) -> bool {
        self.bars.iter().all(Bar::met)
    }

    /// Markdown: the title, the measured lines, a table of bars.
    pub fn markdown(&self) -> String {
        let mut out = format!("### {}\n\n", self.title);
        for line in &self.lines {
            let _ = writeln!(out, "- {line}");
        }
        out.push_str("\n| bar | measured | limit | met |\n|---|---:|---:|:---:|\n");
        for bar in &self.bars {
            let _ = writeln!(
                out,
                "| {} | {:.3} {} | {:.3} {} | {} |",
                bar.what,
                bar.measured,
                bar.unit,
                bar.limit,
                bar.unit,
                if bar.met() { "yes" } else { "**NO**" }
            );
        }
        out
    }
}
