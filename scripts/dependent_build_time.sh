#!/usr/bin/env bash
# How long a small crate that depends on resilient-redis takes to build from clean,
# with the default features and with `default-features = false` (no `tls`, no
# `lag-aware`: what a plain-TCP application can trim, issue 20).
#
#   scripts/dependent_build_time.sh           # debug builds
#   scripts/dependent_build_time.sh release   # release builds
#   scripts/dependent_build_time.sh both      # debug, then release
#
# It builds the source tree it sits in, as it is: to measure a commit while editing,
# run it from an export (`git archive <commit> | tar -x -C /tmp/somewhere`).
#
# Each build starts from an empty target dir under /tmp, deleted afterwards; downloads
# are fetched before the clock starts. Prints wall time, the number of crates compiled
# and the load average before and after: on a busy machine the times mean little, the
# crate counts still do. Set NICE=19 and CARGO_BUILD_JOBS=1 to stay out of the way of
# other work (the times then measure that, not the crate).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
case "${1:-dev}" in
  dev) profiles=(dev) ;;
  release) profiles=(release) ;;
  both) profiles=(dev release) ;;
  *) echo "usage: $0 [dev|release|both]" >&2; exit 2 ;;
esac

work="$(mktemp -d /tmp/rr-dependent.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# One dependent crate per feature set: a main that connects, so the crate is really
# used (and shows what a TLS URL gives in that build).
make_crate() { # name, dependency line
  mkdir -p "$work/$1/src"
  cat >"$work/$1/Cargo.toml" <<EOF
[package]
name = "$1"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
$2

[workspace]
EOF
  cat >"$work/$1/src/main.rs" <<'EOF'
use resilient_redis::Client;

fn main() {
    // Nothing listens on port 1: every connect fails, and how it fails is the point.
    for url in ["redis://127.0.0.1:1?connectTimeout=200", "rediss://127.0.0.1:1?connectTimeout=200"] {
        match Client::connect(url) {
            Ok(_) => println!("{url}: connected"),
            Err(e) => println!("{url}: {e}"),
        }
    }
}
EOF
  # The repository's lock: the same versions its own builds use.
  cp "$repo/Cargo.lock" "$work/$1/Cargo.lock"
}

make_crate with_defaults "resilient-redis = { path = \"$repo\" }"
make_crate no_defaults "resilient-redis = { path = \"$repo\", default-features = false }"

measure() { # crate, profile
  local dir="$work/$1" target="$work/target-$1-$2" flag="" start end compiled
  [ "$2" = release ] && flag="--release"
  (cd "$dir" && cargo fetch -q)
  start=$(date +%s.%N)
  compiled=$(cd "$dir" && CARGO_TARGET_DIR="$target" ${NICE:+nice -n "$NICE"} \
    cargo build $flag 2>&1 | tee "$work/log-$1-$2" | grep -c '^ *Compiling ' || true)
  end=$(date +%s.%N)
  if ! grep -q '^ *Finished' "$work/log-$1-$2"; then
    cat "$work/log-$1-$2" >&2
    exit 1
  fi
  printf '%-14s %-8s %6.1f s  %3d crates compiled\n' "$1" "$2" \
    "$(awk "BEGIN { print $end - $start }")" "$compiled"
  if [ "$2" = dev ]; then
    "$target/debug/$1" | sed 's/^/    /'
  fi
  rm -rf "$target"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
echo "jobs: ${CARGO_BUILD_JOBS:-all cores}, nice: ${NICE:-0}, $(cargo --version)"
for p in "${profiles[@]}"; do
  measure with_defaults "$p"
  measure no_defaults "$p"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
