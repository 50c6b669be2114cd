#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The okp authors
#
# Compiles our two observer identity files with the real compilers of the Kafka lines we patch and
# runs ObserverIdsContractTest against both. Needs only a JDK (17 here), Maven and Maven Central;
# jars are resolved with `mvn dependency:copy`, so they are cached in ~/.m2 after the first run.
#
#   SCALA_BUILDS       scala-version:kafka-artifact:kafka-version triples; the Scala file is
#                      compiled with that scalac against that Kafka jar, then the test runs on
#                      that scala-library. Default: the oldest and newest Scala of each of the
#                      2.12 and 2.13 lines used by Kafka 2.7-4.3.
#   METADATA_VERSIONS  kafka-metadata versions the Java file is compiled against (--release 8).
#   OKP_WORK           work directory (default: a fresh temp dir, removed at exit).
#   MVN                Maven command (default: mvn -q -B); add -o to run from ~/.m2 only.
#   OKP_DIFF_CASES     a file of generated observer.ids cases with okp's verdicts (written by
#                      tests/it/observer_ids_contract.rs from src/observers/differential.rs): each
#                      Scala build and the Java side must give okp's verdict on every case, and
#                      java.util.regex must agree on every pattern they accept
#                      (ObserverIdsDifferential.java). Unset: that part is skipped.
#
# Exit status: 0 all green, 1 a compile step or contract check failed, 3 Maven could not resolve.
set -euo pipefail

SCALA_BUILDS=${SCALA_BUILDS:-"2.12.12:kafka_2.12:2.7.2 2.12.19:kafka_2.12:3.9.1 2.13.3:kafka_2.13:2.7.2 2.13.18:kafka_2.13:4.3.1"}
METADATA_VERSIONS=${METADATA_VERSIONS:-"2.8.2 3.7.2 4.3.1"}
# The oldest slf4j any target ships (Kafka 2.7) to compile against; the test runs on a newer one.
SLF4J_COMPILE=1.7.30
SLF4J_RUN=1.7.36
MVN=${MVN:-mvn -q -B}

here=$(cd "$(dirname "$0")" && pwd)
patches=$(dirname "$here")
scala_src=$patches/common/core/src/main/scala/kafka/observer/ObserverIds.scala
java_src=$patches/common/metadata/src/main/java/org/apache/kafka/controller/ObserverReplicas.java
test_src=$here/ObserverIdsContractTest.java
diff_src=$here/ObserverIdsDifferential.java

bin=${JAVA_HOME:+$JAVA_HOME/bin/}
if [ -n "${OKP_WORK:-}" ]; then
    work=$OKP_WORK
    mkdir -p "$work"
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/okp-contract.XXXXXX")
    trap 'rm -rf "$work"' EXIT
fi
jars=$work/jars
mkdir -p "$jars"

# jar GROUP:ARTIFACT:VERSION -> path of that jar in $jars, fetched once.
jar() {
    local g a v
    IFS=: read -r g a v <<<"$1"
    local f=$jars/$a-$v.jar
    if [ ! -f "$f" ]; then
        if ! $MVN dependency:copy -Dartifact="$1" -DoutputDirectory="$jars" >"$work/mvn.log" 2>&1; then
            cat "$work/mvn.log" >&2
            echo "error: Maven could not resolve $1" >&2
            exit 3
        fi
    fi
    echo "$f"
}

passed=0
failed=0
skipped=0
fail_step() {
    echo "FAIL $1"
    failed=$((failed + 1))
}
# count_run STATUS LOG WHAT: add the test's closing "N passed, M failed, K skipped" to the totals.
count_run() {
    local counts reported_failed=0
    counts=$(tail -n 1 "$2")
    if [[ $counts =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
        passed=$((passed + BASH_REMATCH[1]))
        failed=$((failed + BASH_REMATCH[2]))
        skipped=$((skipped + BASH_REMATCH[3]))
        reported_failed=${BASH_REMATCH[2]}
    fi
    # A crash, or a run that counted nothing, must still fail the script.
    if [ "$1" -ne 0 ] && [ "$reported_failed" -eq 0 ]; then
        fail_step "$3 exited $1"
    fi
}

echo "== javac $("${bin}javac" -version 2>&1 | awk '{print $2}') --release 8: ObserverReplicas.java"
slf4j_compile=$(jar org.slf4j:slf4j-api:$SLF4J_COMPILE)
java_out=
clients_run=
for mv in $METADATA_VERSIONS; do
    out=$work/java-$mv
    mkdir -p "$out"
    # -Xlint:all -Werror because several Kafka releases build their Java modules with -Werror.
    if "${bin}javac" --release 8 -Xlint:all -Werror -encoding UTF-8 \
        -cp "$(jar org.apache.kafka:kafka-metadata:$mv):$(jar org.apache.kafka:kafka-clients:$mv):$slf4j_compile" \
        -d "$out" "$java_src"; then
        echo "ok   compiles against kafka-metadata $mv"
        passed=$((passed + 1))
        java_out=${java_out:-$out}
        # org.apache.kafka.common.Uuid (topic ids) is in the clients jar of the same release.
        clients_run=${clients_run:-$(jar org.apache.kafka:kafka-clients:$mv)}
    else
        fail_step "compile against kafka-metadata $mv"
    fi
done

for build in $SCALA_BUILDS; do
    IFS=: read -r sv kafka_artifact kv <<<"$build"
    echo "== scalac $sv (kafka $kafka_artifact $kv): ObserverIds.scala"
    lib=$(jar org.scala-lang:scala-library:$sv)
    compiler_cp=$(jar org.scala-lang:scala-compiler:$sv):$lib:$(jar org.scala-lang:scala-reflect:$sv)
    scala_out=$work/scala-$sv
    test_out=$work/test-$sv
    mkdir -p "$scala_out" "$test_out"
    # -Xfatal-warnings with -Xlint: a warning in one Scala line must not hide until a Kafka build.
    if ! "${bin}java" -cp "$compiler_cp" scala.tools.nsc.Main \
        -deprecation -unchecked -feature -Xlint -Xfatal-warnings -encoding UTF-8 \
        -cp "$(jar org.apache.kafka:$kafka_artifact:$kv):$slf4j_compile:$lib" -d "$scala_out" "$scala_src"; then
        fail_step "scalac $sv"
        continue
    fi
    echo "ok   compiles with scalac $sv"
    passed=$((passed + 1))
    if [ -z "$java_out" ]; then
        fail_step "contract test on scala $sv (no compiled ObserverReplicas)"
        continue
    fi
    run_cp=$scala_out:$java_out:$clients_run:$lib:$(jar org.slf4j:slf4j-api:$SLF4J_RUN):$(jar org.slf4j:slf4j-simple:$SLF4J_RUN)
    if ! "${bin}javac" -encoding UTF-8 -cp "$run_cp" -d "$test_out" "$test_src" "$diff_src"; then
        fail_step "compile ObserverIdsContractTest for scala $sv"
        continue
    fi
    echo "== contract test, scala-library $sv"
    set +e
    "${bin}java" -cp "$test_out:$run_cp" org.apache.kafka.controller.ObserverIdsContractTest | tee "$work/test-$sv.log"
    status=${PIPESTATUS[0]}
    set -e
    count_run "$status" "$work/test-$sv.log" "contract test on scala $sv"
    if [ -n "${OKP_DIFF_CASES:-}" ]; then
        echo "== differential test, scala-library $sv: $OKP_DIFF_CASES"
        set +e
        "${bin}java" -cp "$test_out:$run_cp" org.apache.kafka.controller.ObserverIdsDifferential "$OKP_DIFF_CASES" \
            | tee "$work/diff-$sv.log"
        status=${PIPESTATUS[0]}
        set -e
        count_run "$status" "$work/diff-$sv.log" "differential test on scala $sv"
    else
        echo "skip differential test (OKP_DIFF_CASES unset)"
        skipped=$((skipped + 1))
    fi
    last_cp=$test_out:$run_cp
done

# Root reads files whatever their mode, so as root the chmod 000 case skips itself. Run the last
# build once more as the unprivileged user nobody, from a world-readable copy, so that case runs.
if [ "$(id -u)" -eq 0 ] && [ -n "${last_cp:-}" ] && command -v runuser >/dev/null && id nobody >/dev/null 2>&1; then
    echo "== contract test as user nobody (permission cases)"
    shared=$(mktemp -d "${TMPDIR:-/tmp}/okp-contract-nobody.XXXXXX")
    nobody_cp=
    IFS=: read -r -a parts <<<"$last_cp"
    for i in "${!parts[@]}"; do
        cp -r "${parts[$i]}" "$shared/$i"
        nobody_cp=${nobody_cp:+$nobody_cp:}$shared/$i
    done
    chmod -R a+rX "$shared"
    set +e
    (cd "$shared" && runuser -u nobody -- env TMPDIR=/tmp "${bin}java" -Djava.io.tmpdir=/tmp -cp "$nobody_cp" \
        org.apache.kafka.controller.ObserverIdsContractTest) | tee "$work/test-nobody.log"
    status=${PIPESTATUS[0]}
    set -e
    rm -rf "$shared"
    count_run "$status" "$work/test-nobody.log" "contract test as nobody"
fi

echo "observer-ids: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] || exit 1
