#!/usr/bin/env python3
"""Benchmark: a splice build of one release against a compile of ALL of that
module's sources with the same compiler and flags (what a from-source build
of the module costs, without Gradle). Warm caches: run okp build once first.

    cargo build --release && python3 bench/splice_vs_full.py [--version 3.9.2]

Prints both wall times and the ratio. Not a test: nothing here asserts a time.
"""
import argparse, glob, json, os, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OKP = os.path.join(ROOT, "target", "release", "okp")
M2 = os.environ.get("OKP_MAVEN_REPO_LOCAL", os.path.expanduser("~/.m2/repository"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="3.9.2")
    ap.add_argument("--mode", default="zk")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="okp-bench-")
    # Warm: classpaths, compiler and jars in the local repository.
    subprocess.run([OKP, "build", "--version", a.version, "--mode", a.mode, "--out", os.path.join(work, "warm")], check=True, capture_output=True)

    t = time.perf_counter()
    subprocess.run([OKP, "build", "--version", a.version, "--mode", a.mode, "--out", os.path.join(work, "splice")], check=True, capture_output=True)
    splice = time.perf_counter() - t
    rec = json.load(open(os.path.join(work, "splice", "okp-build.json")))
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
    out = os.path.join(work, "full-classes")
    os.makedirs(out)
    argfile = os.path.join(work, "files.txt")
    open(argfile, "w").write("\n".join(files) + "\n")
    t = time.perf_counter()
    # The full compile runs long enough for C2 to pay off: default JIT, its best setting.
    p = subprocess.run(["java", "-Xss8m", "-Xmx3g", "-cp", open(cc_file).read().strip(), "scala.tools.nsc.Main",
                        "-d", out, "-classpath", os.pathsep.join(cp)] + flags + ["@" + argfile], capture_output=True, text=True)
    full = time.perf_counter() - t
    classes = len(glob.glob(os.path.join(out, "**/*.class"), recursive=True))
    print(f"release {a.version} {a.mode}, {coord} {' '.join(flags)}")
    print(f"splice build (okp build, warm caches): {splice:.1f} s, {len(rec['sources'])} sources recompiled")
    status = "ok" if p.returncode == 0 else f"FAILED (exit {p.returncode}): {p.stdout[-500:]}{p.stderr[-500:]}"
    print(f"full core compile ({len(files)} files, {classes} classes): {full:.1f} s, {status}")
    print(f"ratio: splice is {full / splice:.1f}x faster")


if __name__ == "__main__":
    main()
