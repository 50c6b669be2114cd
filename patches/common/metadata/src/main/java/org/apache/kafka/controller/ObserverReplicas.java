// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The okp authors
package org.apache.kafka.controller;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Paths;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.IntPredicate;
import java.util.function.LongSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The KRaft controller's view of which broker ids are observers: replicas that copy the whole log
 * but are never in the ISR and never leader. The controller hooks call
 * {@code ObserverReplicas.isObserver(id)} to keep observers out of initial ISRs, elections and
 * AlterPartition requests.
 *
 * <p>Same rules as {@code kafka.observer.ObserverIds} in core (metadata must not depend on core),
 * so the two must change together; patches/tests/ObserverIdsContractTest.java runs both through
 * the same cases. Re-evaluated at most once per 5 s:
 * <ol>
 *   <li>the file named by env {@code KAFKA_OBSERVER_IDS_FILE} (unset or blank:
 *       {@code /opt/kafka/observer.ids}). An empty file, or one with only comments, means no
 *       observers: that is how every observer is promoted at once;</li>
 *   <li>once that file has been read, a read that fails (the file deleted, a directory in its
 *       place, no permission) keeps the last good set: the set is frozen until the file reads
 *       again. A deleted file never promotes anyone (fail safe);</li>
 *   <li>before any good read (the file never created, or unreadable since start), env
 *       {@code KAFKA_OBSERVER_BROKER_IDS}; unset, no observers, so the controller behaves like
 *       upstream.</li>
 * </ol>
 * Format: ids separated by commas and/or whitespace; {@code #} starts a comment to the end of its
 * line; a token that is not a plain decimal number in 0..2147483647 is ignored. Nothing here
 * throws. A failed read logs one WARN when the condition starts or changes (missing, unreadable),
 * not one per retry. Every change of the set, the first evaluation, and each freeze and unfreeze
 * log one INFO line in the audit format of okp's docs/observer-ids.md:
 * {@code OBSERVER AUDIT registry=controller node=- event=.. source=.. before=[..] after=[..] added=[..] removed=[..] epochMs=..}
 *
 * <p>The file must be present on every controller node, which may be machines without a broker.
 *
 * <p>Public, with {@link #isObserver} and {@link #current}, because hooks outside this package call
 * it: {@code org.apache.kafka.metadata.PartitionRegistration} (which replica is preferred) and
 * {@code org.apache.kafka.controller.metrics.ControllerMetadataMetricsPublisher} (the imbalance
 * count). All of them are in the kafka-metadata jar with this class.
 */
public final class ObserverReplicas {
    static final String FILE_ENV = "KAFKA_OBSERVER_IDS_FILE";
    static final String IDS_ENV = "KAFKA_OBSERVER_BROKER_IDS";
    static final String DEFAULT_FILE = "/opt/kafka/observer.ids";
    static final long TTL_NANOS = 5L * 1000 * 1000 * 1000;

    private static final String FILE_MISSING = "file-missing";
    private static final String UNREADABLE = "unreadable";

    private static final Logger LOG = LoggerFactory.getLogger(ObserverReplicas.class);
    private static final Cache SHARED = new Cache(System::getenv, System::nanoTime);

    private ObserverReplicas() {
    }

    /** True if {@code brokerId} is an observer. Cheap: at most one file read per 5 s. */
    public static boolean isObserver(int brokerId) {
        return SHARED.isObserver(brokerId);
    }

    /** The observer ids now in force (an unmodifiable snapshot). */
    public static Set<Integer> current() {
        return SHARED.current();
    }

    /**
     * A leader predicate whose observer gate can be set aside: {@code ReplicationControlManager}'s
     * {@code LeaderAcceptor} tests {@code !isObserver(id) && isLiveLeader(id)}, where
     * {@code isLiveLeader} is upstream's test (the broker is active, or the one being unfenced, and
     * its log directory for the partition is online).
     */
    interface LeaderLiveness {
        boolean isLiveLeader(int brokerId);
    }

    /**
     * Whether {@code isAcceptableLeader} would accept {@code brokerId} if it were not an observer.
     * False for a predicate that cannot say (a plain lambda, as in unit tests): in doubt an
     * observer is not kept as leader.
     */
    static boolean isLiveLeader(IntPredicate isAcceptableLeader, int brokerId) {
        return isAcceptableLeader instanceof LeaderLiveness
            && ((LeaderLiveness) isAcceptableLeader).isLiveLeader(brokerId);
    }

    /**
     * {@code isr.containsAll(replicas)} with the observers of {@code replicas} left out: what a
     * reassignment waits for, since an observer never joins the ISR.
     */
    static boolean containsAllButObservers(Collection<Integer> isr, Collection<Integer> replicas) {
        return SHARED.containsAllButObservers(isr, replicas);
    }

    /** One cache of the observer ids; the controller uses {@link #SHARED}, tests build their own. */
    static final class Cache {
        private final Function<String, String> env;
        private final LongSupplier nanoTime;
        private final String path;
        // Readers pay one volatile read of an immutable snapshot and take no lock. When it has
        // expired, every thread that notices may reload (harmless, the read is idempotent), but
        // only the one whose compareAndSet wins publishes and logs, so an event is logged once.
        private final AtomicReference<Snapshot> snapshot = new AtomicReference<>();

        Cache(Function<String, String> env, LongSupplier nanoTime) {
            this.env = env;
            this.nanoTime = nanoTime;
            // The process environment cannot change after start, so the path is fixed here.
            String fromEnv = env.apply(FILE_ENV);
            this.path = fromEnv == null || fromEnv.trim().isEmpty() ? DEFAULT_FILE : fromEnv;
        }

        boolean isObserver(int brokerId) {
            return current().contains(brokerId);
        }

        // One snapshot of the set answers for every replica.
        boolean containsAllButObservers(Collection<Integer> isr, Collection<Integer> replicas) {
            Set<Integer> observers = current();
            for (Integer replica : replicas) {
                if (!observers.contains(replica) && !isr.contains(replica)) {
                    return false;
                }
            }
            return true;
        }

        Set<Integer> current() {
            Snapshot seen = snapshot.get();
            long now = nanoTime.getAsLong();
            // A difference of nanoTime values stays right when the counter wraps; the wall clock
            // can jump.
            if (seen != null && now - seen.loadedAt < TTL_NANOS) {
                return seen.ids;
            }
            return reload(seen, now);
        }

        // A failed read still yields a snapshot with a fresh timestamp, so a broken file costs one
        // read per 5 s, not one per call on the request path.
        private Set<Integer> reload(Snapshot seen, long now) {
            Snapshot next;
            try {
                byte[] bytes = Files.readAllBytes(Paths.get(path));
                // Ids are ASCII; ISO-8859-1 turns each other byte into one char of an ignored token.
                next = new Snapshot(parse(new String(bytes, StandardCharsets.ISO_8859_1)), "file:" + path,
                    null, null, true, now);
            } catch (NoSuchFileException e) {
                next = failed(seen, FILE_MISSING, e, now);
            } catch (Exception e) {
                next = failed(seen, UNREADABLE, e, now);
            }
            if (snapshot.compareAndSet(seen, next)) {
                report(seen, next);
            }
            return next.ids;
        }

        // After a good read the last good set stays (frozen), whatever the failure: a deleted file
        // must not promote every observer. Before one there is no last good set, so the env ids
        // stand in.
        private Snapshot failed(Snapshot seen, String fault, Exception error, long now) {
            if (seen != null && seen.fileRead) {
                return new Snapshot(seen.ids, "frozen:" + fault, fault, error, true, now);
            }
            String fromEnv = env.apply(IDS_ENV);
            if (fromEnv == null) {
                return new Snapshot(Collections.<Integer>emptySet(), "none", fault, error, false, now);
            }
            return new Snapshot(parse(fromEnv), "env:" + IDS_ENV, fault, error, false, now);
        }

        private void report(Snapshot seen, Snapshot next) {
            boolean conditionChanged = seen == null || !Objects.equals(seen.fault, next.fault);
            if (next.fault != null && conditionChanged) {
                LOG.warn(warning(next));
            }
            String event;
            if (seen == null) {
                event = "initial";
            } else if (seen.fileRead && seen.fault != null && next.fault == null) {
                event = "unfreeze";
            } else if (next.fileRead && next.fault != null && conditionChanged) {
                event = "freeze";
            } else if (!next.ids.equals(seen.ids)) {
                event = "change";
            } else {
                return;
            }
            Set<Integer> before = seen == null ? Collections.<Integer>emptySet() : seen.ids;
            Set<Integer> after = next.ids;
            LOG.info("OBSERVER AUDIT registry=controller node=- event={} source={} before={} after={} added={} "
                    + "removed={} epochMs={}", event, next.source, show(before), show(after),
                show(minus(after, before)), show(minus(before, after)), System.currentTimeMillis());
        }

        private String warning(Snapshot s) {
            String why = s.fault.equals(FILE_MISSING) ? "it does not exist" : s.error.toString();
            String outcome;
            if (s.fileRead) {
                outcome = "keeping the last good set " + show(s.ids) + " (frozen) until it reads again; "
                    + "an empty file, not a missing one, means no observers";
            } else if (s.source.equals("none")) {
                outcome = "no good read yet and env " + IDS_ENV + " is unset, so no observers";
            } else {
                outcome = "no good read yet, so using env " + IDS_ENV + ": " + show(s.ids);
            }
            return "Cannot read observer ids file " + path + " (" + why + "); " + outcome;
        }
    }

    // One evaluation: the set, where it came from (the audit line's source), the failure of this
    // read if any (fault and error null after a good read), and whether the file was ever read.
    private static final class Snapshot {
        final Set<Integer> ids;
        final String source;
        final String fault;
        final Exception error;
        final boolean fileRead;
        final long loadedAt;

        Snapshot(Set<Integer> ids, String source, String fault, Exception error, boolean fileRead, long loadedAt) {
            this.ids = ids;
            this.source = source;
            this.fault = fault;
            this.error = error;
            this.fileRead = fileRead;
            this.loadedAt = loadedAt;
        }
    }

    // '#' starts a comment wherever it stands, so "3 # was 4" does not make 4 an observer.
    static Set<Integer> parse(String text) {
        Set<Integer> ids = new HashSet<>();
        for (String token : text.replaceAll("#[^\r\n]*", " ").split("[,\\s]+")) {
            int id = parseId(token);
            if (id >= 0) {
                ids.add(id);
            }
        }
        return Collections.unmodifiableSet(ids);
    }

    // Plain decimal only: "+3", "-1", "3.0" and anything past Integer.MAX_VALUE are not broker ids.
    private static int parseId(String token) {
        if (token.isEmpty() || token.length() > 10) {
            return -1;
        }
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
        }
        long value = Long.parseLong(token);
        return value > Integer.MAX_VALUE ? -1 : (int) value;
    }

    private static Set<Integer> minus(Set<Integer> a, Set<Integer> b) {
        Set<Integer> result = new HashSet<>(a);
        result.removeAll(b);
        return result;
    }

    // Sorted, no spaces (one token in a key=value line), and formatted exactly like the Scala side.
    private static String show(Set<Integer> ids) {
        StringBuilder out = new StringBuilder("[");
        for (Integer id : new TreeSet<>(ids)) {
            out.append(out.length() > 1 ? "," : "").append(id);
        }
        return out.append(']').toString();
    }
}
