#!/usr/bin/env bash
# The whole performance comparison with one command, on a fresh Debian/Ubuntu machine
# with Rust: installs redis-server, redis-benchmark and valgrind when missing, builds
# the benches in release, counts the codec's instructions under callgrind (P9), then
# runs benches/compare.rs (P1-P5, P10-P12, reference figures, growth) and prints the
# tables.
#
#   ./scripts/bench.sh                 # the full run (about 5 minutes)
#   BENCH_QUICK=1 ./scripts/bench.sh   # short windows: a smoke run, not for the record
#   ./scripts/bench.sh p1 p9 sizes     # only these workloads
#                                      # (p1 p2 p3 p4 p5 p9 ref threads sizes distance)
#   ./scripts/bench.sh distance        # P10-P12: the server 250 us, 1 ms, 10 ms away
#                                      # (a delay proxy in its own process), a slow
#                                      # server, an idle client
#
# The report is also kept in target/bench/report.txt. The 2 cores are shared by client,
# server and anything else running: BENCH_WAIT_QUIET=1 first waits (up to 10 minutes)
# for the 1-minute load average to drop below 1.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-benchmark >/dev/null 2>&1 || need+=(redis-tools)
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing Debian's ${need[*]} (needed by the benches)"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "need root or sudo to apt-get install ${need[*]}" >&2; exit 1; }
    SUDO="sudo"
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

mkdir -p target/bench
echo "building the benches (release)..."
cargo bench --no-run --bench compare --bench codec_instructions --message-format=json-render-diagnostics \
  >target/bench/build.json
executable() {
  grep -o "\"executable\":\"[^\"]*/deps/$1-[0-9a-f]*\"" target/bench/build.json \
    | tail -n 1 | cut -d'"' -f4
}
COMPARE=$(executable compare)
CODEC=$(executable codec_instructions)
[ -x "$COMPARE" ] && [ -x "$CODEC" ] || { echo "bench executables not found" >&2; exit 1; }

if [ -n "${BENCH_WAIT_QUIET:-}" ] && [ "${BENCH_WAIT_QUIET}" != 0 ]; then
  for _ in $(seq 60); do
    awk '{ exit !($1 < 1.0) }' /proc/loadavg && break
    echo "waiting for a quiet machine (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    sleep 10
  done
fi

run_p9=1
if [ $# -gt 0 ]; then
  run_p9=0
  for a in "$@"; do [ "$a" = p9 ] && run_p9=1; done
fi

# Instructions for N iterations, counted by callgrind over the whole process.
instructions() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$CODEC" "$1" "$2" 2>&1 \
    | sed -n 's/.*Collected : *\([0-9][0-9]*\).*/\1/p'
}

{
  echo "valgrind $(valgrind --version | sed 's/valgrind-//'), rustc $(rustc --version | cut -d' ' -f2), $(nproc) cores, $(uname -r)"
  if [ "$run_p9" = 1 ]; then
    "$CODEC" all 0 # self-check: every side encodes the same frame and decodes the same value
    if [ -n "${BENCH_QUICK:-}" ] && [ "${BENCH_QUICK}" != 0 ]; then base=1000 extra=10000; else base=10000 extra=100000; fi
    echo
    echo "P9 codec cost under callgrind: (instructions at N=$((base + extra)) - at N=$base) / $extra"
    echo "| side     | instructions per GET encoded + \$32 reply decoded |"
    echo "| -------- | ------------------------------------------------- |"
    for side in ours ours-raw theirs; do
      lo=$(instructions "$side" "$base")
      hi=$(instructions "$side" "$((base + extra))")
      per=$(( (hi - lo) / extra ))
      printf '| %-8s | %-49s |\n' "$side" "$per"
      case $side in
        ours) export BENCH_P9_OURS=$per ;;
        theirs) export BENCH_P9_THEIRS=$per ;;
      esac
    done
    echo "(ours: Cmd + Decoder as Database::get uses them; ours-raw: the bare encoder into a reused"
    echo " buffer; theirs: redis-rs cmd().get_packed_command() + its kept Parser, as its sync Connection does)"
    echo
  fi
  "$COMPARE" "$@"
} 2>&1 | tee target/bench/report.txt
