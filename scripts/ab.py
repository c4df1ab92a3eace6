#!/usr/bin/env python3
"""Interleaved A/B runs of `compare profile` builds and settings, with medians.

    scripts/ab.py THREADS SECONDS ROUNDS SPEC...

SPEC is `label=BINARY[:ENV=VALUE,ENV=VALUE]`: a `compare` bench binary (build one per
variant: `cargo bench --no-run --bench compare`, then copy it out of
target/release/deps) and environment for its run (`BENCH_OURS_OPTIONS=lanes=0` tries a
setting). The label `rr` runs redis-rs (`profile theirs`) with its binary, and every
other variant then also gets its ratio to redis-rs in the same round. Each round runs
every variant once, in order, so the VM's drift touches all of them alike; the medians
are over rounds. Example:

    scripts/ab.py 2 1.5 7 rr=/tmp/bin/main main=/tmp/bin/main \\
        pair=/tmp/bin/main:BENCH_OURS_OPTIONS=lanes=0

The numbers are what `compare profile` prints: calls/s, the client's CPU per call
(user + system time of the whole process), the machine's (with the server's), and the
shares of the machine's CPU time left idle (bubbles in the pipeline) and stolen by the
hypervisor (a noisy VM: compare rounds, not runs far apart).
"""
import os
import re
import statistics as st
import subprocess
import sys


def parse_spec(arg):
    label, rest = arg.split("=", 1)
    binary, _, env_text = rest.partition(":")
    env = dict(os.environ)
    for pair in filter(None, env_text.split(",")):
        key, value = pair.split("=", 1)
        env[key] = value
    return label, binary, env


def run(binary, side, threads, seconds, env):
    out = subprocess.run(
        [binary, "profile", side, threads, seconds, "mixed"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout
    m = re.search(r"= ([0-9.]+)(k|M)? ops/s.*CPU per call ([0-9.]+) µs, with server ([0-9.]+) µs", out)
    if not m:
        sys.exit(f"unexpected output from {binary}: {out!r}")
    scale = {"k": 1e3, "M": 1e6, None: 1}[m.group(2)]
    # Idle and stolen shares of the machine (older binaries do not print them).
    shares = re.search(r"machine idle ([0-9.]+) %, stolen ([0-9.]+) %", out)
    idle, stolen = (float(shares.group(1)), float(shares.group(2))) if shares else (0.0, 0.0)
    return float(m.group(1)) * scale, float(m.group(3)), float(m.group(4)), idle, stolen


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    threads, seconds, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    specs = [parse_spec(a) for a in sys.argv[4:]]
    results = {label: [] for label, _, _ in specs}
    for _ in range(rounds):
        for label, binary, env in specs:
            side = "theirs" if label == "rr" else "ours"
            results[label].append(run(binary, side, threads, seconds, env))
    theirs = results.get("rr")
    for label, _, _ in specs:
        rows = results[label]
        line = ("%-10s %s threads: %.1fk calls/s [%s], CPU per call %.1f µs, with server %.1f µs, "
                "machine idle %.0f %%, stolen %.0f %%") % (
            label, threads,
            st.median(r[0] for r in rows) / 1e3,
            " ".join("%.0f" % (r[0] / 1e3) for r in rows),
            st.median(r[1] for r in rows),
            st.median(r[2] for r in rows),
            st.median(r[3] for r in rows),
            st.median(r[4] for r in rows),
        )
        if theirs and label != "rr":
            ratios = [a[0] / b[0] for a, b in zip(rows, theirs)]
            cpu = [a[1] / b[1] for a, b in zip(rows, theirs)]
            line += "; ratio %.2f [%s], CPU ratio %.2f" % (
                st.median(ratios), " ".join("%.2f" % r for r in ratios), st.median(cpu))
        print(line)


main()
