#!/usr/bin/env python3
"""Benchmark: `okp diff` between two releases with warm caches (the sources
jars already in the Maven local repository), per output format.

Run from the repo root after `cargo build --release`:
    python3 bench/diff.py [--runs 9] [--pairs 4.2.1:4.3.1 3.9.2:4.0.2]
Prints the median, min and max wall time and okp's peak RSS per pair. Not a
test: nothing here asserts a time.
"""
import argparse, os, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OKP = os.path.join(ROOT, "target", "release", "okp")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--pairs", nargs="+", default=["4.2.1:4.3.1", "4.1.2:4.2.1", "3.9.2:4.0.2"])
    args = ap.parse_args()
    if not os.path.exists(OKP):
        sys.exit("build first: cargo build --release")
    for pair in args.pairs:
        old, new = pair.split(":")
        base = [OKP, "diff", "--from", old, "--to", new]
        # Warm the cache (fetches the sources jars once when missing); exit 1 is drift, not failure.
        warm = subprocess.run(base + ["--format", "json"], capture_output=True)
        if warm.returncode not in (0, 1):
            sys.exit(f"okp diff {old} -> {new} failed: {warm.stderr.decode()}")
        for fmt in ["table", "markdown", "json"]:
            times, rss = [], []
            for _ in range(args.runs):
                t = time.perf_counter()
                p = subprocess.run(["/usr/bin/time", "-f", "%M"] + base + ["--format", fmt], capture_output=True, text=True)
                times.append(time.perf_counter() - t)
                rss.append(int(p.stderr.strip().splitlines()[-1]))
            print(f"okp diff {old} -> {new} --format {fmt:<8} (exit {warm.returncode}): median {statistics.median(times)*1000:.0f} ms "
                  f"over {len(times)} runs (min {min(times)*1000:.0f}, max {max(times)*1000:.0f}); peak RSS {max(rss)/1024:.1f} MiB")


if __name__ == "__main__":
    main()
