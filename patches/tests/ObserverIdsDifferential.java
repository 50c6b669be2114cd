// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The okp authors
package org.apache.kafka.controller;

import java.io.BufferedReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * The differential test of observer.ids: every case okp generated (src/observers/differential.rs)
 * read by the broker's ObserverIds (Scala) and the controller's ObserverReplicas (Java) must give
 * okp's own verdict, byte for byte, and every pattern of a one-rule case that they accept must match
 * the topics java.util.regex matches. A case line: the file's bytes (hex), the topics, okp's verdict
 * (hex), the rule's pattern (hex) or "-", separated by tabs.
 *
 * <p>The rule index: on every case, and on generated rule sets of up to 300 rules of the three kinds
 * ({@link #indexAgainstScan}), each registry's {@code TopicRules.resolve} (the exact-name map, the
 * prefix trie, the per-topic regex decision) must pick the very rule its {@code resolveLinear},
 * the scan it replaced, picks, asked once and again (the second answer comes from the decision),
 * and so must the rules of an edit that kept those decisions (the regexes unchanged) or must not
 * (a regex added).
 *
 * <p>{@code java ... ObserverIdsDifferential CASES} prints every disagreement (the first 20 in
 * full) and ends with "N passed, M failed, 0 skipped"; exit 0 only when nothing differs.
 * {@code java ... ObserverIdsDifferential --bench PATTERN NAME_LENGTH SECONDS} times one match of
 * PATTERN against a name of NAME_LENGTH 'a's with java.util.regex (in a thread given SECONDS) and
 * with the registries' engine, for docs/benchmarks.md.
 */
public final class ObserverIdsDifferential {
    private static int shownFailures;
    private static int gaveUp;

    /** The most characters java.util.regex may read for one name before the oracle gives up on it. */
    private static final long ORACLE_STEPS = 2_000_000;

    /** A name that stops java.util.regex once it has read too many characters (it backtracks). */
    private static final class Bounded implements CharSequence {
        private final String s;
        private long reads;

        Bounded(String s) {
            this.s = s;
        }

        public char charAt(int i) {
            if (++reads > ORACLE_STEPS) {
                throw new IllegalStateException("gave up");
            }
            return s.charAt(i);
        }

        public int length() {
            return s.length();
        }

        public CharSequence subSequence(int from, int to) {
            return s.subSequence(from, to);
        }

        @Override
        public String toString() {
            return s;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 4 && args[0].equals("--bench")) {
            bench(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            return;
        }
        int passed = 0;
        int failed = 0;
        int files = 0;
        int accepted = 0;
        try (BufferedReader in = Files.newBufferedReader(Paths.get(args[0]), StandardCharsets.US_ASCII)) {
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.split("\t", -1);
                String text = unhex(f[0]);
                String[] topics = f[1].split(",", -1);
                String want = unhex(f[2]);
                files++;
                String scala = scalaVerdict(text, topics);
                String java = javaVerdict(text, topics);
                if (check(indexAgrees(text, topics), "rule index", text, "the scan's rules", "another")) {
                    passed++;
                } else {
                    failed++;
                }
                if (check(scala.equals(want), "scala", text, want, scala)) {
                    passed++;
                } else {
                    failed++;
                }
                if (check(java.equals(want), "java", text, want, java)) {
                    passed++;
                } else {
                    failed++;
                }
                if (!f[3].equals("-") && !want.startsWith("malformed:")) {
                    accepted++;
                    String oracle = oracleVerdict(unhex(f[3]), topics);
                    String ours = want.substring(want.indexOf(";rules=") + 1);
                    ours = ours.substring(ours.indexOf(';') + 1);
                    if (check(agrees(ours, oracle), "java.util.regex", text, ours, oracle)) {
                        passed++;
                    } else {
                        failed++;
                    }
                }
            }
        }
        System.out.println("differential: " + files + " files, " + accepted
            + " one-rule patterns accepted and held to java.util.regex (which gave up on " + gaveUp
            + " names after " + ORACLE_STEPS + " character reads: backtracking)");
        int[] index = indexAgainstScan(48, 400);
        passed += index[0];
        failed += index[1];
        System.out.println(passed + " passed, " + failed + " failed, 0 skipped");
        System.exit(failed == 0 && passed > 0 ? 0 : 1);
    }

    // Equal, a name the oracle gave up on ("?") agreeing with either answer.
    private static boolean agrees(String ours, String oracle) {
        String[] a = ours.split(";", -1);
        String[] b = oracle.split(";", -1);
        if (a.length != b.length) {
            return false;
        }
        for (int i = 0; i < a.length; i++) {
            if (!a[i].equals(b[i]) && !(b[i].endsWith("=?") && a[i].startsWith(b[i].substring(0, b[i].length() - 1)))) {
                return false;
            }
        }
        return true;
    }

    private static boolean check(boolean ok, String who, String text, String want, String got) {
        if (!ok && shownFailures++ < 20) {
            System.out.println("FAIL " + who + " on " + escaped(text) + "\n     want " + escaped(want)
                + "\n     got  " + escaped(got));
        }
        return ok;
    }

    private static String escaped(String s) {
        StringBuilder out = new StringBuilder();
        for (char c : s.toCharArray()) {
            if (c >= ' ' && c <= '~') {
                out.append(c);
            } else {
                out.append(String.format(java.util.Locale.ROOT, "\\x%02x", (int) c));
            }
        }
        return out.toString();
    }

    static String unhex(String hex) {
        byte[] bytes = new byte[hex.length() / 2];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return new String(bytes, StandardCharsets.ISO_8859_1);
    }

    private static String list(Iterable<Integer> ids, Iterable<String> racks) {
        StringBuilder out = new StringBuilder();
        for (Integer id : new TreeSet<Integer>(toList(ids))) {
            out.append(out.length() > 0 ? "," : "").append(id);
        }
        for (String rack : new TreeSet<String>(toList(racks))) {
            out.append(out.length() > 0 ? "," : "").append("rack:").append(rack);
        }
        return out.length() == 0 ? "none" : out.toString();
    }

    private static <T> List<T> toList(Iterable<T> items) {
        List<T> out = new ArrayList<>();
        for (T t : items) {
            out.add(t);
        }
        return out;
    }

    private static String ids(Iterable<Integer> ids) {
        StringBuilder out = new StringBuilder();
        for (Integer id : new TreeSet<Integer>(toList(ids))) {
            out.append(out.length() > 0 ? "," : "").append(id);
        }
        return out.toString();
    }

    static String javaVerdict(String text, String[] topics) {
        ObserverReplicas.Parsed parsed;
        try {
            parsed = ObserverReplicas.parseFile(text);
        } catch (ObserverReplicas.MalformedRule e) {
            return "malformed:" + e.getMessage();
        }
        StringBuilder out = new StringBuilder("ids=" + ids(parsed.ids) + ";rules=" + parsed.rules.shown);
        for (String t : topics) {
            ObserverReplicas.Spec spec = parsed.rules.resolve(t);
            out.append(';').append(t).append('=').append(spec == null ? "-" : list(spec.ids, spec.racks));
        }
        return out.toString();
    }

    @SuppressWarnings("unchecked")
    static String scalaVerdict(String text, String[] topics) {
        scala.Tuple2<scala.collection.immutable.Set<Object>, kafka.observer.ObserverIdCache.TopicRules> parsed;
        try {
            parsed = kafka.observer.ObserverIdCache$.MODULE$.parseFile(text);
        } catch (Exception e) {
            // Scala declares no checked exceptions: javac cannot be told MalformedRule is thrown.
            if (!(e instanceof kafka.observer.ObserverIdCache.MalformedRule)) {
                throw new IllegalStateException(e);
            }
            return "malformed:" + e.getMessage();
        }
        StringBuilder out = new StringBuilder("ids=" + ids(ints(parsed._1())) + ";rules=" + parsed._2().shown());
        for (String t : topics) {
            scala.Option<kafka.observer.ObserverIdCache.Spec> spec = parsed._2().resolve(t);
            out.append(';').append(t).append('=');
            if (spec.isEmpty()) {
                out.append('-');
            } else {
                out.append(list(ints(spec.get().ids()), strings(spec.get().racks())));
            }
        }
        return out.toString();
    }

    private static List<Integer> ints(scala.collection.immutable.Set<Object> set) {
        List<Integer> out = new ArrayList<>();
        scala.collection.Iterator<Object> it = set.iterator();
        while (it.hasNext()) {
            out.add((Integer) it.next());
        }
        return out;
    }

    private static List<String> strings(scala.collection.immutable.Set<String> set) {
        List<String> out = new ArrayList<>();
        scala.collection.Iterator<String> it = set.iterator();
        while (it.hasNext()) {
            out.add(it.next());
        }
        return out;
    }

    // Whether both registries' index picks the rule their scan picks for each topic, asked twice,
    // and again after two edits (keepDecisionsOf). A file either refuses is not asked (its verdict
    // is checked above).
    static boolean indexAgrees(String text, String[] topics) {
        ObserverReplicas.TopicRules java;
        kafka.observer.ObserverIdCache.TopicRules scala;
        try {
            java = ObserverReplicas.parseFile(text).rules;
            scala = kafka.observer.ObserverIdCache$.MODULE$.parseFile(text)._2();
        } catch (Exception e) {
            return true;
        }
        if (!sameRules(java, scala, topics)) {
            return false;
        }
        // An edit that keeps the regexes keeps the decisions just made; one that adds a regex
        // (first, so it changes which regex is first for names starting with z) must not.
        for (String added : new String[] {"topic:zz-kept-9.q observers=7\n", "regex:z.* observers=8\n"}) {
            ObserverReplicas.TopicRules javaNext;
            kafka.observer.ObserverIdCache.TopicRules scalaNext;
            try {
                javaNext = ObserverReplicas.parseFile(added + text).rules;
                scalaNext = kafka.observer.ObserverIdCache$.MODULE$.parseFile(added + text)._2();
            } catch (Exception e) {
                return false;
            }
            javaNext.keepDecisionsOf(java);
            scalaNext.keepDecisionsOf(scala);
            if (!sameRules(javaNext, scalaNext, topics)) {
                return false;
            }
        }
        return true;
    }

    // resolve picks the rule resolveLinear picks, in both registries, asked twice.
    private static boolean sameRules(ObserverReplicas.TopicRules java, kafka.observer.ObserverIdCache.TopicRules scala,
                                     String[] topics) {
        for (int round = 0; round < 2; round++) {
            for (String t : topics) {
                if (java.resolve(t) != java.resolveLinear(t)) {
                    return false;
                }
                scala.Option<kafka.observer.ObserverIdCache.Spec> a = scala.resolve(t);
                scala.Option<kafka.observer.ObserverIdCache.Spec> b = scala.resolveLinear(t);
                if (a.isDefined() != b.isDefined() || (a.isDefined() && a.get() != b.get())) {
                    return false;
                }
            }
        }
        return true;
    }

    private static final String CHARS = "abcxy01._-";
    private static final String[] PARTS = {"a", "b", "x", ".", "\\.", "\\d", "\\w", "[a-c]", "[^a]", "-", "_"};
    private static final String[] QUANTS = {"", "*", "+", "?", "{1,2}"};

    private static String word(java.util.Random r, int max) {
        StringBuilder out = new StringBuilder();
        for (int i = 0, n = 1 + r.nextInt(max); i < n; i++) {
            out.append(CHARS.charAt(r.nextInt(CHARS.length())));
        }
        return out.toString();
    }

    // The property test of the index: `files` generated rule sets (exact names, prefixes and
    // regexes over few characters, so they overlap), each asked about 80 names: half of them start
    // with a character no prefix has, some hold one outside Kafka's. Prints one line; returns
    // {passed, failed}.
    static int[] indexAgainstScan(long seed, int files) {
        java.util.Random r = new java.util.Random(seed);
        int passed = 0;
        int failed = 0;
        int names = 0;
        int ruled = 0;
        for (int f = 0; f < files; f++) {
            StringBuilder text = new StringBuilder();
            java.util.Set<String> seen = new java.util.HashSet<>();
            for (int i = 0, n = r.nextInt(301); i < n; i++) {
                String selector;
                int kind = r.nextInt(3);
                if (kind == 0) {
                    selector = "topic:" + word(r, 6);
                } else if (kind == 1) {
                    selector = "prefix:" + word(r, 4);
                } else {
                    StringBuilder p = new StringBuilder();
                    for (int k = 0, m = 1 + r.nextInt(4); k < m; k++) {
                        p.append(PARTS[r.nextInt(PARTS.length)]).append(QUANTS[r.nextInt(QUANTS.length)]);
                    }
                    selector = "regex:" + (r.nextInt(4) == 0 ? "(" + p + ")|" + word(r, 3) : p.toString());
                }
                if (seen.add(selector)) {
                    text.append(selector).append(" observers=").append(i % 50).append('\n');
                }
            }
            String[] topics = new String[80];
            for (int i = 0; i < topics.length; i++) {
                topics[i] = (r.nextBoolean() ? "" : "z") + word(r, 8) + (r.nextInt(20) == 0 ? "\u00e9" : "");
            }
            names += topics.length;
            try {
                ObserverReplicas.TopicRules rules = ObserverReplicas.parseFile(text.toString()).rules;
                for (String t : topics) {
                    ruled += rules.resolveLinear(t) != null ? 1 : 0;
                }
            } catch (ObserverReplicas.MalformedRule e) {
                failed++;
                System.out.println("FAIL a generated rule set is malformed: " + e.getMessage());
            }
            if (check(indexAgrees(text.toString(), topics), "rule index", text.toString(), "the scan's rules",
                "another")) {
                passed++;
            } else {
                failed++;
            }
        }
        System.out.println("index: " + files + " generated rule sets, " + names + " names (" + ruled
            + " with a rule): " + (failed == 0 ? "each decided by the index as by the scan, in both registries"
            : failed + " differ"));
        return new int[] {passed, failed};
    }

    // What java.util.regex says of a one-rule file `regex:P observers=1`: each topic 1 or -.
    static String oracleVerdict(String pattern, String[] topics) {
        java.util.regex.Pattern p;
        try {
            p = java.util.regex.Pattern.compile(pattern);
        } catch (java.util.regex.PatternSyntaxException e) {
            return "java.util.regex refuses it: " + e.getDescription();
        }
        StringBuilder out = new StringBuilder();
        for (String t : topics) {
            String verdict;
            try {
                verdict = p.matcher(new Bounded(t)).matches() ? "1" : "-";
            } catch (IllegalStateException e) {
                gaveUp++;
                verdict = "?";
            }
            out.append(out.length() > 0 ? ";" : "").append(t).append('=').append(verdict);
        }
        return out.toString();
    }

    private static void bench(String pattern, int length, int seconds) throws Exception {
        StringBuilder name = new StringBuilder();
        for (int i = 0; i < length; i++) {
            name.append('a');
        }
        String topic = name.toString();
        ObserverReplicas.TopicPattern ours = ObserverReplicas.TopicPattern.compile(pattern);
        long t0 = System.nanoTime();
        boolean mine = false;
        for (int i = 0; i < 1000; i++) {
            mine = ours.matches(topic);
        }
        long perMatch = (System.nanoTime() - t0) / 1000;
        final java.util.regex.Pattern theirs = java.util.regex.Pattern.compile(pattern);
        final long[] took = {-1};
        Thread t = new Thread(() -> {
            long s = System.nanoTime();
            theirs.matcher(topic).matches();
            took[0] = System.nanoTime() - s;
        });
        t.setDaemon(true);
        t.start();
        t.join(seconds * 1000L);
        String slow = took[0] < 0 ? "> " + seconds + " s (stopped)" : String.format(java.util.Locale.ROOT, "%.3f ms", took[0] / 1e6);
        System.out.println(pattern + " on " + length + " 'a's: java.util.regex " + slow + "; observer.ids engine "
            + String.format(java.util.Locale.ROOT, "%.3f ms", perMatch / 1e6) + " per match (" + mine + ")");
        System.exit(0);
    }
}
