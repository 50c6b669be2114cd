#!/usr/bin/env python3
"""Benchmark: what the provenance proofs add to a splice build. The same build
with the proofs (the default) and without (OKP_NO_PROOF=1), run alternately
(A B A B ...) so a machine's load falls on both alike; warm caches (one build
first). Prints the median wall time of each, the overhead in percent, and the
proof's own seconds as okp-build.json records them (`seconds.proof-*`).

    cargo build --release && python3 bench/proof_cost.py [--pair 3.9.2-zk --pair 4.3.1-kraft] [--runs 3] [--layer core]

Not a test: nothing here asserts a time.
"""
import argparse, json, os, shutil, statistics, subprocess, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OKP = os.environ.get("OKP", os.path.join(ROOT, "target", "release", "okp"))


def build(version, mode, layer, out, proof):
    env = dict(os.environ)
    env.pop("OKP_NO_PROOF", None)
    if not proof:
        env["OKP_NO_PROOF"] = "1"
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    subprocess.run([OKP, "build", "--version", version, "--mode", mode, "--layer", layer, "--out", out],
                   check=True, capture_output=True, env=env)
    wall = time.perf_counter() - t
    rec = json.load(open(os.path.join(out, "okp-build.json")))
    proof_s = sum(v for k, v in rec.get("seconds", {}).items() if k.startswith("proof-"))
    return wall, proof_s, rec.get("provenance") is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pair", action="append", default=[])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--layer", default="core")
    a = ap.parse_args()
    pairs = a.pair or ["3.9.2-zk", "4.3.1-kraft"]
    work = tempfile.mkdtemp(prefix="okp-bench-proof-")
    print(f"okp {OKP}, layer {a.layer}, {a.runs} runs each, alternating")
    print("| pair | with proofs (median s) | without (median s) | overhead | proof steps (median s) |")
    print("|---|---|---|---|---|")
    for p in pairs:
        version, mode = p.rsplit("-", 1)
        build(version, mode, a.layer, os.path.join(work, "warm"), True)
        with_p, without, steps = [], [], []
        for _ in range(a.runs):
            w, s, has = build(version, mode, a.layer, os.path.join(work, "a"), True)
            assert has, "a build with proofs carries its provenance"
            with_p.append(w)
            steps.append(s)
            w, _, has = build(version, mode, a.layer, os.path.join(work, "b"), False)
            assert not has, "OKP_NO_PROOF=1 leaves the provenance out"
            without.append(w)
        mw, mo, ms = statistics.median(with_p), statistics.median(without), statistics.median(steps)
        print(f"| {p} | {mw:.1f} ({', '.join(f'{x:.1f}' for x in with_p)}) | {mo:.1f} ({', '.join(f'{x:.1f}' for x in without)}) "
              f"| {100 * (mw - mo) / mo:+.0f}% | {ms:.1f} |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
