#!/usr/bin/env python3
"""Benchmark: what `kafka.observer.ObserverIds.isObserver(id)` costs per call, the check every hook
site makes (ISR expansion, the high-watermark computation on every follower fetch, the ISR shrink
scan, the controllers' elections), next to a Scala immutable Set's contains, a java.util.HashSet's
contains and a plain int comparison (bench/isobserver/IsObserverBench.java).

One JVM per observer configuration, because the registry reads its environment once:
  none  no observer file and no KAFKA_OBSERVER_BROKER_IDS (a patched broker without observers)
  file  an observer file naming broker 4 (a broker with an observer; the file is re-read every 5 s)
  env   KAFKA_OBSERVER_BROKER_IDS=4 and no file
  rules the file naming 4 plus three topic rules (exact, prefix, regex); the probe's topics are
        mostly one no rule names (`orders`), as a broker's produced topic would be
  racks the same three rules with rack items (`rack:dr`, `rack:west,7`), twelve brokers' racks
        told to the registry first (ObserverIds.brokerRack, as the metadata hooks do)

    cargo build --release && python3 bench/is_observer.py [--pair 3.9.2-zk] [--jars DIR] [--rounds 15] [--calls 20000000]

--jars: a directory `okp build` wrote (default: one built now into a temporary directory). The
Scala library and slf4j-api are the versions the release's kafka_2.13 POM names, from the local
Maven repository (fetched with mvn when absent). Not a test: nothing here asserts a time.
"""
import argparse, glob, json, os, re, shutil, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OKP = os.environ.get("OKP", os.path.join(ROOT, "target", "release", "okp"))
M2 = os.path.expanduser("~/.m2/repository")
SRC = os.path.join(ROOT, "bench", "isobserver", "IsObserverBench.java")


def m2_jar(group, artifact, version):
    path = os.path.join(M2, *group.split("."), artifact, version, f"{artifact}-{version}.jar")
    if not os.path.isfile(path):
        subprocess.run(["mvn", "-q", "dependency:get", f"-Dartifact={group}:{artifact}:{version}", "-Dtransitive=false"],
                       check=True)
    return path


def pom_version(version, artifact):
    pom = os.path.join(M2, "org", "apache", "kafka", "kafka_2.13", version, f"kafka_2.13-{version}.pom")
    if not os.path.isfile(pom):
        m2_jar("org.apache.kafka", "kafka_2.13", version)
    text = open(pom).read()
    m = re.search(r"<artifactId>%s</artifactId>\s*<version>([^<]+)</version>" % re.escape(artifact), text)
    if not m:
        sys.exit(f"{pom}: no {artifact} version")
    return m.group(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pair", default="3.9.2-zk")
    ap.add_argument("--jars")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=20_000_000)
    ap.add_argument("--java", default=shutil.which("java"))
    args = ap.parse_args()
    version, mode = args.pair.rsplit("-", 1)
    tmp = tempfile.mkdtemp(prefix="okp-isobserver-")
    try:
        jars = args.jars
        if not jars:
            jars = os.path.join(tmp, "build")
            subprocess.run([OKP, "build", "--version", version, "--mode", mode, "--out", jars], check=True,
                           capture_output=True)
        kafka = glob.glob(os.path.join(jars, f"kafka_2.13-{version}.jar"))
        if not kafka:
            sys.exit(f"{jars}: no kafka_2.13-{version}.jar")
        cp = [kafka[0], m2_jar("org.scala-lang", "scala-library", pom_version(version, "scala-library")),
              m2_jar("org.slf4j", "slf4j-api", pom_version(version, "slf4j-api"))]
        classes = os.path.join(tmp, "classes")
        os.makedirs(classes)
        subprocess.run(["javac", "-d", classes, "-cp", os.pathsep.join(cp), SRC], check=True)
        obs = os.path.join(tmp, "observer.ids")
        with open(obs, "w") as f:
            f.write("4\n")
        ruled = os.path.join(tmp, "rules.ids")
        with open(ruled, "w") as f:
            f.write("4\ntopic:audit observers=7\nprefix:ledger observers=none\nregex:tmp-.* observers=5\n")
        racked = os.path.join(tmp, "racks.ids")
        with open(racked, "w") as f:
            f.write("4\ntopic:audit observers=rack:dr\nprefix:ledger observers=rack:west,7\nregex:tmp-.* observers=5\n")
        configs = {
            "none": {"KAFKA_OBSERVER_IDS_FILE": os.path.join(tmp, "absent.ids")},
            "file": {"KAFKA_OBSERVER_IDS_FILE": obs},
            "env": {"KAFKA_OBSERVER_IDS_FILE": os.path.join(tmp, "absent.ids"), "KAFKA_OBSERVER_BROKER_IDS": "4"},
            "rules": {"KAFKA_OBSERVER_IDS_FILE": ruled},
            "racks": {"KAFKA_OBSERVER_IDS_FILE": racked, "OKP_BENCH_RACKS": "1"},
        }
        java_version = subprocess.run([args.java, "-version"], capture_output=True, text=True).stderr.splitlines()[0]
        print(f"isObserver on {version} {mode} patched jars ({kafka[0]}); {java_version}; "
              f"{args.rounds} rounds x {args.calls} calls per probe, each probe twice")
        print(f"{'config':<6} {'probe':<24} {'ns/call median':>15} {'min':>8} {'max':>8} {'bytes/call':>11}")
        for name, env_add in configs.items():
            env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_OBSERVER")}
            env.update(env_add)
            out = subprocess.run([args.java, "-Xmx256m", "-XX:+UseSerialGC", "-cp", os.pathsep.join(cp + [classes]),
                                  "IsObserverBench", str(args.rounds), str(args.calls)],
                                 check=True, capture_output=True, text=True, env=env).stdout
            for line in out.splitlines():
                r = json.loads(line)
                if "probe" in r:
                    print(f"{name:<6} {r['probe']:<24} {r['ns_median']:>15.2f} {r['ns_min']:>8.2f} {r['ns_max']:>8.2f} "
                          f"{r['bytes_per_call']:>11.3f}")
                else:
                    print(f"{name:<6} observers in force: {r['observers']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
