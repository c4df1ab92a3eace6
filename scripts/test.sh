#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what the tests need when it is
# missing (Debian's redis-server for the real-server tier), then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1; then
  echo "redis-server not found: installing Debian's redis-server (needed by the real-server tests)"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "need root or sudo to apt-get install redis-server" >&2; exit 1; }
    SUDO="sudo"
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server redis-tools >/dev/null
fi
redis-server --version

# Unit, integration and doc tests, with every feature (the testkit included).
cargo test --all-features "$@"

# Again with maintenance notifications on (RR_TEST_MAINT=on, read by
# tests/support/optin.rs): opted-in connections take other paths (the pipelined
# opt-in, pushes mid-handshake, relaxed deadlines), so a change that breaks only those
# must fail here. Only the tests in files that build clients through that helper
# (`optin::`): the rest (unit, decision and raw-protocol tests) would run exactly as
# above. A test binary is a file `tests/<name>.rs` or a directory `tests/<name>/`
# whose `main.rs` declares one module per file; in a directory, the modules that do
# not use the helper are skipped by name (`--skip <module>::`), so a filter of your
# own still narrows the run as it does above.
# RR_TEST_MAINT_PASS=0 skips this pass (a quick local run).
if [ "${RR_TEST_MAINT_PASS:-1}" != "0" ]; then
  # Our `--skip`s go to the test binary: after your own `--` if you gave one.
  sep=(--)
  for arg in "$@"; do
    if [ "$arg" = "--" ]; then sep=(); fi
  done
  for main in tests/*.rs tests/*/main.rs; do
    if [ "$(basename "$main")" != main.rs ]; then
      if grep -q 'optin::' "$main"; then
        echo "again with maintenance notifications on: $main"
        RR_TEST_MAINT=on cargo test --all-features --test "$(basename "$main" .rs)" "$@"
      fi
      continue
    fi
    dir=$(dirname "$main")
    skips=()
    used=0
    if grep -q 'optin::' "$main"; then
      used=1 # tests in main.rs itself: the whole binary
    else
      for f in "$dir"/*.rs; do
        [ "$f" = "$main" ] && continue
        if grep -q 'optin::' "$f"; then
          used=1
        else
          skips+=(--skip "$(basename "$f" .rs)::")
        fi
      done
    fi
    if [ "$used" = 1 ]; then
      echo "again with maintenance notifications on: $dir ${skips[*]}"
      RR_TEST_MAINT=on cargo test --all-features --test "$(basename "$dir")" "$@" \
        "${sep[@]}" "${skips[@]}"
    fi
  done
fi

# The build without default features (no TLS, no lag-aware probe), which the passes
# above cannot cover: every test target builds with the testkit, which implies both.
# RR_NO_DEFAULT_CHECK=0 skips it.
if [ "${RR_NO_DEFAULT_CHECK:-1}" != "0" ]; then
  ./scripts/check_no_default_features.sh
fi
