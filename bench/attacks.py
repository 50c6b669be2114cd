#!/usr/bin/env python3
"""The attacks of issue 31 against one okp binary: exit code, time to answer, peak RSS.

Each attack lays out its own files in a fresh temporary directory, runs okp once with a
deadline (a run still going at the deadline is killed and reported as a hang), and says what it
saw beside the code: a message okp printed, a victim file changed, a stray directory made.
Peak RSS is the child's own (wait4's ru_maxrss), so an attack that fills memory shows it even
when it is killed.

    python3 bench/attacks.py --okp target/release/okp [--deadline 15] [--json out.json]

Run it against two binaries (before and after a change) to fill the closing note's table. The
release tree comes from `okp sources --version 3.9.2` (Maven Central), made once under
target/okp-test-trees/ as the integration tests make it.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTITION = "core/src/main/scala/kafka/cluster/Partition.scala"


def release_tree(okp):
    tree = os.path.join(ROOT, "target", "okp-test-trees", "3.9.2")
    if not os.path.isfile(os.path.join(tree, ".okp-source.json")):
        os.makedirs(os.path.dirname(tree), exist_ok=True)
        subprocess.run([okp, "sources", "--version", "3.9.2", "--out", tree], check=True)
    return tree


def run(argv, deadline, env=None, cwd=None, sigint_after=None):
    """(code or None when killed, seconds, peak RSS MiB, stdout, stderr)."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=cwd,
                         start_new_session=True)
    killed, sent = False, False
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        elapsed = time.monotonic() - t0
        if sigint_after is not None and not sent and elapsed >= sigint_after:
            os.kill(p.pid, signal.SIGINT)
            sent = True
        if elapsed >= deadline:
            os.killpg(p.pid, signal.SIGKILL)
            killed = True
            _, status, usage = os.wait4(p.pid, 0)
            break
        time.sleep(0.01)
    seconds = time.monotonic() - t0
    code = None if killed else (os.waitstatus_to_exitcode(status))
    out.seek(0)
    err.seek(0)
    return code, seconds, usage.ru_maxrss / 1024, out.read().decode(errors="replace"), err.read().decode(errors="replace")


def copy_tree(tree, d):
    dst = os.path.join(d, "tree")
    shutil.copytree(tree, dst)
    return dst


def replace(path, how):
    os.remove(path)
    how(path)


def sparse(size):
    def make(path):
        with open(path, "wb") as f:
            f.truncate(size)
    return make


def first_line(text, *words):
    """The first line holding every word, else the last line."""
    for line in text.splitlines():
        if all(w in line for w in words):
            return line.strip()[:160]
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1].strip()[:160] if lines else ""


def attacks(okp, tree):
    """(name, set-up returning (argv, env, cwd, check)), each set-up in its own directory."""

    def tree_with(how, rel=PARTITION):
        def setup(d):
            t = copy_tree(tree, d)
            replace(os.path.join(t, rel), how)
            return [okp, "check-anchors", "--source", t], None, None, None
        return setup

    def okp_state(name):
        def setup(d):
            t = copy_tree(tree, d)
            os.makedirs(os.path.join(t, ".okp"))
            os.mkfifo(os.path.join(t, ".okp", name))
            cmd = "status" if name == "state.json" else "revert"
            return [okp, cmd, "--source", t], None, None, None
        return setup

    def git_blob(d):
        t = copy_tree(tree, d)
        with open(os.path.join(t, PARTITION), "wb") as f:
            f.truncate(300 << 20)
        g = ["git", "-C", t, "-c", "user.name=okp", "-c", "user.email=okp@invalid"]
        subprocess.run(g + ["init", "-q"], check=True)
        subprocess.run(g + ["add", "-A"], check=True)
        subprocess.run(g + ["commit", "-qm", "blob"], check=True)
        return [okp, "check-anchors", "--git", t, "--rev", "HEAD"], None, None, None

    def source_record_fifo(d):
        t = copy_tree(tree, d)
        replace(os.path.join(t, ".okp-source.json"), os.mkfifo)
        return [okp, "build", "--tree", t, "--version", "3.9.2", "--mode", "zk", "--out", os.path.join(d, "out")], None, None, None

    def watch(state=None, audit=None, lock_victim=False, audit_victim=False):
        def setup(d):
            nodes = os.path.join(d, "nodes.yaml")
            ids = os.path.join(d, "observer.ids")
            with open(ids, "w") as f:
                f.write("4\n")
            with open(nodes, "w") as f:
                f.write(f"nodes:\n  - {{id: 1, path: '{ids}'}}\n")
            s, a = os.path.join(d, "state.json"), os.path.join(d, "audit.log")
            victim = os.path.join(d, "victim.conf")
            with open(victim, "w") as f:
                f.write("keep\n")
            if state == "fifo":
                os.mkfifo(s)
            elif state == "zero":
                os.symlink("/dev/zero", s)
            if audit == "fifo":
                os.mkfifo(a)
            if lock_victim:
                os.symlink(victim, s + ".lock")
            if audit_victim:
                os.symlink(victim, a)
            argv = [okp, "observers", "watch", "--enable", "--dry-run", "--once", "--nodes", nodes,
                    "--state", s, "--audit-log", a, "--bootstrap", "127.0.0.1:1"]

            def check():
                with open(victim) as f:
                    text = f.read()
                return "victim unchanged" if text == "keep\n" else f"victim now {text!r}"[:80]
            return argv, None, None, check
        return setup

    def forged_line(d):
        argv = [okp, "observers", "status", "--bootstrap", 'b:1\n{"action":"promote"}\x1b[31m']

        return argv, None, None, None

    def duplicate_key(d):
        f = os.path.join(d, "versions.yaml")
        with open(os.path.join(ROOT, "versions.yaml")) as src:
            text = src.read()
        with open(f, "w") as out:
            out.write(text.replace("    family: f2.7\n", "    family: f2.7\n    family: f2.7\n", 1))
        return [okp, "--versions", f, "versions"], None, None, None

    def compare_fifo(d):
        f = os.path.join(d, "fifo")
        os.mkfifo(f)
        return [okp, "compare-builds", f, f], None, None, None

    def home_unset(d):
        env = {k: v for k, v in os.environ.items() if k != "HOME"}

        def check():
            return "made ./.m2 in the working directory" if os.path.exists(os.path.join(d, ".m2")) else "no ./.m2"
        return [okp, "check-anchors", "--version", "3.9.2"], env, d, check

    return [
        ("FIFO at .okp/state.json (status)", okp_state("state.json")),
        ("FIFO at .okp/journal.json (revert)", okp_state("journal.json")),
        ("FIFO as Partition.scala (check-anchors)", tree_with(os.mkfifo)),
        ("Partition.scala -> /dev/zero (check-anchors)", tree_with(lambda p: os.symlink("/dev/zero", p))),
        ("Partition.scala a 3 GiB sparse file", tree_with(sparse(3 << 30))),
        ("--git with a 300 MB Partition.scala blob", git_blob),
        ("FIFO as .okp-source.json (build --tree)", source_record_fifo),
        ("watch --state a FIFO", watch(state="fifo")),
        ("watch --state -> /dev/zero", watch(state="zero")),
        ("watch --audit-log a FIFO", watch(audit="fifo")),
        ("watch: state.json.lock -> victim", watch(lock_victim=True)),
        ("watch: audit log -> victim", watch(audit_victim=True)),
        ("--bootstrap with a newline and ESC", forged_line),
        ("versions.yaml with a duplicate key", duplicate_key),
        ("compare-builds FIFO FIFO", compare_fifo),
        ("HOME unset", home_unset),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--okp", required=True)
    ap.add_argument("--deadline", type=float, default=15.0)
    ap.add_argument("--json")
    ap.add_argument("--only", help="run the attacks whose name holds this text")
    a = ap.parse_args()
    okp = os.path.abspath(a.okp)
    tree = release_tree(okp)
    rows = []
    for name, setup in attacks(okp, tree):
        if a.only and a.only not in name:
            continue
        with tempfile.TemporaryDirectory(prefix="okp-attack-") as d:
            argv, env, cwd, check = setup(d)
            code, secs, rss, out, err = run(argv, a.deadline, env=env, cwd=cwd)
            saw = first_line(err, "okp: error") if err.strip() else first_line(out)
            if code is None:
                saw = f"killed at the {a.deadline:.0f} s deadline; " + saw
            if "\n{\"action\"" in err:
                saw = "stderr carries a forged line; " + saw
            if check:
                saw = check() + "; " + saw
        row = {"attack": name, "exit": code, "seconds": round(secs, 2), "rss_mib": round(rss, 1), "saw": saw}
        rows.append(row)
        print(f"{name:<46} exit {str(code):>4}  {secs:6.2f} s  {rss:7.1f} MiB  {saw}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
