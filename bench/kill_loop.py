#!/usr/bin/env python3
"""Kill loop: SIGKILL `okp apply` and `okp revert` at random moments on a real
release tree (the files Kafka 3.9.2's anchors touch, laid out by
`okp sources --hooked` from the Maven Central sources jars), let `okp status`
recover after each kill, and count what must never happen:

  half-patched   the tree is neither pristine nor fully patched after recovery
  temp files     a `*.okp-tmp` file anywhere in the tree (.okp/ included) after recovery
  inconsistent   state.json present but the bytes are pristine, or absent but
                 patched; a pristine copy missing or wrong in a patched tree; a journal left
  status failed  `okp status` did not exit 0

Run from the repo root after `cargo build`:
    python3 bench/kill_loop.py [--kills 200] [--seed S] [--okp target/debug/okp]

Only kills that landed while okp was still running count toward --kills, for
apply and for revert each. Exits 1 when any of the four counts is not zero.
Not a test (tests/it/apply_safety.rs and tests/it/hardening_tree.rs are); a
measurement with real signals at real, random moments.
"""
import argparse, os, random, shutil, signal, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSION, MODE = "3.9.2", "kraft"


def snapshot(tree):
    """Every file under tree except okp's own .okp/ (and .git/) and okp's temp
    files (counted on their own), with its bytes."""
    out = {}
    for d, dirs, files in os.walk(tree):
        rel_d = os.path.relpath(d, tree)
        if rel_d == ".":
            dirs[:] = [x for x in dirs if x not in (".okp", ".git")]
        for f in files:
            if f.endswith(".okp-tmp"):
                continue
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.normpath(os.path.join(rel_d, f))] = fh.read()
    return out


def tmp_files(tree):
    return [os.path.join(d, f) for d, _, files in os.walk(tree) for f in files if f.endswith(".okp-tmp")]


def run(okp, *args):
    return subprocess.run([okp, *args], capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=200, help="real kills per operation (apply, revert)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--okp", default=os.path.join(ROOT, "target", "debug", "okp"))
    args = ap.parse_args()
    if not os.path.exists(args.okp):
        sys.exit("build first: cargo build")
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="okp-kill-loop-")
    try:
        pristine_dir = os.path.join(work, "pristine")
        p = run(args.okp, "sources", "--hooked", "--version", VERSION, "--out", pristine_dir)
        if p.returncode != 0:
            sys.exit(f"okp sources failed: {p.stderr}")
        applied_dir = os.path.join(work, "applied")
        shutil.copytree(pristine_dir, applied_dir)
        p = run(args.okp, "apply", "--mode", MODE, "--source", applied_dir)
        if p.returncode != 0:
            sys.exit(f"okp apply failed: {p.stderr}")
        pristine, full = snapshot(pristine_dir), snapshot(applied_dir)
        touched = sorted(k for k in full if pristine.get(k) != full[k])

        def duration(op, template):
            times = []
            for _ in range(5):
                t = os.path.join(work, "calibrate")
                shutil.copytree(template, t)
                start = time.perf_counter()
                run(args.okp, *op, "--source", t)
                times.append(time.perf_counter() - start)
                shutil.rmtree(t)
            return statistics.median(times)

        ops = {
            "apply": (["apply", "--mode", MODE], pristine_dir),
            "revert": (["revert"], applied_dir),
        }
        print(f"okp kill loop: Kafka {VERSION} {MODE}, {len(touched)} files change, seed {seed}, {args.kills} real kills per operation")
        failed = False
        for name, (op, template) in ops.items():
            d = duration(op, template)
            c = dict(kills=0, finished_first=0, ended_pristine=0, ended_patched=0, half_patched=0,
                     temp_files=0, inconsistent=0, status_failed=0, temp_before_recovery=0, journal_at_kill=0)
            examples = []
            while c["kills"] < args.kills:
                t = os.path.join(work, "t")
                if os.path.exists(t):
                    shutil.rmtree(t)
                shutil.copytree(template, t)
                proc = subprocess.Popen([args.okp, *op, "--source", t], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(rng.uniform(0, d * 1.2))
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                rc = proc.wait()
                if rc != -signal.SIGKILL:
                    c["finished_first"] += 1
                    continue
                c["kills"] += 1
                c["temp_before_recovery"] += bool(tmp_files(t))
                c["journal_at_kill"] += os.path.exists(os.path.join(t, ".okp", "journal.json"))
                s = run(args.okp, "status", "--source", t)
                problems = []
                if s.returncode != 0:
                    c["status_failed"] += 1
                    problems.append(f"status exit {s.returncode}: {s.stderr.strip()}")
                now = snapshot(t)
                has_state = os.path.exists(os.path.join(t, ".okp", "state.json"))
                if now == pristine:
                    c["ended_pristine"] += 1
                    if has_state:
                        problems.append("pristine bytes but state.json says applied")
                elif now == full:
                    c["ended_patched"] += 1
                    if not has_state:
                        problems.append("patched bytes but no state.json")
                    for f in touched:
                        copy = os.path.join(t, ".okp", "pristine", f)
                        if f in pristine and not (os.path.exists(copy) and open(copy, "rb").read() == pristine[f]):
                            problems.append(f"pristine copy of {f} missing or wrong")
                else:
                    c["half_patched"] += 1
                    diff = [f for f in touched if now.get(f) not in (pristine.get(f), full.get(f))]
                    mixed = [f for f in touched if now.get(f) == full.get(f)]
                    problems.append(f"half-patched: {len(mixed)} of {len(touched)} files patched, {len(diff)} neither")
                if os.path.exists(os.path.join(t, ".okp", "journal.json")):
                    problems.append("journal.json left after recovery")
                if any(x.startswith(("pristine bytes", "patched bytes", "pristine copy", "journal")) for x in problems):
                    c["inconsistent"] += 1
                left = tmp_files(t)
                if left:
                    c["temp_files"] += 1
                    problems.append("temp files: " + ", ".join(os.path.relpath(x, t) for x in left))
                if problems and len(examples) < 5:
                    examples.append(f"kill {c['kills']}: " + "; ".join(problems))
            bad = c["half_patched"] + c["temp_files"] + c["inconsistent"] + c["status_failed"]
            failed |= bad > 0
            print(f"\nokp {name} (median run {d*1000:.0f} ms, kills at uniform 0..{d*1.2*1000:.0f} ms):")
            print(f"  real SIGKILLs             {c['kills']}  ({c['finished_first']} more runs finished before their kill, not counted)")
            print(f"  killed with a journal     {c['journal_at_kill']}")
            print(f"  temp files at the kill    {c['temp_before_recovery']}")
            print(f"  after okp status:  pristine {c['ended_pristine']}, fully patched {c['ended_patched']}")
            print(f"  half-patched trees        {c['half_patched']}")
            print(f"  leftover temp files       {c['temp_files']}")
            print(f"  state inconsistent        {c['inconsistent']}")
            print(f"  status failed             {c['status_failed']}")
            for e in examples:
                print(f"    {e}")
        sys.exit(1 if failed else 0)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
