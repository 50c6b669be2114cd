// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The okp authors
package org.apache.kafka.controller;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The observer identity contract, run through both implementations with the same cases: the
 * broker's kafka.observer.ObserverIds (Scala, core) and the controller's ObserverReplicas (Java,
 * metadata). It lives in the controller's package because ObserverReplicas.Cache is package-private.
 *
 * Plain main, no test framework: run-contract-test.sh compiles and runs it with the real Scala
 * compiler of each Kafka line and slf4j-simple, whose output (System.err) is captured so the
 * change and failure logs are asserted too, and asserted identical between the two sides. Every
 * OBSERVER AUDIT line is also checked against the documented format (docs/observer-ids.md): field
 * order, value grammar, added/removed consistent with before/after, epochMs the wall clock, and
 * registry=broker for the Scala side, registry=controller for the Java side.
 * Exit status 0 only if every check passed; the last line is "N passed, M failed, K skipped"
 * (skipped: a check this machine cannot run, e.g. chmod 000 when running as root).
 */
public final class ObserverIdsContractTest {
    private static final long SECOND = 1_000_000_000L;
    private static final String IDS_ENV = "KAFKA_OBSERVER_BROKER_IDS";
    private static final String FILE_ENV = "KAFKA_OBSERVER_IDS_FILE";

    // The audit line of docs/observer-ids.md, every field in its fixed place. Sets are sorted,
    // comma-separated, no spaces, so each value is one whitespace-free token.
    private static final String SET = "(\\[(?:[0-9]+(?:,[0-9]+)*)?\\])";
    private static final Pattern AUDIT = Pattern.compile("OBSERVER AUDIT registry=(broker|controller) node=- "
        + "event=(initial|change|freeze|unfreeze|racks) "
        + "source=(file:\\S+|env:KAFKA_OBSERVER_BROKER_IDS|none|frozen:(?:file-missing|unreadable|malformed)) "
        + "before=" + SET + " after=" + SET + " added=" + SET + " removed=" + SET + " epochMs=([0-9]+)"
        + "( rules=(?:\\[\\]|(?:topic|prefix|regex):\\S+))?"
        + "( racks=\\[[a-zA-Z0-9._/-]+:(?:none|[0-9]+(?:,[0-9]+)*)(?:;[a-zA-Z0-9._/-]+:(?:none|[0-9]+(?:,[0-9]+)*))*\\])?");

    private static final ByteArrayOutputStream CAPTURED = new ByteArrayOutputStream();
    private static int passed;
    private static int failed;
    private static int skipped;

    /** What the cases see of either implementation. */
    interface Registry {
        Set<Integer> current();

        boolean isObserver(int brokerId);

        /** The observers of one topic: its rule's, or the cluster-wide ids. */
        Set<Integer> observersOf(String topic);

        boolean isObserver(String topic, int brokerId);

        /** The KRaft controller's reassignment test; the Java side only. */
        default boolean containsAllButObservers(List<Integer> isr, List<Integer> replicas) {
            throw new UnsupportedOperationException("java only");
        }

        /** The replicas an election may pick (topic null: the union decides). */
        List<Integer> candidates(String topic, List<Integer> replicas);

        /** The first replica not observing the topic, or null when there is none. */
        Integer preferredReplica(String topic, List<Integer> replicas);

        /** A value that changes when the ids or the rules change. */
        Object version();

        /** This node learned broker {@code id}'s broker.rack (null: none set). */
        void brokerRack(int id, String rack);

        /** The KRaft controller's own helpers; the Java side only. */
        default ObserverReplicas.Cache javaCache() {
            throw new UnsupportedOperationException("java only");
        }
    }

    interface Maker {
        Registry make(Function<String, String> env, LongSupplier nanoTime);
    }

    interface Case {
        void run(Ctx c) throws Exception;
    }

    private static final String[] IMPLS = {"scala", "java"};

    private static Maker maker(String impl) {
        if (impl.equals("scala")) {
            return (env, clock) -> {
                kafka.observer.ObserverIdCache cache = new kafka.observer.ObserverIdCache(env, clock);
                return new Registry() {
                    public Set<Integer> current() {
                        return fromScala(cache.current());
                    }

                    public boolean isObserver(int id) {
                        return cache.isObserver(id);
                    }

                    public Set<Integer> observersOf(String topic) {
                        return fromScala(cache.observersOf(topic));
                    }

                    public boolean isObserver(String topic, int id) {
                        return cache.isObserver(topic, id);
                    }

                    public List<Integer> candidates(String topic, List<Integer> replicas) {
                        List<Integer> out = new ArrayList<>();
                        scala.collection.Iterator<Object> it =
                            cache.candidates(topic, toScala(replicas)).iterator();
                        while (it.hasNext()) {
                            out.add((Integer) it.next());
                        }
                        return out;
                    }

                    public Integer preferredReplica(String topic, List<Integer> replicas) {
                        scala.Option<Object> p = cache.preferredReplica(topic, toScala(replicas));
                        return p.isDefined() ? (Integer) p.get() : null;
                    }

                    public Object version() {
                        return cache.version();
                    }

                    public void brokerRack(int id, String rack) {
                        cache.brokerRack(id, rack);
                    }
                };
            };
        }
        return (env, clock) -> {
            ObserverReplicas.Cache cache = new ObserverReplicas.Cache(env, clock);
            return new Registry() {
                public Set<Integer> current() {
                    return cache.current();
                }

                public boolean isObserver(int id) {
                    return cache.isObserver(id);
                }

                public Set<Integer> observersOf(String topic) {
                    return cache.observersOf(topic);
                }

                public boolean isObserver(String topic, int id) {
                    return cache.isObserver(topic, id);
                }

                public boolean containsAllButObservers(List<Integer> isr, List<Integer> replicas) {
                    return cache.containsAllButObservers(isr, replicas);
                }

                public List<Integer> candidates(String topic, List<Integer> replicas) {
                    // The controller's candidates are the initial ISR's (all observers: kept whole)
                    // and the leader gate's; compare the gate, which never keeps an observer.
                    java.util.function.IntPredicate gate = cache.leaderGate(topic, id -> true);
                    List<Integer> out = new ArrayList<>();
                    for (Integer id : replicas) {
                        if (gate.test(id)) {
                            out.add(id);
                        }
                    }
                    return out;
                }

                public Integer preferredReplica(String topic, List<Integer> replicas) {
                    int[] r = new int[replicas.size()];
                    for (int i = 0; i < r.length; i++) {
                        r[i] = replicas.get(i);
                    }
                    int p = cache.preferredReplica(topic, r, -7);
                    return p == -7 ? null : p;
                }

                public Object version() {
                    return cache.version();
                }

                public void brokerRack(int id, String rack) {
                    cache.brokerRack(id, rack);
                }

                public ObserverReplicas.Cache javaCache() {
                    return cache;
                }
            };
        };
    }

    @SuppressWarnings("deprecation")
    private static scala.collection.Seq<Object> toScala(List<Integer> replicas) {
        return scala.collection.JavaConverters.asScalaBufferConverter(new ArrayList<Object>(replicas)).asScala();
    }

    private static Set<Integer> fromScala(scala.collection.immutable.Set<Object> ids) {
        Set<Integer> out = new HashSet<>();
        scala.collection.Iterator<Object> it = ids.iterator();
        while (it.hasNext()) {
            out.add((Integer) it.next());
        }
        return out;
    }

    /** One implementation running one case: its own directory, environment, clock and logs. */
    static final class Ctx {
        final String impl;
        final Path dir;
        final Map<String, String> env = new HashMap<>();
        // Start just below the top of the long range so every TTL case also crosses the nanoTime
        // wrap-around, which a wall-clock or "now > deadline" comparison would get wrong.
        final AtomicLong clock = new AtomicLong(Long.MAX_VALUE - 2 * SECOND);
        final List<String> logs = new ArrayList<>();
        final long startMs = System.currentTimeMillis();
        private final Maker maker;
        private int mark;
        Registry registry;
        // Run once inside the next clock read: another caller that gets in between this caller's
        // snapshot read and its clock read, as a second thread would.
        Runnable interleave;

        Ctx(String impl, Path dir) {
            this.impl = impl;
            this.maker = maker(impl);
            this.dir = dir;
            this.mark = CAPTURED.size();
        }

        Registry open() {
            registry = maker.make(env::get, this::tick);
            return registry;
        }

        Path write(String name, String content) throws IOException {
            return writeBytes(name, content.getBytes(StandardCharsets.ISO_8859_1));
        }

        Path writeBytes(String name, byte[] content) throws IOException {
            Path p = dir.resolve(name);
            Files.write(p, content);
            return p;
        }

        private long tick() {
            Runnable other = interleave;
            interleave = null;
            if (other != null) {
                other.run();
            }
            return clock.get();
        }

        void advance(long nanos) {
            clock.addAndGet(nanos);
        }

        void expectTopic(String topic, String what, Integer... ids) {
            Set<Integer> want = new TreeSet<>(Arrays.asList(ids));
            Set<Integer> got = new TreeSet<>(registry.observersOf(topic));
            boolean each = true;
            for (int id = 0; id < 12; id++) {
                each &= registry.isObserver(topic, id) == want.contains(id);
            }
            check(impl + ": " + topic + ": " + what, want.equals(got) && each, "want " + want + ", got " + got);
        }

        void expect(String what, Integer... ids) {
            Set<Integer> want = new TreeSet<>(Arrays.asList(ids));
            Set<Integer> got = new TreeSet<>(registry.current());
            check(impl + ": " + what, want.equals(got), "want " + want + ", got " + got);
        }

        /**
         * Log lines written since the last call, as "LEVEL message" with the temp dir as <dir>;
         * audit lines are checked (see {@link #audit}) and their registry and epochMs written as
         * <registry> and <ms>, the only fields that may differ between the two sides.
         */
        List<String> newLogs() {
            String all = new String(CAPTURED.toByteArray(), StandardCharsets.UTF_8);
            String fresh = all.substring(Math.min(mark, all.length()));
            mark = CAPTURED.size();
            List<String> out = new ArrayList<>();
            for (String line : fresh.split("\n")) {
                int sep = line.indexOf(" - ");
                if (sep < 0) {
                    continue;
                }
                String level = line.substring(0, line.indexOf(' '));
                String msg = line.substring(sep + 3).replace(dir.toString(), "<dir>");
                out.add(level + " " + (msg.startsWith("OBSERVER AUDIT ") ? audit(msg) : msg));
            }
            logs.addAll(out);
            return out;
        }

        private String audit(String line) {
            Matcher m = AUDIT.matcher(line);
            if (!m.matches()) {
                check(impl + ": audit line in the documented format", false, line);
                return line;
            }
            String registry = impl.equals("scala") ? "broker" : "controller";
            Set<Integer> before = ids(m.group(4));
            Set<Integer> after = ids(m.group(5));
            Set<Integer> added = new TreeSet<>(after);
            added.removeAll(before);
            Set<Integer> removed = new TreeSet<>(before);
            removed.removeAll(after);
            long epochMs = Long.parseLong(m.group(8));
            boolean ok = m.group(1).equals(registry) && ids(m.group(6)).equals(added)
                && ids(m.group(7)).equals(removed) && startMs <= epochMs && epochMs <= System.currentTimeMillis();
            check(impl + ": audit line: registry=" + registry + ", added/removed agree, epochMs is now", ok, line);
            return line.replace("registry=" + m.group(1) + " ", "registry=<registry> ")
                .replace(" epochMs=" + m.group(8), " epochMs=<ms>");
        }

        void expectLogs(String what, String... want) {
            List<String> got = newLogs();
            check(impl + ": " + what, got.equals(Arrays.asList(want)),
                "want " + Arrays.asList(want) + "\n        got  " + got);
        }
    }

    /** An audit line as newLogs() shows it; sets as the log writes them, e.g. "[1,2]". */
    static String audit(String event, String source, String before, String after, String added, String removed) {
        return "INFO OBSERVER AUDIT registry=<registry> node=- event=" + event + " source=" + source + " before=" + before
            + " after=" + after + " added=" + added + " removed=" + removed + " epochMs=<ms>";
    }

    /** An audit line with the rules field (only written when a topic rule is or was in force). */
    static String audit(String event, String source, String before, String after, String added, String removed,
                        String rules) {
        return audit(event, source, before, after, added, removed) + " rules=" + rules;
    }

    // The WARN of a failed read, as newLogs() shows it: what failed; what the registry does instead.
    // docs/observer-ids.md quotes these texts.
    private static final String IS_A_DIRECTORY = "java.io.IOException: Is a directory";
    private static final String NO_OBSERVERS = "no good read yet and env KAFKA_OBSERVER_BROKER_IDS is unset, so no observers";

    static String warn(String what, String instead) {
        return "WARN " + what + "; " + instead;
    }

    static String missing(String file) {
        return unreadable(file, "it does not exist");
    }

    static String unreadable(String file, String error) {
        return "Cannot read observer ids file " + file + " (" + error + ")";
    }

    static String frozenAt(String set) {
        return "keeping the last good set " + set + " (frozen) until it reads again; "
            + "an empty file, not a missing one, means no observers";
    }

    static String usingEnv(String set) {
        return "no good read yet, so using env KAFKA_OBSERVER_BROKER_IDS: " + set;
    }

    static Set<Integer> ids(String shown) {
        Set<Integer> out = new TreeSet<>();
        for (String id : shown.substring(1, shown.length() - 1).split(",")) {
            if (!id.isEmpty()) {
                out.add(Integer.valueOf(id));
            }
        }
        return out;
    }

    static void skip(String name) {
        skipped++;
        System.out.println("skip " + name);
    }

    static void check(String name, boolean ok, String detail) {
        if (ok) {
            passed++;
            System.out.println("ok   " + name);
        } else {
            failed++;
            System.out.println("FAIL " + name + "\n        " + detail);
        }
    }

    // ---- the cases ----

    static void noSourceMeansNoObservers(Ctx c) {
        c.env.put(FILE_ENV, c.dir.resolve("absent.ids").toString());
        c.open();
        c.expect("no file, no env: empty");
        check(c.impl + ": no file, no env: isObserver false", !c.registry.isObserver(0), "0 is an observer");
        c.expectLogs("no file, no env: one WARN saying so, and the first evaluation audited",
            warn(missing("<dir>/absent.ids"), NO_OBSERVERS),
            audit("initial", "none", "[]", "[]", "[]", "[]"));
        c.advance(5 * SECOND);
        c.expect("still empty after the retry");
        c.expectLogs("the same condition is not logged again");
    }

    static void envWhenFileMissing(Ctx c) {
        c.env.put(FILE_ENV, c.dir.resolve("absent.ids").toString());
        c.env.put(IDS_ENV, " 3, 4\t5 # 6");
        c.open();
        c.expect("env used while the file was never read, same format", 3, 4, 5);
        check(c.impl + ": isObserver(4)", c.registry.isObserver(4), "4 is not an observer");
        check(c.impl + ": !isObserver(6)", !c.registry.isObserver(6), "6 is an observer");
        c.expectLogs("WARN names the missing file and the env ids; audit of the first evaluation",
            warn(missing("<dir>/absent.ids"), usingEnv("[3,4,5]")),
            audit("initial", "env:KAFKA_OBSERVER_BROKER_IDS", "[]", "[3,4,5]", "[3,4,5]", "[]"));
        c.advance(5 * SECOND);
        c.expect("env ids kept while the file stays missing", 3, 4, 5);
        c.expectLogs("no WARN per retry");
    }

    static void fileNamedByEnvWinsOverIdsEnv(Ctx c) throws IOException {
        c.write("mine.ids", "7\n");
        c.env.put(FILE_ENV, c.dir.resolve("mine.ids").toString());
        c.env.put(IDS_ENV, "3");
        c.open();
        c.expect("KAFKA_OBSERVER_IDS_FILE names the file; an existing file beats the env ids", 7);
        c.expectLogs("source is the file",
            audit("initial", "file:<dir>/mine.ids", "[]", "[7]", "[7]", "[]"));
    }

    static void defaultPath(Ctx c) {
        if (Files.exists(java.nio.file.Paths.get("/opt/kafka/observer.ids"))) {
            skip(c.impl + ": default path (/opt/kafka/observer.ids exists on this machine)");
            return;
        }
        c.env.put(FILE_ENV, "  ");
        c.env.put(IDS_ENV, "9");
        c.open();
        c.expect("blank KAFKA_OBSERVER_IDS_FILE means the default path", 9);
        c.expectLogs("the default path is /opt/kafka/observer.ids",
            warn(missing("/opt/kafka/observer.ids"), usingEnv("[9]")),
            audit("initial", "env:KAFKA_OBSERVER_BROKER_IDS", "[]", "[9]", "[9]", "[]"));
    }

    static void format(Ctx c) throws IOException {
        String text = "# observers for zone c\n"
            + "3,4\n"
            + "   # indented comment 99\n"
            + "5 6\t7\n"
            + "8,,9 , 10,\n"
            + "banana,11 %%@@!! -1 +12 3.0 0x13 2147483647 2147483648 99999999999 007\n"
            + "14 # trailing comment 15\n"
            + "#16\r\n"
            + "17\r\n"
            + "\u00e9\u00ff 18\u00a0 19\n";
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        bytes.write(text.getBytes(StandardCharsets.ISO_8859_1));
        bytes.write(new byte[] {0, (byte) 0xc3, (byte) 0x28, ' ', '2', '0', '\n'});
        c.writeBytes("f.ids", bytes.toByteArray());
        c.env.put(FILE_ENV, c.dir.resolve("f.ids").toString());
        c.env.put(IDS_ENV, "1");
        c.open();
        // 18\u00a0 is one token (no-break space is not a separator), so it is ignored.
        c.expect("comments, commas/whitespace, junk, signs, overflow, leading zeros, CRLF, binary",
            3, 4, 5, 6, 7, 8, 9, 10, 11, 2147483647, 14, 17, 19, 20);
        c.newLogs();
        c.write("f.ids", "# every observer promoted\n");
        c.advance(5 * SECOND);
        c.expect("a file with only comments means no observers (not the env ids, not a failure)");
        c.expectLogs("promotion by editing the file is an audited change, no WARN",
            audit("change", "file:<dir>/f.ids", "[3,4,5,6,7,8,9,10,11,14,17,19,20,2147483647]", "[]", "[]",
                "[3,4,5,6,7,8,9,10,11,14,17,19,20,2147483647]"));
        c.write("f.ids", "4");
        c.advance(5 * SECOND);
        c.expect("demoted again", 4);
        c.newLogs();
        c.write("f.ids", "");
        c.advance(5 * SECOND);
        c.expect("an empty file means no observers (it is not a failure)");
        c.expectLogs("the empty file is an audited change",
            audit("change", "file:<dir>/f.ids", "[4]", "[]", "[]", "[4]"));
    }

    static void ttl(Ctx c) throws IOException {
        Path f = c.write("t.ids", "1");
        c.env.put(FILE_ENV, f.toString());
        c.open();
        c.expect("first read", 1);
        c.newLogs();
        c.write("t.ids", "2");
        c.advance(SECOND);
        c.expect("cached 1 s later (nanoTime + 5 s has wrapped, nanoTime itself not yet)", 1);
        c.advance(4 * SECOND - 1);
        c.expect("cached until 5 s have passed (nanoTime about to wrap)", 1);
        c.advance(1);
        c.expect("re-read at exactly 5 s, across the nanoTime wrap", 2);
        c.expectLogs("change audited with before/after/added/removed",
            audit("change", "file:<dir>/t.ids", "[1]", "[2]", "[2]", "[1]"));
        c.write("t.ids", "2, 2 ,2");
        c.advance(5 * SECOND);
        c.expect("same set again", 2);
        c.expectLogs("no log when the set did not change");
        c.write("t.ids", "3");
        c.advance(-SECOND);
        c.expect("clock going backwards does not expire the cache", 2);
    }

    static void unreadableKeepsLastGood(Ctx c) throws IOException {
        Path f = c.write("u.ids", "1,2");
        c.env.put(FILE_ENV, f.toString());
        c.env.put(IDS_ENV, "8");
        c.open();
        c.expect("first read", 1, 2);
        c.newLogs();
        // A directory cannot be read as a file even by root, unlike chmod 000.
        Files.delete(f);
        Files.createDirectory(f);
        c.advance(5 * SECOND);
        c.expect("unreadable file keeps the last good set (not the env ids)", 1, 2);
        c.expectLogs("one WARN naming the file and the kept set, and the freeze audited",
            warn(unreadable("<dir>/u.ids", IS_A_DIRECTORY), frozenAt("[1,2]")),
            audit("freeze", "frozen:unreadable", "[1,2]", "[1,2]", "[]", "[]"));
        c.advance(SECOND);
        c.expect("still kept within the next 5 s", 1, 2);
        c.advance(4 * SECOND);
        c.expect("still kept after the retry", 1, 2);
        c.advance(5 * SECOND);
        c.expect("still kept after another retry", 1, 2);
        c.expectLogs("no WARN per retry while the condition lasts");
        Files.delete(f);
        c.write("u.ids", "2,3");
        c.advance(5 * SECOND);
        c.expect("readable again: new set", 2, 3);
        c.expectLogs("the unfreeze is audited with what changed meanwhile",
            audit("unfreeze", "file:<dir>/u.ids", "[1,2]", "[2,3]", "[3]", "[1]"));
    }

    static void permissionDeniedKeepsLastGood(Ctx c) throws IOException {
        Path f = c.write("p.ids", "5");
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("---------"));
        boolean enforced = !Files.isReadable(f);
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
        if (!enforced) {
            skip(c.impl + ": chmod 000 keeps the last good set (root reads any file)");
            return;
        }
        c.env.put(FILE_ENV, f.toString());
        c.open();
        c.expect("first read", 5);
        c.newLogs();
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("---------"));
        c.advance(5 * SECOND);
        c.expect("chmod 000 keeps the last good set", 5);
        c.expectLogs("WARN names the permission problem",
            warn(unreadable("<dir>/p.ids", "java.nio.file.AccessDeniedException: <dir>/p.ids"), frozenAt("[5]")),
            audit("freeze", "frozen:unreadable", "[5]", "[5]", "[]", "[]"));
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
        c.advance(5 * SECOND);
        c.expect("readable again, same set", 5);
        c.expectLogs("the unfreeze is audited even though the set did not change",
            audit("unfreeze", "file:<dir>/p.ids", "[5]", "[5]", "[]", "[]"));
    }

    static void racingReloadsLogOnce(Ctx c) throws IOException {
        Path f = c.write("r.ids", "1");
        c.env.put(FILE_ENV, f.toString());
        c.open();
        c.expect("first read", 1);
        c.newLogs();
        c.write("r.ids", "2");
        c.advance(5 * SECOND);
        c.interleave = () -> c.registry.current();
        c.expect("two callers reload at once: both see the new set", 2);
        c.expectLogs("the change is logged once",
            audit("change", "file:<dir>/r.ids", "[1]", "[2]", "[2]", "[1]"));
        Files.delete(f);
        Files.createDirectory(f);
        c.advance(5 * SECOND);
        c.interleave = () -> c.registry.current();
        c.expect("two callers fail at once: both keep the last good set", 2);
        check(c.impl + ": the failure is logged once (one WARN, one audit line)", c.newLogs().size() == 2,
            "expected two lines");
    }

    static void failureBeforeFirstGoodRead(Ctx c) throws IOException {
        Path f = c.dir.resolve("d.ids");
        Files.createDirectory(f);
        c.env.put(FILE_ENV, f.toString());
        c.env.put(IDS_ENV, "8");
        c.open();
        c.expect("unreadable from the start: fails safe to the env ids", 8);
        c.expectLogs("WARN naming the failure and the env fallback",
            warn(unreadable("<dir>/d.ids", IS_A_DIRECTORY), usingEnv("[8]")),
            audit("initial", "env:KAFKA_OBSERVER_BROKER_IDS", "[]", "[8]", "[8]", "[]"));
        Files.delete(f);
        c.advance(5 * SECOND);
        c.expect("now missing, still no good read: still the env ids", 8);
        c.expectLogs("the new condition is logged once, the set did not change",
            warn(missing("<dir>/d.ids"), usingEnv("[8]")));
    }

    static void unreadableBeforeFirstGoodReadWithoutEnv(Ctx c) throws IOException {
        Path f = c.dir.resolve("e.ids");
        Files.createDirectory(f);
        c.env.put(FILE_ENV, f.toString());
        c.open();
        c.expect("unreadable from the start, no env: no observers");
        c.expectLogs("WARN says there is nothing to fall back to",
            warn(unreadable("<dir>/e.ids", IS_A_DIRECTORY), NO_OBSERVERS),
            audit("initial", "none", "[]", "[]", "[]", "[]"));
    }

    static void deletedAfterGoodReadFreezes(Ctx c) throws IOException {
        Path f = c.write("x.ids", "1");
        c.env.put(FILE_ENV, f.toString());
        c.env.put(IDS_ENV, "5");
        c.open();
        c.expect("file first", 1);
        c.newLogs();
        Files.delete(f);
        c.advance(5 * SECOND);
        c.expect("deleted file: the last good set stays (not the env ids, not empty)", 1);
        c.expectLogs("one WARN and the freeze audited",
            warn(missing("<dir>/x.ids"), frozenAt("[1]")),
            audit("freeze", "frozen:file-missing", "[1]", "[1]", "[]", "[]"));
        c.env.remove(IDS_ENV);
        c.advance(5 * SECOND);
        c.expect("still frozen 5 s later, with or without env", 1);
        c.advance(5 * SECOND);
        c.expect("still frozen 10 s later", 1);
        c.expectLogs("no WARN per retry");
        Files.createDirectory(f);
        c.advance(5 * SECOND);
        c.expect("missing, then unreadable: still frozen", 1);
        c.expectLogs("a change of condition is logged once more",
            warn(unreadable("<dir>/x.ids", IS_A_DIRECTORY), frozenAt("[1]")),
            audit("freeze", "frozen:unreadable", "[1]", "[1]", "[]", "[]"));
        Files.delete(f);
        c.write("x.ids", "");
        c.advance(5 * SECOND);
        c.expect("an empty file, not a deleted one, promotes the observer");
        c.expectLogs("the unfreeze is audited with the promotion",
            audit("unfreeze", "file:<dir>/x.ids", "[1]", "[]", "[]", "[1]"));
    }

    static void missingBeforeFirstGoodReadThenFrozen(Ctx c) throws IOException {
        c.env.put(FILE_ENV, c.dir.resolve("y.ids").toString());
        c.env.put(IDS_ENV, "5");
        c.open();
        c.expect("no file yet: env ids", 5);
        c.newLogs();
        Path f = c.write("y.ids", "1,2");
        c.advance(5 * SECOND);
        c.expect("the file appears: it wins", 1, 2);
        c.expectLogs("the switch to the file is an audited change",
            audit("change", "file:<dir>/y.ids", "[5]", "[1,2]", "[1,2]", "[5]"));
        Files.delete(f);
        c.advance(5 * SECOND);
        c.expect("deleted after a good read: frozen at the file's set, the env ids are start-up only", 1, 2);
        c.expectLogs("WARN and freeze",
            warn(missing("<dir>/y.ids"), frozenAt("[1,2]")),
            audit("freeze", "frozen:file-missing", "[1,2]", "[1,2]", "[]", "[]"));
    }

    static void javaSetIsUnmodifiable(Ctx c) throws IOException {
        c.env.put(FILE_ENV, c.write("m.ids", "1").toString());
        Set<Integer> ids = c.open().current();
        if (!c.impl.equals("java")) {
            return; // the Scala side returns an immutable Set by type; the adapter copies it
        }
        boolean threw = false;
        try {
            ids.add(2);
        } catch (UnsupportedOperationException e) {
            threw = true;
        }
        check("java: current() is unmodifiable", threw, "add() succeeded");
    }

    // The reassignment edge (KRaft controller only): the ISR must hold every target but the observers.
    static void javaContainsAllButObservers(Ctx c) throws IOException {
        c.env.put(FILE_ENV, c.write("r.ids", "4").toString());
        Registry cache = c.open();
        cache.current();
        if (!c.impl.equals("java")) {
            return; // the ZooKeeper controller filters its targets inline (anchors.yaml, zk-reassignment-complete)
        }
        List<Integer> isr = Arrays.asList(1, 2, 3);
        check("java: an observer target is not waited for",
            cache.containsAllButObservers(isr, Arrays.asList(1, 2, 3, 4)), "1,2,3,4 not complete with ISR 1,2,3");
        check("java: a primary target still is",
            !cache.containsAllButObservers(isr, Arrays.asList(1, 2, 4, 5)), "1,2,4,5 complete without 5 in the ISR");
        check("java: observers only: nothing to wait for (the refusal and the non-empty-ISR test guard it)",
            cache.containsAllButObservers(isr, Arrays.asList(4)), "4 alone not complete");
    }

    // The hooks' helpers per topic (docs/contract.md, "Topic rules: which hook asks per topic"):
    // the ZooKeeper elections' candidates and preferred replica, the KRaft leader gate and
    // preferred replica, and the version the imbalance count is recounted on.
    static void hookHelpersPerTopic(Ctx c) throws IOException {
        Path f = c.write("h.ids", "4\ntopic:tfull observers=none\nprefix:orders- observers=5,6\n");
        c.env.put(FILE_ENV, f.toString());
        Registry r = c.open();
        List<Integer> a = Arrays.asList(4, 1, 2);
        String i = c.impl + ": ";
        check(i + "an observed topic's candidates leave its observer out", r.candidates("tobs", a).equals(Arrays.asList(1, 2)),
            "" + r.candidates("tobs", a));
        check(i + "a topic ruled observers=none keeps every replica a candidate", r.candidates("tfull", a).equals(a),
            "" + r.candidates("tfull", a));
        check(i + "a prefix rule's observers are left out, the cluster-wide 4 is not one of them",
            r.candidates("orders-eu", Arrays.asList(5, 6, 1, 4)).equals(Arrays.asList(1, 4)),
            "" + r.candidates("orders-eu", Arrays.asList(5, 6, 1, 4)));
        check(i + "no topic (null): every topic's observers are left out",
            r.candidates(null, Arrays.asList(5, 6, 1, 4)).equals(Arrays.asList(1)),
            "" + r.candidates(null, Arrays.asList(5, 6, 1, 4)));
        check(i + "the preferred replica of an observed topic is its first non-observer",
            Integer.valueOf(1).equals(r.preferredReplica("tobs", a)), "" + r.preferredReplica("tobs", a));
        check(i + "4 is the preferred replica of the topic it fully replicates",
            Integer.valueOf(4).equals(r.preferredReplica("tfull", a)), "" + r.preferredReplica("tfull", a));
        check(i + "a partition whose replicas all observe its topic has no preferred replica",
            r.preferredReplica("orders-eu", Arrays.asList(5, 6)) == null, "" + r.preferredReplica("orders-eu", Arrays.asList(5, 6)));
        Object v1 = r.version();
        c.advance(5 * SECOND);
        check(i + "the version is equal for a second read of the same file", r.version().equals(v1), r.version() + " vs " + v1);
        c.write("h.ids", "4\ntopic:tfull observers=none\n");
        c.advance(5 * SECOND);
        Object v2 = r.version();
        check(i + "a change of the rules alone changes the version (the cluster-wide ids did not change)",
            !v2.equals(v1), v2 + " vs " + v1);
    }

    // The KRaft controller's own helpers: initial ISR, the leader gate's liveness, reassignment, names.
    static void javaHookHelpersPerTopic(Ctx c) throws IOException {
        c.env.put(FILE_ENV, c.write("j.ids", "4\ntopic:tfull observers=none\n").toString());
        Registry r = c.open();
        r.current();
        if (!c.impl.equals("java")) {
            return; // the broker and the ZooKeeper controller have their own cases above
        }
        ObserverReplicas.Cache cache = r.javaCache();
        check("java: the initial ISR leaves the topic's observer out",
            cache.initialIsr("tobs", Arrays.asList(4, 1)).equals(Arrays.asList(1)), "" + cache.initialIsr("tobs", Arrays.asList(4, 1)));
        check("java: an initial ISR of observers only is kept, so the partition has a leader",
            cache.initialIsr("tobs", Arrays.asList(4)).equals(Arrays.asList(4)), "" + cache.initialIsr("tobs", Arrays.asList(4)));
        check("java: a full replica by its topic rule stays in the initial ISR",
            cache.initialIsr("tfull", Arrays.asList(4, 1)).equals(Arrays.asList(4, 1)), "" + cache.initialIsr("tfull", Arrays.asList(4, 1)));
        java.util.function.IntPredicate upstream = id -> id != 9;
        java.util.function.IntPredicate gate = cache.leaderGate("tobs", upstream);
        check("java: the gate refuses the topic's observer and keeps upstream's test",
            !gate.test(4) && gate.test(1) && !gate.test(9), "4/1/9 wrong");
        check("java: the gate says an observer is otherwise live (kraft-keep-leader)",
            ObserverReplicas.isLiveLeader(gate, 4) && !ObserverReplicas.isLiveLeader(gate, 9), "isLiveLeader wrong");
        check("java: the gate of a topic 4 fully replicates accepts 4", cache.leaderGate("tfull", upstream).test(4), "4 refused");
        check("java: the election's preferred target of an observed topic is its first non-observer",
            cache.preferredReplica("tobs", Arrays.asList(4, 1)) == 1 && cache.preferredReplica("tfull", Arrays.asList(4, 1)) == 4,
            "tobs/tfull wrong");
        check("java: reassignment waits for 4 where it is a full replica, not where it observes",
            !cache.containsAllButObservers("tfull", Arrays.asList(1), Arrays.asList(1, 4))
                && cache.containsAllButObservers("tobs", Arrays.asList(1), Arrays.asList(1, 4)), "wrong");
        org.apache.kafka.common.Uuid id = org.apache.kafka.common.Uuid.randomUuid();
        String before = ObserverReplicas.topicName(id);
        ObserverReplicas.topicNamed(id, "tobs");
        String named = ObserverReplicas.topicName(id);
        ObserverReplicas.topicRemoved(id);
        check("java: a topic's name by id, from replay until removal",
            before == null && "tobs".equals(named) && ObserverReplicas.topicName(id) == null, before + "/" + named);
    }

    // ---- the real objects, wired to the real process environment, in a child JVM ----

    static void topicRulesPrecedence(Ctx c) throws IOException {
        Path f = c.write("r.ids", "# cluster-wide\n4\n"
            + "topic:orders observers=5,6   # exact\n"
            + "  prefix:ord observers=7\n"
            + "prefix:orders- observers=none\n"
            + "regex:ord.* observers=8\n"
            + "regex:log.*\tobservers=9,10\n"
            + "3 # more cluster-wide ids after the rules\n");
        c.env.put(FILE_ENV, f.toString());
        c.open();
        c.expectTopic("orders", "the exact rule wins over prefixes and regexes", 5, 6);
        c.expectTopic("orders-eu", "the longest prefix wins; none means no observers");
        c.expectTopic("ordinal", "a prefix wins over a regex", 7);
        c.expectTopic("logs", "a regex matching the whole name", 9, 10);
        c.expectTopic("xlogs", "a regex must match the whole name: the cluster-wide ids", 3, 4);
        c.expectTopic("payments", "no rule: the cluster-wide ids", 3, 4);
        c.expect("current(): every id that observes some topic", 3, 4, 5, 6, 7, 8, 9, 10);
        check(c.impl + ": isObserver(id) is an observer of some topic", c.registry.isObserver(8)
            && !c.registry.isObserver(11), "8 or 11 wrong");
        c.expectLogs("the initial audit line carries the rules, canonical: names sorted, regexes in file order",
            audit("initial", "file:<dir>/r.ids", "[]", "[3,4]", "[3,4]", "[]",
                "topic:orders=5,6;prefix:ord=7;prefix:orders-=none;regex:ord.*=8;regex:log.*=9,10"));
        c.write("r.ids", "4\ntopic:orders observers=5\n");
        c.advance(5 * SECOND);
        c.expectTopic("orders", "a rule changed live", 5);
        c.expectTopic("ordinal", "a removed rule no longer applies", 4);
        c.expectLogs("a change of the rules alone is audited",
            audit("change", "file:<dir>/r.ids", "[3,4]", "[4]", "[]", "[3]", "topic:orders=5"));
        c.write("r.ids", "4\n");
        c.advance(5 * SECOND);
        c.expectTopic("orders", "every rule removed: the cluster-wide ids", 4);
        c.expectLogs("removing the last rule is audited with rules=[]",
            audit("change", "file:<dir>/r.ids", "[4]", "[4]", "[]", "[]", "[]"));
        c.write("r.ids", "4 \n");
        c.advance(5 * SECOND);
        c.expectLogs("after that, an old-format file logs as before (no rules field, nothing changed)");
    }

    static void malformedRuleFreezes(Ctx c) throws IOException {
        Path f = c.write("m.ids", "4\ntopic:audit observers=5\n");
        c.env.put(FILE_ENV, f.toString());
        c.env.put(IDS_ENV, "8");
        c.open();
        c.expectTopic("audit", "first read", 5);
        c.newLogs();
        c.write("m.ids", "\ntopic:audit observers=5x\n");
        c.advance(5 * SECOND);
        c.expectTopic("audit", "a malformed rule keeps the last good rules", 5);
        c.expectTopic("other", "and the last good cluster-wide ids", 4);
        c.expectLogs("one WARN naming line and column, and the freeze audited with the kept rules",
            warn(unreadable("<dir>/m.ids", "line 2, column 23: not a broker id: \"5x\" (a list is none, or broker ids "
                + "and rack:NAME separated by commas)"), frozenAt("[4]")),
            audit("freeze", "frozen:malformed", "[4]", "[4]", "[]", "[]", "topic:audit=5"));
        c.write("m.ids", "topic:audit observers=none\n");
        c.advance(5 * SECOND);
        c.expectTopic("audit", "fixed: read again", new Integer[0]);
        c.expectLogs("the unfreeze is audited",
            audit("unfreeze", "file:<dir>/m.ids", "[4]", "[]", "[]", "[4]", "topic:audit=none"));
    }

    static void malformedRulesNamed(Ctx c) throws IOException {
        String[][] cases = {
            {"topic:a", "line 1, column 1: a topic rule is SELECTOR observers=LIST"},
            {"4\n  topic:a observers=4 extra", "line 2, column 3: a topic rule is SELECTOR observers=LIST"},
            {"topic:a 4", "line 1, column 1: a topic rule is SELECTOR observers=LIST"},
            {"topic:bad/name observers=4", "line 1, column 7: not a topic name: bad/name"},
            {"prefix: observers=4", "line 1, column 8: not a topic name: "},
            {"regex:( observers=4", "line 1, column 8: not a pattern of observer.ids (an empty alternative): ("},
            {"regex:[[:alpha:]]+ observers=3", "line 1, column 8: not a pattern of observer.ids ('[' in a class): [[:alpha:]]+"},
            {"regex:(.*a){12}x observers=3\nregex:a(?i)b observers=3",
                "line 2, column 8: not a pattern of observer.ids ('(?' other than '(?:' (no flags, names or lookaround)): a(?i)b"},
            {"topic:a observers=", "line 1, column 19: not a broker id: \"\" (a list is none, or broker ids and rack:NAME separated by commas)"},
            {"topic:a observers=4,,5", "line 1, column 21: not a broker id: \"\" (a list is none, or broker ids and rack:NAME separated by commas)"},
            {"topic:a observers=none,4", "line 1, column 19: not a broker id: \"none\" (a list is none, or broker ids and rack:NAME separated by commas)"},
            {"topic:a observers=4\r\ntopic:a observers=5", "line 2, column 1: a second rule for topic:a"},
            {"topic:a observers=4,rack:", "line 1, column 21: not a rack: \"rack:\" (a rack is rack:NAME, NAME of 1-255 "
                + "letters, digits, '.', '_', '-' or '/')"},
            {"topic:a observers=rack:a*b", "line 1, column 19: not a rack: \"rack:a*b\" (a rack is rack:NAME, NAME of "
                + "1-255 letters, digits, '.', '_', '-' or '/')"},
            {"topic:a observers=rack:" + String.join("", java.util.Collections.nCopies(256, "r")), "line 1, column 19: not a rack: \"rack:" + String.join("", java.util.Collections.nCopies(256, "r"))
                + "\" (a rack is rack:NAME, NAME of 1-255 letters, digits, '.', '_', '-' or '/')"},
            {"topic:a observers=Rack:x", "line 1, column 19: not a broker id: \"Rack:x\" " + "(a list is none, or broker ids "
                + "and rack:NAME separated by commas)"},
        };
        int n = 0;
        for (String[] k : cases) {
            Path f = c.write("bad" + n + ".ids", k[0]);
            c.env.clear();
            c.env.put(FILE_ENV, f.toString());
            c.open();
            c.expect("malformed before any good read, no env: no observers (" + k[1] + ")");
            c.expectLogs("the WARN names line and column: " + k[1],
                warn(unreadable("<dir>/bad" + n + ".ids", k[1]), NO_OBSERVERS),
                audit("initial", "none", "[]", "[]", "[]", "[]"));
            n++;
        }
    }

    static String auditRacks(String line, String racks) {
        return line + " racks=[" + racks + "]";
    }

    static void rackItems(Ctx c) throws IOException {
        Path f = c.write("k.ids", "4\n"
            + "topic:audit observers=rack:dr,9\n"
            + "prefix:ledger observers=rack:west,rack:dr\n"
            + "topic:plain observers=5\n");
        c.env.put(FILE_ENV, f.toString());
        c.open();
        // Nothing known yet: every broker is an observer of a topic whose rule names a rack.
        check(c.impl + ": a broker whose rack is unknown observes a topic whose rule names a rack",
            c.registry.isObserver("audit", 1) && c.registry.isObserver("ledger-eu", 2)
                && !c.registry.isObserver("plain", 1) && !c.registry.isObserver("other", 1)
                && c.registry.isObserver(1), "unknown rack treated as not an observer");
        c.expectLogs("the initial audit line: canonical lists (ids, then racks by name) and the racks field",
            auditRacks(audit("initial", "file:<dir>/k.ids", "[]", "[4]", "[4]", "[]",
                "topic:audit=9,rack:dr;topic:plain=5;prefix:ledger=rack:dr,rack:west"), "dr:none;west:none"));
        for (int id = 0; id < 12; id++) {
            c.registry.brokerRack(id, id == 7 || id == 8 ? "dr" : id >= 4 && id <= 6 ? "west" : id == 3 ? null : "east");
        }
        c.expectTopic("audit", "rack:dr resolves from the brokers' racks, with the listed id", 7, 8, 9);
        c.expectTopic("ledger-eu", "a prefix rule with two racks", 4, 5, 6, 7, 8);
        c.expectTopic("plain", "an id rule is untouched by racks", 5);
        c.expectTopic("other", "no rule: the cluster-wide ids", 4);
        c.expect("current(): ids and the brokers of every named rack", 4, 5, 6, 7, 8, 9);
        check(c.impl + ": a broker known without broker.rack matches no rack item",
            !c.registry.isObserver("audit", 3) && !c.registry.isObserver(3), "3 is an observer");
        check(c.impl + ": elections skip the rack's brokers", c.registry.candidates("audit", Arrays.asList(7, 1, 8, 2))
            .equals(Arrays.asList(1, 2)) && Integer.valueOf(1).equals(c.registry.preferredReplica("audit",
            Arrays.asList(8, 7, 1))), "candidates " + c.registry.candidates("audit", Arrays.asList(7, 1, 8, 2)));
        check(c.impl + ": an unknown broker is no candidate of a rack-ruled topic", c.registry.candidates("audit",
            Arrays.asList(20, 1)).equals(Arrays.asList(1)) && c.registry.candidates("plain", Arrays.asList(20, 1))
            .equals(Arrays.asList(20, 1)), "20 kept");
        c.expectLogs("the rack view changed: one racks event naming the racks' brokers",
            auditRacks(audit("racks", "file:<dir>/k.ids", "[4]", "[4]", "[]", "[]",
                "topic:audit=9,rack:dr;topic:plain=5;prefix:ledger=rack:dr,rack:west"), "dr:7,8;west:4,5,6"));
        Object before = c.registry.version();
        c.registry.brokerRack(8, "dr");
        c.registry.brokerRack(1, "east");
        check(c.impl + ": telling a known rack again changes nothing", before.equals(c.registry.version()), "changed");
        c.expectLogs("and logs nothing");
        c.registry.brokerRack(6, "dr");
        c.expectTopic("audit", "a broker that moved racks (registered again) follows its new rack", 6, 7, 8, 9);
        check(c.impl + ": the version changes with the racks", !before.equals(c.registry.version()), "same");
        c.expectLogs("the move is audited",
            auditRacks(audit("racks", "file:<dir>/k.ids", "[4]", "[4]", "[]", "[]",
                "topic:audit=9,rack:dr;topic:plain=5;prefix:ledger=rack:dr,rack:west"), "dr:6,7,8;west:4,5"));
        c.registry.brokerRack(2, "west");
        c.expectTopic("ledger-x", "a rack the rules name gained a broker", 2, 4, 5, 6, 7, 8);
        c.newLogs();
        c.registry.brokerRack(1, "north");
        c.expectTopic("audit", "a broker moving between racks no rule names", 6, 7, 8, 9);
        c.expectLogs("logs nothing");
        c.write("k.ids", "topic:audit observers=rack:dr\n");
        c.advance(5 * SECOND);
        c.expectTopic("audit", "rules changed live, racks kept", 6, 7, 8);
        c.expectLogs("a change of the rules is audited with the racks",
            auditRacks(audit("change", "file:<dir>/k.ids", "[4]", "[]", "[]", "[4]", "topic:audit=rack:dr"), "dr:6,7,8"));
        c.write("k.ids", "4\n");
        c.advance(5 * SECOND);
        c.expectTopic("audit", "the rules removed: the cluster-wide ids", 4);
        c.expectLogs("no rule names a rack: no racks field",
            audit("change", "file:<dir>/k.ids", "[]", "[4]", "[4]", "[]", "[]"));
        c.registry.brokerRack(9, "dr");
        c.expect("a rack change with no rule naming a rack", 4);
        c.expectLogs("is not an event");
    }

    static void realWiring(Path dir) throws Exception {
        Path wired = dir.resolve("wired.ids");
        Files.write(wired, "# wired\n41 42\n".getBytes(StandardCharsets.US_ASCII));
        long startMs = System.currentTimeMillis();
        String[] viaFile = child(dir, wired.toString(), "99");
        long endMs = System.currentTimeMillis();
        check("wiring: file named by KAFKA_OBSERVER_IDS_FILE",
            viaFile[0].equals("scala=[41, 42] java=[41, 42] 41:true,true 99:false,false"), "child printed " + viaFile[0]);
        // The real loggers and the real wall clock: one audit line from each registry.
        for (String registry : new String[] {"broker", "controller"}) {
            boolean found = false;
            for (String line : viaFile[1].split("\n")) {
                Matcher m = AUDIT.matcher(line.substring(line.indexOf(" - ") + 3));
                found |= line.startsWith("INFO ") && m.matches() && m.group(1).equals(registry)
                    && m.group(2).equals("initial") && m.group(3).equals("file:" + wired) && m.group(5).equals("[41,42]")
                    && Long.parseLong(m.group(8)) >= startMs && Long.parseLong(m.group(8)) <= endMs;
            }
            check("wiring: the " + registry + " registry writes its audit line with the wall-clock epochMs", found,
                "child logged " + viaFile[1]);
        }
        String[] viaEnv = child(dir, dir.resolve("absent.ids").toString(), "43,44");
        check("wiring: KAFKA_OBSERVER_BROKER_IDS when the file is absent",
            viaEnv[0].equals("scala=[43, 44] java=[43, 44] 41:false,false 99:false,false"), "child printed " + viaEnv[0]);
    }

    /** Runs childMain in a fresh JVM with this environment: its stdout and its log (stderr). */
    private static String[] child(Path dir, String file, String ids) throws Exception {
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        ProcessBuilder pb = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
            ObserverIdsContractTest.class.getName(), "--child");
        pb.environment().put(FILE_ENV, file);
        pb.environment().put(IDS_ENV, ids);
        Path err = Files.createTempFile(dir, "child", ".log");
        pb.redirectError(err.toFile());
        Process p = pb.start();
        String out;
        try (InputStream in = p.getInputStream()) {
            out = new String(readAll(in), StandardCharsets.UTF_8).trim();
        }
        p.waitFor();
        return new String[] {out, new String(Files.readAllBytes(err), StandardCharsets.UTF_8)};
    }

    private static byte[] readAll(InputStream in) throws IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        byte[] chunk = new byte[4096];
        for (int n; (n = in.read(chunk)) > 0; ) {
            buf.write(chunk, 0, n);
        }
        return buf.toByteArray();
    }

    private static void childMain() {
        System.out.println("scala=" + new TreeSet<>(fromScala(kafka.observer.ObserverIds.current()))
            + " java=" + new TreeSet<>(ObserverReplicas.current())
            + " 41:" + kafka.observer.ObserverIds.isObserver(41) + "," + ObserverReplicas.isObserver(41)
            + " 99:" + kafka.observer.ObserverIds.isObserver(99) + "," + ObserverReplicas.isObserver(99));
    }

    public static void main(String[] args) throws Exception {
        // slf4j-simple reads these when the first logger is created, which is after this point.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "info");
        System.setProperty("org.slf4j.simpleLogger.showThreadName", "false");
        if (args.length == 1 && args[0].equals("--child")) {
            childMain();
            return;
        }
        System.setErr(new PrintStream(CAPTURED, true, "UTF-8"));

        Map<String, Case> cases = new LinkedHashMap<>();
        cases.put("noSourceMeansNoObservers", ObserverIdsContractTest::noSourceMeansNoObservers);
        cases.put("envWhenFileMissing", ObserverIdsContractTest::envWhenFileMissing);
        cases.put("fileNamedByEnvWinsOverIdsEnv", ObserverIdsContractTest::fileNamedByEnvWinsOverIdsEnv);
        cases.put("defaultPath", ObserverIdsContractTest::defaultPath);
        cases.put("format", ObserverIdsContractTest::format);
        cases.put("ttl", ObserverIdsContractTest::ttl);
        cases.put("unreadableKeepsLastGood", ObserverIdsContractTest::unreadableKeepsLastGood);
        cases.put("permissionDeniedKeepsLastGood", ObserverIdsContractTest::permissionDeniedKeepsLastGood);
        cases.put("racingReloadsLogOnce", ObserverIdsContractTest::racingReloadsLogOnce);
        cases.put("failureBeforeFirstGoodRead", ObserverIdsContractTest::failureBeforeFirstGoodRead);
        cases.put("unreadableBeforeFirstGoodReadWithoutEnv", ObserverIdsContractTest::unreadableBeforeFirstGoodReadWithoutEnv);
        cases.put("deletedAfterGoodReadFreezes", ObserverIdsContractTest::deletedAfterGoodReadFreezes);
        cases.put("missingBeforeFirstGoodReadThenFrozen", ObserverIdsContractTest::missingBeforeFirstGoodReadThenFrozen);
        cases.put("javaSetIsUnmodifiable", ObserverIdsContractTest::javaSetIsUnmodifiable);
        cases.put("javaContainsAllButObservers", ObserverIdsContractTest::javaContainsAllButObservers);
        cases.put("topicRulesPrecedence", ObserverIdsContractTest::topicRulesPrecedence);
        cases.put("hookHelpersPerTopic", ObserverIdsContractTest::hookHelpersPerTopic);
        cases.put("javaHookHelpersPerTopic", ObserverIdsContractTest::javaHookHelpersPerTopic);
        cases.put("malformedRuleFreezes", ObserverIdsContractTest::malformedRuleFreezes);
        cases.put("malformedRulesNamed", ObserverIdsContractTest::malformedRulesNamed);
        cases.put("rackItems", ObserverIdsContractTest::rackItems);

        Path root = Files.createTempDirectory("okp-observer-contract");
        try {
            for (Map.Entry<String, Case> e : cases.entrySet()) {
                System.out.println("# " + e.getKey());
                Map<String, List<String>> logsByImpl = new HashMap<>();
                for (String impl : IMPLS) {
                    Ctx c = new Ctx(impl, Files.createDirectory(root.resolve(e.getKey() + "-" + impl)));
                    try {
                        e.getValue().run(c);
                    } catch (Exception ex) {
                        check(impl + ": " + e.getKey() + " ran without throwing", false, ex.toString());
                    }
                    c.newLogs();
                    logsByImpl.put(impl, c.logs);
                }
                check("same logs from scala and java", logsByImpl.get("scala").equals(logsByImpl.get("java")),
                    "scala " + logsByImpl.get("scala") + "\n        java  " + logsByImpl.get("java"));
            }
            System.out.println("# realWiring");
            realWiring(root);
        } finally {
            deleteTree(root.toFile());
        }
        System.out.println(passed + " passed, " + failed + " failed, " + skipped + " skipped");
        System.exit(failed == 0 && passed > 0 ? 0 : 1);
    }

    private static void deleteTree(File f) {
        File[] children = f.listFiles();
        if (children != null) {
            for (File child : children) {
                deleteTree(child);
            }
        }
        f.delete();
    }
}
