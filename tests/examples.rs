//! Every example runs with no arguments (on its embedded default: in-process fake
//! servers, or a throw-away local `redis-server`) and exits 0 within its budget.
//!
//! The examples are found in `examples/`, so one added later is run too, and the ones
//! the README and the guides promise are required: a missing one fails the test by
//! name, none is skipped. They are built first with `cargo build --examples` and the
//! same features as this test (a no-op after `cargo test`, which has built them
//! already; needed when this file runs alone, as `cargo test --test examples`), then
//! run one at a time: several are timelines measured in wall-clock seconds and would
//! disturb one another on a 2-core machine. For the same reason this is a test binary
//! of its own (cargo runs one binary at a time, so no other test runs beside it); it
//! does not link the crate, so it costs little to build.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The examples the documentation promises.
const REQUIRED: &[&str] = &[
    "quickstart",
    "geo_failover",
    "lag_aware",
    "pubsub",
    "cluster",
    "maint_watch",
];

/// The most one example may take. The longest (`geo_failover`, a 12 s timeline) takes
/// about 13 s; the margin is for a loaded CI machine, not for an example to grow into.
const BUDGET: Duration = Duration::from_secs(40);

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The example targets: `examples/NAME.rs` and `examples/NAME/main.rs` (cargo's
/// auto-discovery; the manifest declares no `[[example]]` of its own).
fn examples_in_source() -> Vec<String> {
    let dir = manifest_dir().join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            if path.is_dir() {
                path.join("main.rs").is_file().then(|| file_name(&path))
            } else if path.extension().is_some_and(|x| x == "rs") {
                Some(path.file_stem()?.to_string_lossy().into_owned())
            } else {
                None
            }
        })
        .collect();
    names.sort();
    names
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The features this test was built with, so the examples are built the same way
/// (and `cargo build` finds them fresh instead of rebuilding the crate).
fn features() -> Vec<&'static str> {
    let mut f = Vec::new();
    if cfg!(feature = "testkit") {
        f.push("testkit");
    }
    if cfg!(feature = "redis-compat") {
        f.push("redis-compat");
    }
    if cfg!(feature = "metrics") {
        f.push("metrics");
    }
    f
}

/// Examples that need a feature of the crate (`required-features` in Cargo.toml):
/// built and run only when this test is built with it (`cargo test --all-features`).
const GATED: &[(&str, &str)] = &[("metrics", "metrics")];

fn is_built(name: &str) -> bool {
    let features = features();
    GATED
        .iter()
        .filter(|(example, _)| *example == name)
        .all(|(_, feature)| features.contains(feature))
}

/// `target/<profile>/examples`, next to the `deps` folder this test binary runs from
/// (so a custom `CARGO_TARGET_DIR` or profile is followed).
fn examples_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary lives in target/<profile>/deps");
    profile_dir.join("examples")
}

fn build_examples() {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .map(file_name)
        .unwrap_or_default();
    let target_dir = examples_dir()
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .expect("a target directory");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(manifest_dir())
        .args(["build", "--examples", "--quiet", "--target-dir"])
        .arg(&target_dir);
    // Cargo runs this test with the package's own variables set (CARGO_PKG_NAME,
    // CARGO_MANIFEST_DIR, ...). Passed on, they reach build scripts that watch them:
    // ring's declares `rerun-if-env-changed=CARGO_PKG_NAME`, so the inner build
    // rebuilt ring and everything above it (measured: 2 min 10 s here, and as long
    // again for the next `cargo test`, which then saw ring change back). Build with
    // the environment a shell would have.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_MANIFEST_")
            || key.starts_with("CARGO_BIN_")
            || matches!(
                key.as_ref(),
                "CARGO_CRATE_NAME" | "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR"
            )
        {
            cmd.env_remove(key.as_ref());
        }
    }
    match profile.as_str() {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    let features = features();
    if !features.is_empty() {
        cmd.arg("--features").arg(features.join(","));
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(status.success(), "{cmd:?} failed: {status}");
}

struct Run {
    elapsed: Duration,
    success: bool,
    status: String,
    output: String,
}

/// Runs `path` with no arguments; kills it once the budget is spent.
fn run(path: &Path) -> Run {
    let started = Instant::now();
    let mut child = Command::new(path)
        .current_dir(manifest_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", path.display()));
    // Drained on their own threads, so a chatty example never blocks on a full pipe.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let (success, status) = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (status.success(), status.to_string()),
            Ok(None) if started.elapsed() > BUDGET => {
                let _ = child.kill();
                let _ = child.wait();
                break (false, format!("killed after {BUDGET:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => break (false, format!("cannot wait for it: {e}")),
        }
    };
    let elapsed = started.elapsed();
    let output = format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default()
    );
    Run {
        elapsed,
        success,
        status,
        output,
    }
}

#[test]
fn every_example_runs_with_no_arguments_and_exits_0() {
    let names = examples_in_source();
    let missing: Vec<&&str> = REQUIRED
        .iter()
        .filter(|r| !names.iter().any(|n| n == **r))
        .collect();
    assert!(
        missing.is_empty(),
        "examples promised by the documentation are missing: {missing:?} (found {names:?})"
    );

    build_examples();
    let dir = examples_dir();
    let mut failures = Vec::new();
    for name in &names {
        if !is_built(name) {
            eprintln!("example {name:<14} not run: needs a feature this test was built without");
            continue;
        }
        let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        assert!(
            path.is_file(),
            "example {name} was not built: no {}",
            path.display()
        );
        let run = run(&path);
        eprintln!("example {name:<14} {:>6.1?}  {}", run.elapsed, run.status);
        if !run.success {
            failures.push(format!(
                "example {name}: {} after {:.1?}\n{}",
                run.status, run.elapsed, run.output
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
