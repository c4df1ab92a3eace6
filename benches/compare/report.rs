//! The printed report: the one comparison table (workload, ours, theirs, ratio,
//! target, pass/fail), the growth tables, and the notes under them.
//!
//! Owns: formatting and the pass/fail decision. Must never: measure anything.

use std::fmt::Write as _;

/// Which way a ratio must go to pass.
#[derive(Clone, Copy)]
pub enum Target {
    /// ours/theirs at most this (latencies, times, instruction counts).
    AtMost(f64),
    /// ours/theirs at least this (throughputs).
    AtLeast(f64),
}

impl Target {
    fn passes(self, ratio: f64) -> bool {
        match self {
            Target::AtMost(t) => ratio <= t,
            Target::AtLeast(t) => ratio >= t,
        }
    }

    fn text(self) -> String {
        match self {
            Target::AtMost(t) => format!("≤ {t:.2}"),
            Target::AtLeast(t) => format!("≥ {t:.2}"),
        }
    }
}

/// One line of the comparison table.
pub struct Row {
    pub workload: String,
    pub ours: String,
    pub theirs: String,
    pub ratio: f64,
    pub target: Option<Target>,
}

impl Row {
    fn verdict(&self) -> &'static str {
        match self.target {
            _ if self.ratio.is_nan() => "n/a",
            Some(t) if t.passes(self.ratio) => "pass",
            Some(_) => "FAIL",
            None => "",
        }
    }
}

/// A Markdown table with padded columns (readable in a terminal, pasteable in docs).
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::from("|");
        for (cell, w) in cells.iter().zip(&widths) {
            let pad = w - cell.chars().count();
            let _ = write!(s, " {cell}{} |", " ".repeat(pad));
        }
        s
    };
    let mut out = String::new();
    let head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    out.push_str(&line(&head));
    out.push('\n');
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&line(&rule));
    out.push('\n');
    for row in rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

pub fn comparison(rows: &[Row]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.workload.clone(),
                r.ours.clone(),
                r.theirs.clone(),
                if r.ratio.is_nan() {
                    "-".into()
                } else {
                    format!("{:.2}", r.ratio)
                },
                r.target.map(Target::text).unwrap_or_default(),
                r.verdict().into(),
            ]
        })
        .collect();
    table(
        &["workload", "ours", "theirs", "ratio", "target", "pass/fail"],
        &cells,
    )
}

/// `12.3 µs`, `4.56 ms`, `1.23 s` from nanoseconds.
pub fn time(ns: f64) -> String {
    if ns.is_nan() {
        "-".into()
    } else if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// `123.4k ops/s`, `1.23M ops/s`.
pub fn rate(per_sec: f64) -> String {
    if per_sec.is_nan() {
        "-".into()
    } else if per_sec >= 1e6 {
        format!("{:.2}M ops/s", per_sec / 1e6)
    } else {
        format!("{:.1}k ops/s", per_sec / 1e3)
    }
}

/// `32 B`, `1 KiB`, `16 MiB`.
pub fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}
