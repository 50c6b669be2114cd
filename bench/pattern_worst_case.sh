#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The okp authors
#
# Benchmark: the worst `regex:` rules against a topic name of the longest length Kafka allows (249),
# before (java.util.regex, which the registries used until 2026-12-05) and after (the registries'
# own pattern engine, ObserverReplicas.TopicPattern; the Scala copy is the same code). Each
# java.util.regex match runs in a thread given LIMIT seconds; the engine's time is the mean of 1000
# matches. Not a test: nothing here asserts a time; the numbers go to docs/benchmarks.md.
#
#   bash bench/pattern_worst_case.sh [LIMIT_SECONDS] > evidence/bench/patterns/worst-case.txt
#
# Needs what patches/tests/run-contract-test.sh needs (a JDK, Maven, ~/.m2 or Maven Central).
set -euo pipefail
limit=${1:-30}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/okp-pattern-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Compile both registries and the harness exactly as the contract test does (newest Scala only).
SCALA_BUILDS="2.13.18:kafka_2.13:4.3.1" METADATA_VERSIONS="4.3.1" OKP_WORK="$work" \
    bash "$here/patches/tests/run-contract-test.sh" >"$work/contract.log" 2>&1 || {
    cat "$work/contract.log" >&2
    exit 1
}
cp=$work/test-2.13.18:$work/scala-2.13.18:$work/java-4.3.1
for j in "$work"/jars/*.jar; do cp=$cp:$j; done
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(java -version 2>&1 | head -1); $(nproc) cores; limit ${limit} s per java.util.regex match"
for case in '(.*a){12}x:249' '(.*a){12}x:45' '(.*a){12}x:30' '(a|aa)*b:249' '(a|aa)*b:40' '(a*)*b:249' '(a*)*b:30' \
    '((a+)+)+b:249' '(x+x+)+y:249' '[a-z]{1,249}x:249' '(.*.*){20}b:249' 'orders-.*:249' \
    "$(printf '.{0,249}%.0s' 1 2 3 4 5 6 7 8 9 10)x:249" '(a?){249}(a?){249}(a?){249}(a?){249}(a?){249}(a?){249}(a?){249}(a?){249}(a?){249}(a?){249}x:249'; do
    pattern=${case%:*}
    length=${case##*:}
    java -cp "$cp" org.apache.kafka.controller.ObserverIdsDifferential --bench "$pattern" "$length" "$limit"
done
