//! A scenario's result: a few measured lines and its bars, each bar one line with agent-lsp's
//! figure, the limit, whether it is met, and pi's figure on the same mock.

use std::fmt::Write as _;

/// One bar: `measured` must be at most `limit`. Without a limit it is a printed figure only.
#[derive(Clone, Debug)]
pub struct Bar {
    pub what: String,
    pub measured: f64,
    pub limit: Option<f64>,
    pub unit: &'static str,
    /// pi's figure, or why there is none.
    pub pi: String,
}

impl Bar {
    pub fn new(what: impl Into<String>, measured: f64, limit: f64, unit: &'static str) -> Bar {
        Bar {
            what: what.into(),
            measured,
            limit: Some(limit),
            unit,
            pi: String::new(),
        }
    }

    /// A figure printed beside the bars, held to no limit.
    pub fn figure(what: impl Into<String>, measured: f64, unit: &'static str) -> Bar {
        Bar {
            limit: None,
            ..Bar::new(what, measured, 0.0, unit)
        }
    }

    pub fn pi(mut self, pi: impl Into<String>) -> Bar {
        self.pi = pi.into();
        self
    }

    pub fn met(&self) -> bool {
        self.limit.is_none_or(|limit| self.measured <= limit)
    }

    fn limit_text(&self) -> String {
        self.limit
            .map_or("—".into(), |l| format!("≤ {}", number(l, self.unit)))
    }

    fn met_text(&self) -> &'static str {
        match (self.limit, self.met()) {
            (None, _) => "",
            (Some(_), true) => "met",
            (Some(_), false) => "MISSED",
        }
    }
}

/// `12.3 ms`, `1.05 ×`, `0` (a count has no unit).
pub fn number(value: f64, unit: &str) -> String {
    let digits = if value.abs() >= 100.0 || unit.is_empty() {
        0
    } else if value.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.digits$} {unit}").trim_end().to_string()
}

/// What a scenario measured.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub title: String,
    /// Measured details (`name: value`), printed above the bars.
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

    /// The title, the measured lines, then one line per bar.
    pub fn text(&self) -> String {
        let mut out = format!("{}\n", self.title);
        for line in &self.lines {
            let _ = writeln!(out, "    {line}");
        }
        for bar in &self.bars {
            let _ = writeln!(
                out,
                "  {:<44} {:>10}  {:<10} {:<6}  pi: {}",
                bar.what,
                number(bar.measured, bar.unit),
                bar.limit_text(),
                bar.met_text(),
                if bar.pi.is_empty() { "—" } else { &bar.pi }
            );
        }
        out
    }

    /// The bars as rows of the markdown results table (scenario, bar, figure, limit, met, pi).
    pub fn table_rows(&self) -> String {
        let mut out = String::new();
        for bar in &self.bars {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                self.title,
                bar.what,
                number(bar.measured, bar.unit),
                bar.limit_text(),
                match bar.met_text() {
                    "MISSED" => "**no**",
                    "met" => "yes",
                    _ => "",
                },
                if bar.pi.is_empty() { "—" } else { &bar.pi }
            );
        }
        out
    }
}

/// The header of the markdown results table.
pub const TABLE_HEAD: &str =
    "| scenario | bar | agent-lsp | limit | met | pi 1.6 |\n|---|---|---:|---:|:---:|---:|\n";
