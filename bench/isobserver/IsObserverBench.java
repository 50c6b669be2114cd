// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The okp authors

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.HashSet;

/**
 * What one `kafka.observer.ObserverIds.isObserver(id)` call costs on a broker's hot path, next to
 * the cheapest alternatives a hook could have used: a Scala immutable Set's contains (what
 * isObserver does after its snapshot check), a java.util.HashSet's contains, and a plain int
 * comparison, and System.nanoTime() (which the registry reads on every call to know whether its
 * snapshot is older than 5 s), and the per-topic `isObserver(topic, id)` the broker hooks ask since
 * topic rules. Run by bench/is_observer.py, one JVM per observer configuration (the registry reads
 * its environment once). Each probe has its own loop, so no probe pays for another's call site.
 *
 * Prints one JSON line per probe: ns per call (median, min, max over the rounds) and bytes
 * allocated per call (this thread's allocation counter across all rounds).
 *
 * Usage: java -cp PATCHED_KAFKA_JAR:SCALA_LIBRARY:SLF4J_API:. IsObserverBench ROUNDS CALLS_PER_ROUND
 */
public final class IsObserverBench {
    // Broker ids a real cluster passes: small ones (Integer's box cache covers them) and large ones.
    private static final int[] IDS = {1, 2, 3, 4, 5, 1001, 424242, 7};
    private static final int MASK = IDS.length - 1;
    private static long sink;

    private static long loopIsObserver(long calls) {
        long hits = 0;
        for (long i = 0; i < calls; i++) {
            if (kafka.observer.ObserverIds.isObserver(IDS[(int) i & MASK])) hits++;
        }
        return hits;
    }

    // Topics a broker's hooks pass: the produced topic (no rule names it) and ones rules name.
    private static final String[] TOPICS = {"orders", "audit", "ledger-eu", "orders", "tmp-1", "orders", "payments", "orders"};

    // isObserver(topic, id): the per-topic question every broker hook asks since topic rules.
    private static long loopIsObserverTopic(long calls) {
        long hits = 0;
        for (long i = 0; i < calls; i++) {
            if (kafka.observer.ObserverIds.isObserver(TOPICS[(int) (i >>> 3) & MASK], IDS[(int) i & MASK])) hits++;
        }
        return hits;
    }

    private static final scala.collection.immutable.Set<Object> SCALA_SET = scalaSetOf(4);

    @SuppressWarnings("unchecked")
    private static scala.collection.immutable.Set<Object> scalaSetOf(int id) {
        return (scala.collection.immutable.Set<Object>) (Object) scala.collection.immutable.Set$.MODULE$.empty().$plus(id);
    }

    private static long loopScalaSet(long calls) {
        long hits = 0;
        for (long i = 0; i < calls; i++) {
            if (SCALA_SET.contains(IDS[(int) i & MASK])) hits++;
        }
        return hits;
    }

    private static final HashSet<Integer> JAVA_SET = new HashSet<>(Arrays.asList(4));

    private static long loopHashSet(long calls) {
        long hits = 0;
        for (long i = 0; i < calls; i++) {
            if (JAVA_SET.contains(IDS[(int) i & MASK])) hits++;
        }
        return hits;
    }

    private static volatile int observerId = 4;

    private static long loopIntEquals(long calls) {
        long hits = 0;
        int o = observerId;
        for (long i = 0; i < calls; i++) {
            if (IDS[(int) i & MASK] == o) hits++;
        }
        return hits;
    }

    // The registry's freshness check reads System.nanoTime() on every call: its cost, alone.
    private static long loopNanoTime(long calls) {
        long acc = 0;
        for (long i = 0; i < calls; i++) {
            acc += System.nanoTime() & IDS[(int) i & MASK];
        }
        return acc;
    }

    private interface Loop {
        long run(long calls);
    }

    private static void measure(String probe, Loop loop, int rounds, long calls) {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long tid = Thread.currentThread().getId();
        // Warm-up: as many calls as two measured rounds, so the JIT has compiled the loop.
        sink += loop.run(calls * 2);
        double[] ns = new double[rounds];
        long before = mx.getThreadAllocatedBytes(tid);
        for (int r = 0; r < rounds; r++) {
            long t0 = System.nanoTime();
            sink += loop.run(calls);
            ns[r] = (System.nanoTime() - t0) / (double) calls;
        }
        long bytes = mx.getThreadAllocatedBytes(tid) - before;
        double[] sorted = ns.clone();
        Arrays.sort(sorted);
        System.out.printf(
            "{\"probe\":\"%s\",\"ns_median\":%.3f,\"ns_min\":%.3f,\"ns_max\":%.3f,\"bytes_per_call\":%.4f,\"calls\":%d}%n",
            probe, sorted[rounds / 2], sorted[0], sorted[rounds - 1], bytes / (double) (calls * rounds), calls * rounds);
    }

    public static void main(String[] args) {
        int rounds = Integer.parseInt(args[0]);
        long calls = Long.parseLong(args[1]);
        if (System.getenv("OKP_BENCH_RACKS") != null) {
            // Twelve brokers in three racks, told as the metadata hooks tell them.
            for (int id = 0; id < 12; id++) {
                kafka.observer.ObserverIds.brokerRack(id, id < 4 ? "east" : id < 8 ? "west" : "dr");
            }
        }
        // The probes in a fixed order, each twice (A B C D A B C D): a drift in the machine's load
        // shows as a difference between a probe's two passes.
        for (int pass = 1; pass <= 2; pass++) {
            measure("isObserver#" + pass, IsObserverBench::loopIsObserver, rounds, calls);
            measure("isObserver(topic)#" + pass, IsObserverBench::loopIsObserverTopic, rounds, calls);
            measure("scala.Set.contains#" + pass, IsObserverBench::loopScalaSet, rounds, calls);
            measure("java.HashSet.contains#" + pass, IsObserverBench::loopHashSet, rounds, calls);
            measure("int==#" + pass, IsObserverBench::loopIntEquals, rounds, calls);
            measure("System.nanoTime#" + pass, IsObserverBench::loopNanoTime, rounds, calls);
        }
        System.out.println("{\"observers\":\"" + kafka.observer.ObserverIds.current() + "\",\"sink\":" + sink + "}");
    }
}
