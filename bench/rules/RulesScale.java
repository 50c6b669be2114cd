// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The okp authors
package org.apache.kafka.controller;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The registries' topic rules at scale, for docs/benchmarks.md ("Rules at scale"), driven by
 * bench/rules_scale.py: {@code java ... RulesScale INPUTS BUILD} reads the inputs the script wrote
 * ({@code rules-R.ids}, {@code topics-N.txt}) and runs the KRaft controller's registry
 * (ObserverReplicas.Cache) and the broker's (kafka.observer.ObserverIdCache) through them, as
 * compiled from BUILD's sources (before or after the rule index: only API both have is used).
 * One tab-separated line per measure: {@code REGISTRY BUILD R N MEASURE VALUE HOW}, VALUE the
 * median of 5 runs after a warm-up, HOW {@code measured}, or {@code scaled} when a run over every
 * topic would take over 2 s and it was timed on the first 2000 names and scaled to N.
 *
 * <p>Measures, each through the registry's public path (a real file, a fake clock):
 * {@code parse_ms} reading the file's rules; {@code isobs_ns} one isObserver(topic, id) while the
 * snapshot is fresh (every hook's call), over the first 20000 names; {@code snapshot_ms} a re-read
 * of the unchanged file 5 s later and isObserver for every topic (what each 5 s costs);
 * {@code edit_ms} the same after an edit that adds or removes a {@code topic:} rule (what okp's
 * promote, demote and place write); {@code regex_edit_ms} the same after an edit that adds or
 * removes a {@code regex:} rule.
 */
public final class RulesScale {
    private static final int RUNS = 5;
    private static final int SAMPLE = 2000;
    private static final double BUDGET_MS = 2000;
    private static final int CALLS_OVER = 20000;

    interface Registry {
        boolean isObserver(String topic, int id);
    }

    private RulesScale() {
    }

    public static void main(String[] args) throws Exception {
        Path inputs = Paths.get(args[0]);
        String build = args[1];
        Path file = Files.createTempFile("rules-scale", ".ids");
        try {
            // One throwaway round first, so the first pair measured is not the one the JIT warms on.
            List<Integer> ns = numbered(inputs, "topics-");
            List<Integer> rs = numbered(inputs, "rules-");
            String[] warm = Files.readAllLines(inputs.resolve("topics-" + ns.get(0) + ".txt"),
                StandardCharsets.US_ASCII).toArray(new String[0]);
            String warmRules = new String(Files.readAllBytes(inputs.resolve("rules-" + rs.get(0) + ".ids")),
                StandardCharsets.ISO_8859_1);
            for (String registry : new String[] {"java", "scala"}) {
                run(registry, build, rs.get(0), warm, warmRules, file, false);
            }
            for (int n : ns) {
                String[] topics = Files.readAllLines(inputs.resolve("topics-" + n + ".txt"), StandardCharsets.US_ASCII)
                    .toArray(new String[0]);
                for (int r : numbered(inputs, "rules-")) {
                    String text = new String(Files.readAllBytes(inputs.resolve("rules-" + r + ".ids")),
                        StandardCharsets.ISO_8859_1);
                    for (String registry : new String[] {"java", "scala"}) {
                        run(registry, build, r, topics, text, file, true);
                    }
                }
            }
        } finally {
            Files.deleteIfExists(file);
        }
    }

    private static void run(String registry, String build, int r, String[] topics, String text, Path file,
                            boolean shown) throws Exception {
        String prefix = registry + "\t" + build + "\t" + r + "\t" + topics.length + "\t";
        java.io.PrintStream out = shown ? System.out : new java.io.PrintStream(new java.io.ByteArrayOutputStream());
        double[] parse = new double[RUNS + 1];
        for (int i = 0; i <= RUNS; i++) {
            long t0 = System.nanoTime();
            parse(registry, text);
            parse[i] = (System.nanoTime() - t0) / 1e6;
        }
        out.println(prefix + "parse_ms\t" + fmt(median(parse, 1)) + "\tmeasured");

        Files.write(file, text.getBytes(StandardCharsets.ISO_8859_1));
        AtomicLong clock = new AtomicLong(1);
        Registry reg = registry(registry, file, clock);
        // Warm: the snapshot read and every topic decided (the first CALLS_OVER of them: deciding
        // 100k names by a 10k-rule scan takes minutes before the index).
        String[] some = Arrays.copyOf(topics, Math.min(CALLS_OVER, topics.length));
        for (String t : some) {
            reg.isObserver(t, 1);
        }
        // Each run at least 2 million calls, so a run is long against the timer and the GC.
        int passes = Math.max(1, 2_000_000 / some.length);
        double[] calls = new double[RUNS + 1];
        for (int i = 0; i <= RUNS; i++) {
            long t0 = System.nanoTime();
            for (int p = 0; p < passes; p++) {
                for (String t : some) {
                    reg.isObserver(t, 1);
                }
            }
            calls[i] = (System.nanoTime() - t0) / (double) some.length / passes;
        }
        out.println(prefix + "isobs_ns\t" + fmt(median(calls, 1)) + "\tmeasured");

        // Each run: 5 s later (a new snapshot), then every topic asked. Timed on a sample when a run
        // over every topic would blow the budget.
        String[] measures = {"snapshot_ms", "edit_ms", "regex_edit_ms"};
        String[] edits = {null, "topic:rules-scale-edit observers=9\n", "regex:rules-scale-edit-.* observers=9\n"};
        for (int m = 0; m < measures.length; m++) {
            boolean editing = edits[m] != null;
            String edited = editing ? text + edits[m] : text;
            int count = topics.length;
            double estimate = snapshot(reg, clock, topics, Math.min(SAMPLE, count), editing, file, text, edited);
            int asked = estimate * count / Math.min(SAMPLE, count) > BUDGET_MS ? Math.min(SAMPLE, count) : count;
            double[] runs = new double[RUNS];
            for (int i = 0; i < RUNS; i++) {
                runs[i] = snapshot(reg, clock, topics, asked, editing, file, text, edited);
            }
            double ms = median(runs, 0);
            // The read itself is not scaled: only the per-topic part grows with N.
            double read = snapshot(reg, clock, topics, 0, editing, file, text, edited);
            double total = asked == count ? ms : read + (ms - read) * count / asked;
            out.println(prefix + measures[m] + "\t" + fmt(total) + "\t"
                + (asked == count ? "measured" : "scaled"));
        }
    }

    // One snapshot: the clock 5 s on (and the file edited back and forth when `editing`), the
    // read, then the first `asked` topics asked; returns ms.
    private static double snapshot(Registry reg, AtomicLong clock, String[] topics, int asked, boolean editing,
                                   Path file, String text, String edited) throws Exception {
        if (editing) {
            byte[] now = Files.readAllBytes(file);
            String next = new String(now, StandardCharsets.ISO_8859_1).equals(text) ? edited : text;
            Files.write(file, next.getBytes(StandardCharsets.ISO_8859_1));
        }
        clock.addAndGet(ObserverReplicas.TTL_NANOS + 1);
        long t0 = System.nanoTime();
        reg.isObserver(null, 1);
        for (int i = 0; i < asked; i++) {
            reg.isObserver(topics[i], 1);
        }
        return (System.nanoTime() - t0) / 1e6;
    }

    private static Registry registry(String which, Path file, AtomicLong clock) {
        java.util.function.Function<String, String> env =
            name -> name.equals(ObserverReplicas.FILE_ENV) ? file.toString() : null;
        java.util.function.LongSupplier nanoTime = clock::get;
        if (which.equals("java")) {
            ObserverReplicas.Cache cache = new ObserverReplicas.Cache(env, nanoTime);
            return cache::isObserver;
        }
        kafka.observer.ObserverIdCache cache = new kafka.observer.ObserverIdCache(env, nanoTime);
        return cache::isObserver;
    }

    private static Object parse(String which, String text) throws Exception {
        return which.equals("java") ? ObserverReplicas.parseFile(text)
            : kafka.observer.ObserverIdCache$.MODULE$.parseFile(text);
    }

    private static List<Integer> numbered(Path dir, String stem) throws Exception {
        List<Integer> out = new ArrayList<>();
        try (java.util.stream.Stream<Path> files = Files.list(dir)) {
            files.map(p -> p.getFileName().toString()).filter(f -> f.startsWith(stem))
                .forEach(f -> out.add(Integer.parseInt(f.substring(stem.length(), f.indexOf('.')))));
        }
        out.sort(null);
        return out;
    }

    private static double median(double[] values, int skip) {
        double[] kept = Arrays.copyOfRange(values, skip, values.length);
        Arrays.sort(kept);
        return kept[kept.length / 2];
    }

    private static String fmt(double v) {
        return String.format(java.util.Locale.ROOT, "%.4f", v);
    }
}
