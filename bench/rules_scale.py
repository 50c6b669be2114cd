#!/usr/bin/env python3
"""Benchmark: topic rules at scale (issue 48, "rules at scale"), in the three readers of
observer.ids, before and after the rule index, for docs/benchmarks.md ("Rules at scale").

Writes seeded inputs (rules-R.ids: R rules, a third each exact, prefix and regex; topics-N.txt: N
topic names, a quarter each shaped like an exact rule's name, a prefix's, a regex's and none's,
numbered from twice the largest rule set's range, so most names meet no rule), then:
  - compiles ObserverReplicas.java (javac --release 8) and ObserverIds.scala (scalac 2.13.18) as
    they are at --base (before the index) and in this tree (after), and runs
    bench/rules/RulesScale.java against each: parse_ms, isobs_ns, snapshot_ms, edit_ms,
    regex_edit_ms (its header says what each is);
  - runs okp's reader: `cargo run --release --example rules_scale -- INPUTS` (examples/rules_scale.rs):
    parse_ms, pass_linear_ms, first_pass_ms, pass_index_ms, decide_ns.
Prints the raw lines, then the markdown tables of docs/benchmarks.md. Medians of 5 runs after a
warm-up; a value marked ~ was timed on the first 2000 names and scaled to N (a full run would take
over 2 s, or minutes for the linear scans). Not a test: nothing here asserts a time.

    python3 bench/rules_scale.py [--rules 1,100,1000,10000] [--topics 10000,20000,100000] [--base c93d024e]

Jars (kafka-clients and kafka-metadata 4.3.1, slf4j-api 1.7.36, scala 2.13.18) come from the local
Maven repository, fetched with mvn when absent.
"""
import argparse, os, random, shutil, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
M2 = os.path.expanduser("~/.m2/repository")
JAVA_SRC = "patches/common/metadata/src/main/java/org/apache/kafka/controller/ObserverReplicas.java"
SCALA_SRC = "patches/common/core/src/main/scala/kafka/observer/ObserverIds.scala"
BENCH_SRC = os.path.join(ROOT, "bench", "rules", "RulesScale.java")
SCALA = "2.13.18"
KAFKA = "4.3.1"


def m2_jar(group, artifact, version):
    path = os.path.join(M2, *group.split("."), artifact, version, f"{artifact}-{version}.jar")
    if not os.path.isfile(path):
        subprocess.run(["mvn", "-q", "dependency:get", f"-Dartifact={group}:{artifact}:{version}",
                        "-Dtransitive=false"], check=True)
    return path


def rules_text(count, rng):
    """`count` rules: regex, exact, prefix in turn (one rule: a regex), regexes of four shapes."""
    lines = []
    for i in range(count):
        kind = i % 3
        if kind == 0:
            shape = (i // 3) % 4
            pattern = [f"app{i}-[a-z]+-\\d+", f"(log|audit){i}\\..*", f".*-dr{i}", f"[a-z]+\\.v{i}"][shape]
            lines.append(f"regex:{pattern} observers={i % 7}")
        elif kind == 1:
            lines.append(f"topic:svc{i}.events observers={i % 7}")
        else:
            lines.append(f"prefix:team{i}- observers=rack:dr,{i % 7}")
    return "4\n" + "\n".join(lines) + "\n"


def topic_names(count, rules, rng):
    """`count` names: a quarter each of the shapes of an exact rule's name, a prefix's, a regex's,
    and names no rule has, numbered from twice `rules`, so most names meet no rule (the scan's
    worst case: every stage and every regex tried)."""
    top = max(2 * rules, 6)
    out = []
    for j in range(count):
        k = rng.randrange(top)
        out.append([f"svc{k}.events", f"team{k}-orders-{j}", f"app{k}-orders-{j}", f"other{k}.metrics-{j}"][j % 4])
    return out


def compile_build(name, java_src, scala_src, work):
    out = os.path.join(work, name)
    os.makedirs(out)
    slf4j = m2_jar("org.slf4j", "slf4j-api", "1.7.36")
    lib = m2_jar("org.scala-lang", "scala-library", SCALA)
    kafka = [m2_jar("org.apache.kafka", a, KAFKA) for a in ("kafka-metadata", "kafka-clients")]
    subprocess.run(["javac", "--release", "8", "-nowarn", "-encoding", "UTF-8", "-cp", ":".join(kafka + [slf4j]),
                    "-d", out, java_src], check=True)
    compiler = ":".join(m2_jar("org.scala-lang", a, SCALA)
                        for a in ("scala-compiler", "scala-library", "scala-reflect"))
    subprocess.run(["java", "-cp", compiler, "scala.tools.nsc.Main", "-encoding", "UTF-8", "-cp", f"{slf4j}:{lib}",
                    "-d", out, scala_src], check=True)
    cp = ":".join([out, lib, slf4j] + kafka)
    subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "-cp", cp, "-d", out, BENCH_SRC], check=True)
    return cp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rules", default="1,100,1000,10000")
    ap.add_argument("--topics", default="10000,20000,100000")
    ap.add_argument("--base", default="c93d024e", help="the commit before the rule index")
    ap.add_argument("--skip", default="", help="comma-separated: registries, okp")
    ap.add_argument("--seed", type=int, default=48)
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    work = tempfile.mkdtemp(prefix="okp-rules-scale-")
    try:
        inputs = os.path.join(work, "inputs")
        os.makedirs(inputs)
        rng = random.Random(args.seed)
        rule_counts = [int(x) for x in args.rules.split(",")]
        topic_counts = [int(x) for x in args.topics.split(",")]
        for r in rule_counts:
            open(os.path.join(inputs, f"rules-{r}.ids"), "w").write(rules_text(r, rng))
        for n in topic_counts:
            # The names meet the largest rule set's range; smaller sets name fewer of them.
            names = topic_names(n, max(rule_counts), rng)
            open(os.path.join(inputs, f"topics-{n}.txt"), "w").write("\n".join(names) + "\n")
        lines = []
        if "registries" not in skip:
            for build in ("before", "after"):
                if build == "before":
                    srcs = []
                    for path in (JAVA_SRC, SCALA_SRC):
                        dest = os.path.join(work, "base", path)
                        os.makedirs(os.path.dirname(dest), exist_ok=True)
                        blob = subprocess.run(["git", "-C", ROOT, "show", f"{args.base}:{path}"], check=True,
                                              capture_output=True).stdout
                        open(dest, "wb").write(blob)
                        srcs.append(dest)
                else:
                    srcs = [os.path.join(ROOT, JAVA_SRC), os.path.join(ROOT, SCALA_SRC)]
                cp = compile_build(build, srcs[0], srcs[1], work)
                run = subprocess.run(["java", "-Xmx2g", "-cp", cp, "org.apache.kafka.controller.RulesScale", inputs,
                                      build], check=True, capture_output=True, text=True)
                lines += run.stdout.splitlines()
                print(run.stdout, end="", flush=True)
        if "okp" not in skip:
            run = subprocess.run(["cargo", "run", "-q", "--release", "--example", "rules_scale", "--", inputs],
                                 cwd=ROOT, check=True, capture_output=True, text=True)
            lines += run.stdout.splitlines()
            print(run.stdout, end="", flush=True)
        tables(lines)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def tables(lines):
    got = {}
    for line in lines:
        f = line.split("\t")
        if len(f) < 5:
            continue
        if f[0] == "okp":
            # examples/rules_scale.rs times the linear scan on the first 2000 names and scales it.
            scaled = f[3] == "pass_linear_ms" and int(f[2]) > 2000
            got[("okp", "-", f[1], f[2], f[3])] = (float(f[4]), "scaled" if scaled else "measured")
        else:
            got[(f[0], f[1], f[2], f[3], f[4])] = (float(f[5]), f[6] if len(f) > 6 else "measured")

    def cell(key, unit):
        if key not in got:
            return "-"
        v, how = got[key]
        s = f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 1 else f"{v:.3f}"
        return ("~" if how == "scaled" else "") + s + unit

    keys = sorted({(k[2], k[3]) for k in got}, key=lambda k: (int(k[1]), int(k[0])))
    for reg in ("java", "scala"):
        if not any(k[0] == reg for k in got):
            continue
        print(f"\n{reg}: before -> after")
        print("| rules | topics | parse | isObserver | 5 s re-read, unchanged | topic: rule edited "
              "| regex: rule edited |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for r, n in keys:
            row = [r, n]
            for m, unit in (("parse_ms", " ms"), ("isobs_ns", " ns"), ("snapshot_ms", " ms"), ("edit_ms", " ms"),
                            ("regex_edit_ms", " ms")):
                row.append(f"{cell((reg, 'before', r, n, m), unit)} → {cell((reg, 'after', r, n, m), unit)}")
            print("| " + " | ".join(row) + " |")
    if any(k[0] == "okp" for k in got):
        print("\nokp")
        print("| rules | topics | parse | every topic, linear scan | every topic, index (first pass) "
              "| every topic, index | one topic, index |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for r, n in keys:
            row = [r, n] + [cell(("okp", "-", r, n, m), u) for m, u in
                            (("parse_ms", " ms"), ("pass_linear_ms", " ms"), ("first_pass_ms", " ms"),
                             ("pass_index_ms", " ms"), ("decide_ns", " ns"))]
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    sys.exit(main())
