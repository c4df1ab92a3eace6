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
