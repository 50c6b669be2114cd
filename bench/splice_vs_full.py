#!/usr/bin/env python3
"""Benchmark: a splice build of one release against a compile of ALL of that
module's sources with the same compiler and flags (what a from-source build
of the module costs, without Gradle). Warm caches: one okp build runs first
(a user's first build: it fills the caches and starts okp's resident
compiler, which the measured builds then use as a user's second build does).

    cargo build --release && python3 bench/splice_vs_full.py [--version 3.9.2] [--mode zk] [--runs 5]

Runs the splice build and the full compile alternately, --runs times each,
and prints min/median/max of both, the ratio of the medians and the load
average before and after. Not a test: nothing here asserts a time.
"""
import argparse, glob, json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OKP = os.path.join(ROOT, "target", "release", "okp")
M2 = os.environ.get("OKP_MAVEN_REPO_LOCAL", os.path.expanduser("~/.m2/repository"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="3.9.2")
    ap.add_argument("--mode", default="zk")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    load_before = os.getloadavg()
    work = tempfile.mkdtemp(prefix="okp-bench-")
    # Warm: classpaths, compiler and jars in the local repository, the unpatched compile's cache,
    # and okp's resident compiler (unless OKP_NO_DAEMON is set).
    subprocess.run([OKP, "build", "--version", a.version, "--mode", a.mode, "--out", os.path.join(work, "warm")], check=True, capture_output=True)
    rec = json.load(open(os.path.join(work, "warm", "okp-build.json")))
    scalac = rec["compilers"]["scalac"].split()
    coord, flags = scalac[0], scalac[1:]
    scala_version = coord.rsplit(":", 1)[1]

    # The whole core module from the release's sources jar, same compiler, same flags.
    tree = os.path.join(work, "tree")
    subprocess.run([OKP, "sources", "--version", a.version, "--out", tree], check=True, capture_output=True)
    files = sorted(glob.glob(os.path.join(tree, "core/src/main/scala/**/*.scala"), recursive=True)
                   + glob.glob(os.path.join(tree, "core/src/main/java/**/*.java"), recursive=True))
    cp_file = os.path.join(M2, "okp-classpath", f"org.apache.kafka-kafka_2.13-{a.version}.txt")
    cc_file = os.path.join(M2, "okp-classpath", f"org.scala-lang-scala-compiler-{scala_version}.txt")
    # Everything but the core jar itself: the module is what is being compiled.
    cp = [p for p in open(cp_file).read().strip().split(os.pathsep) if not os.path.basename(p).startswith("kafka_2.13-")]
    # Kafka's build compiles core against log4j as a compile-only dependency, so the
    # published POM lacks it; the full compile needs it (the splice build does not).
    extra = {"3": "ch.qos.reload4j:reload4j:1.2.25", "2": "log4j:log4j:1.2.17"}.get(a.version.split(".")[0])
    if extra:
        g, art, v = extra.split(":")
        subprocess.run(["mvn", "-q", "-B", "dependency:get", f"-Dartifact={extra}", "-Dtransitive=false"], check=True, capture_output=True)
        cp.append(os.path.join(M2, g.replace(".", "/"), art, v, f"{art}-{v}.jar"))
    argfile = os.path.join(work, "files.txt")
    open(argfile, "w").write("\n".join(files) + "\n")

    splices, fulls, status, classes, resident = [], [], "ok", 0, []
    for i in range(a.runs):
        # A user's second build: a fresh --out, every cache warm.
        t = time.perf_counter()
        p = subprocess.run([OKP, "build", "--version", a.version, "--mode", a.mode, "--out", os.path.join(work, f"splice-{i}")], check=True, capture_output=True, text=True)
        splices.append(time.perf_counter() - t)
        resident.append("in a JVM of its own" not in p.stderr)
        out = os.path.join(work, f"full-classes-{i}")
        os.makedirs(out)
        t = time.perf_counter()
        # The full compile runs long enough for C2 to pay off: default JIT, its best setting.
        p = subprocess.run(["java", "-Xss8m", "-Xmx3g", "-cp", open(cc_file).read().strip(), "scala.tools.nsc.Main",
                            "-d", out, "-classpath", os.pathsep.join(cp)] + flags + ["@" + argfile], capture_output=True, text=True)
        fulls.append(time.perf_counter() - t)
        if p.returncode != 0:
            status = f"FAILED (exit {p.returncode}): {p.stdout[-500:]}{p.stderr[-500:]}"
        classes = len(glob.glob(os.path.join(out, "**/*.class"), recursive=True))
    load_after = os.getloadavg()

    def mmm(xs):
        return f"min {min(xs):.1f} s, median {statistics.median(xs):.1f} s, max {max(xs):.1f} s"
    print(f"release {a.version} {a.mode}, {coord} {' '.join(flags)}")
    print(f"splice build (okp build, warm caches, {sum(resident)} of {a.runs} through the resident compiler): {mmm(splices)}; {len(rec['sources'])} sources recompiled")
    print(f"full core compile ({len(files)} files, {classes} classes, {a.runs} runs): {mmm(fulls)}, {status}")
    print(f"ratio of the medians: splice is {statistics.median(fulls) / statistics.median(splices):.1f}x faster")
    print("load average (1, 5, 15 min): before %.2f %.2f %.2f, after %.2f %.2f %.2f" % (load_before + load_after))


if __name__ == "__main__":
    main()
