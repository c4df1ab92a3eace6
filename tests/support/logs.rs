//! The process's logger, capturing: every record of every thread at every level (the
//! crate's, rustls' and ureq's), kept for tests to read.
//!
//! A process has one `log` logger, so every test that reads the logs goes through this
//! one, whatever binary it lands in. The records of all the tests of a binary land
//! here together: a test asserts only about what it alone set (its secrets, its own
//! servers' addresses), never that a record is absent in general.

use std::fmt;
use std::sync::{Mutex, Once};

use log::{Level, LevelFilter, Log, Metadata, Record};

/// One record.
#[derive(Clone, Debug)]
pub struct Line {
    pub level: Level,
    pub target: String,
    pub text: String,
}

/// `LEVEL [target] text`
impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}] {}", self.level, self.target, self.text)
    }
}

static LINES: Mutex<Vec<Line>> = Mutex::new(Vec::new());

struct Capture;

impl Log for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &Record<'_>) {
        let line = Line {
            level: record.level(),
            target: record.target().to_string(),
            text: record.args().to_string(),
        };
        LINES.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }

    fn flush(&self) {}
}

static LOGGER: Capture = Capture;

/// Installs the capturing logger (once per process; what was logged before is lost).
pub fn capture() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        log::set_logger(&LOGGER).expect("support::logs installs the only logger");
        log::set_max_level(LevelFilter::Trace);
    });
}

/// Every record captured so far.
pub fn lines() -> Vec<Line> {
    LINES.lock().unwrap_or_else(|e| e.into_inner()).clone()
}
