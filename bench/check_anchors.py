#!/usr/bin/env python3
"""Benchmark: `okp check-anchors --all` over the whole matrix with warm caches,
against the same check done the way a shell script would (check each release
tag out into a work tree, then `grep -Fxc` per anchor).

Run from the repo root after `cargo build --release`:
    python3 bench/check_anchors.py [--runs 5]
Prints both times, the ratio and okp's peak memory. Not a test: nothing here
asserts a time.
"""
import argparse, json, os, shlex, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OKP = os.path.join(ROOT, "target", "release", "okp")
WORK = os.path.join(ROOT, "target", "bench")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def timed(cmd, **kw):
    t = time.perf_counter()
    run(cmd, **kw)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    if not os.path.exists(OKP):
        sys.exit("build first: cargo build --release")

    # Warm the cache (and learn, per release, which anchors apply and where).
    report = json.loads(run([OKP, "check-anchors", "--all", "--format", "json"], capture_output=True).stdout)
    # Releases Maven Central publishes no sources for are skipped by okp too.
    releases = sorted({t["release"] for t in report["targets"] if not t.get("skipped")}, key=lambda v: tuple(map(int, v.split("."))))

    # A git repository with one tag per release, laid out from the same sources jars.
    repo = os.path.join(WORK, "kafka")
    if not os.path.exists(os.path.join(repo, ".git")):
        os.makedirs(WORK, exist_ok=True)
        run(["git", "init", "-q", repo])
        run(["git", "-C", repo, "config", "user.email", "bench@okp.invalid"])
        run(["git", "-C", repo, "config", "user.name", "okp bench"])
        for v in releases:
            tree = os.path.join(WORK, "trees", v)
            if not os.path.exists(tree):
                run([OKP, "sources", "--version", v, "--out", tree], stderr=subprocess.DEVNULL)
            run(["git", "-C", repo, "rm", "-rq", "--ignore-unmatch", "."])
            run(["cp", "-a", tree + "/.", repo])
            run(["git", "-C", repo, "add", "-A"])
            run(["git", "-C", repo, "commit", "-qm", "release " + v])
            run(["git", "-C", repo, "tag", v])

    # The shell way: one work tree, checked out at each tag, grep -Fxc per anchor line.
    wt = os.path.join(WORK, "worktree")
    if not os.path.exists(wt):
        run(["git", "-C", repo, "worktree", "add", "-q", "--detach", wt, releases[0]])
    lines = ["set -u", "drift=0"]
    greps = 0
    for v in releases:
        lines.append(f"git -C {shlex.quote(wt)} checkout -q -f {v}")
        for t in (t for t in report["targets"] if t["release"] == v):
            for a in t["anchors"]:
                # A multi-line anchor is checked by its first line, as a grep would.
                f = shlex.quote(os.path.join(wt, a["file"]))
                lines.append(f"c=$(grep -Fxc -- {shlex.quote(a['expected'][0])} {f}); [ \"$c\" = 1 ] || {{ echo drift {v} {a['anchor']}; drift=1; }}")
                greps += 1
    lines.append("exit $drift")
    script = os.path.join(WORK, "grep-check.sh")
    with open(script, "w") as fh:
        fh.write("\n".join(lines) + "\n")

    okp_times, rss = [], []
    for _ in range(args.runs):
        t = time.perf_counter()
        p = run(["/usr/bin/time", "-f", "%M", OKP, "check-anchors", "--all", "--format", "json"], capture_output=True, text=True)
        okp_times.append(time.perf_counter() - t)
        rss.append(int(p.stderr.strip().splitlines()[-1]))
    sh_times = [timed(["bash", script], stdout=subprocess.DEVNULL) for _ in range(max(1, args.runs // 2))]

    okp_med, sh_med = statistics.median(okp_times), statistics.median(sh_times)
    checks = sum(len(t["anchors"]) for t in report["targets"])
    checked = sum(1 for t in report["targets"] if not t.get("skipped"))
    print(f"matrix: {len(releases)} releases, {checked} (release, mode) checks, {checks} anchor checks ({greps} greps)")
    print(f"okp check-anchors --all (warm cache): median {okp_med*1000:.0f} ms over {len(okp_times)} runs "
          f"(min {min(okp_times)*1000:.0f}, max {max(okp_times)*1000:.0f}); peak RSS {max(rss)/1024:.1f} MiB")
    print(f"shell (git checkout per tag + grep -Fxc): median {sh_med*1000:.0f} ms over {len(sh_times)} runs")
    print(f"ratio: okp is {sh_med/okp_med:.1f}x faster")


if __name__ == "__main__":
    main()
