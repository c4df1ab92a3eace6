#!/usr/bin/env bash
# The build without default features (no `tls`, no `lag-aware`), which a plain-TCP
# application gets with `default-features = false`: it must build and lint clean, and
# asking it for TLS must fail with a configuration error that names the feature.
#
# That last check runs in a throw-away dependent crate: this package's own tests always
# build with `tls` on, because its dev-dependency on itself enables `testkit` (which
# implies `tls` and `lag-aware`) for every test target, `--lib` included.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

cargo build --no-default-features
cargo clippy --no-default-features -- -D warnings

work="$(mktemp -d /tmp/rr-no-default.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
cat >"$work/Cargo.toml" <<EOF
[package]
name = "no_default_features_check"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
resilient-redis = { path = "$repo", default-features = false }

[workspace]
EOF
cat >"$work/src/main.rs" <<'EOF'
use resilient_redis::availability::{Group, GroupOptions, Member};
use resilient_redis::config::TlsOptions;
use resilient_redis::{Client, ErrorKind, Options, Result};

fn check(what: &str, got: Result<()>, kind: ErrorKind, says: &str) -> bool {
    match got {
        Err(e) if e.kind() == kind && e.to_string().contains(says) => {
            println!("ok: {what}: {e}");
            true
        }
        Err(e) => {
            println!("FAILED: {what}: {:?}: {e}", e.kind());
            false
        }
        Ok(()) => {
            println!("FAILED: {what}: connected");
            false
        }
    }
}

fn main() {
    let connect = |o: Options| Client::connect(o).map(drop);
    let url = |s: &str| Options::parse(s).and_then(connect);
    let no_tls = "`tls` feature";
    let member = Member::new("rediss://127.0.0.1:1");
    let results = [
        // Nothing listens on port 1: plain TCP gets as far as dialing.
        check("plain", url("redis://127.0.0.1:1"), ErrorKind::Connect, ""),
        check("rediss://", url("rediss://127.0.0.1:1"), ErrorKind::Config, no_tls),
        check("ssl=true", url("127.0.0.1:1,ssl=true"), ErrorKind::Config, no_tls),
        check(
            "Options::tls",
            connect(Options::default().endpoint("127.0.0.1:1").tls(TlsOptions::default())),
            ErrorKind::Config,
            no_tls,
        ),
        check(
            "group member",
            Group::connect(vec![member], GroupOptions::default()).map(drop),
            ErrorKind::Config,
            no_tls,
        ),
    ];
    std::process::exit(i32::from(results.contains(&false)));
}
EOF
# The repository's lock and target dir: the same versions, and no dependency rebuilt.
cp Cargo.lock "$work/Cargo.lock"
(cd "$work" && CARGO_TARGET_DIR="$repo/target" cargo run -q)
