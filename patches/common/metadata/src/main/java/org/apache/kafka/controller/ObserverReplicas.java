// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The okp authors
package org.apache.kafka.controller;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.HashSet;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
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
 * the same cases:
 * <ol>
 *   <li>the file named by env {@code KAFKA_OBSERVER_IDS_FILE} (unset or blank:
 *       {@code /opt/kafka/observer.ids}), re-read at most once per 5 s;</li>
 *   <li>while that file does not exist (never created, or deleted later), env
 *       {@code KAFKA_OBSERVER_BROKER_IDS};</li>
 *   <li>neither: no observers, so the controller behaves like upstream.</li>
 * </ol>
 * Format: ids separated by commas and/or whitespace; {@code #} starts a comment to the end of its
 * line; a token that is not a plain decimal number in 0..2147483647 is ignored. A file that exists
 * but cannot be read keeps the last good set and logs a WARN; nothing here throws. Every change of
 * the set is logged at INFO with before/after/added/removed.
 *
 * <p>The file must be present on every controller node, which may be machines without a broker.
 */
final class ObserverReplicas {
    static final String FILE_ENV = "KAFKA_OBSERVER_IDS_FILE";
    static final String IDS_ENV = "KAFKA_OBSERVER_BROKER_IDS";
    static final String DEFAULT_FILE = "/opt/kafka/observer.ids";
    static final long TTL_NANOS = 5L * 1000 * 1000 * 1000;

    private static final Logger LOG = LoggerFactory.getLogger(ObserverReplicas.class);
    private static final Cache SHARED = new Cache(System::getenv, System::nanoTime);

    private ObserverReplicas() {
    }

    /** True if {@code brokerId} is an observer. Cheap: at most one file read per 5 s. */
    static boolean isObserver(int brokerId) {
        return SHARED.isObserver(brokerId);
    }

    /** The observer ids now in force (an unmodifiable snapshot). */
    static Set<Integer> current() {
        return SHARED.current();
    }

    /** One cache of the observer ids; the controller uses {@link #SHARED}, tests build their own. */
    static final class Cache {
        private final Function<String, String> env;
        private final LongSupplier nanoTime;
        private final String path;
        // Readers pay one volatile read of an immutable snapshot and take no lock. When it has
        // expired, every thread that notices may reload (harmless, the read is idempotent), but
        // only the one whose compareAndSet wins publishes and logs, so a change is logged once.
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

        private Set<Integer> reload(Snapshot seen, long now) {
            Set<Integer> before = seen == null ? Collections.<Integer>emptySet() : seen.ids;
            try {
                Snapshot loaded = load(now);
                Set<Integer> after = loaded.ids;
                if (snapshot.compareAndSet(seen, loaded) && !after.equals(before)) {
                    LOG.info("Observer broker ids changed: before={} after={} added={} removed={} source={}",
                        show(before), show(after), show(minus(after, before)), show(minus(before, after)),
                        loaded.source);
                }
                return after;
            } catch (Exception e) {
                // The timestamp still advances, so a broken file costs one read and one WARN per
                // 5 s, not one per call on the request path.
                if (seen != null) {
                    if (snapshot.compareAndSet(seen, new Snapshot(before, seen.source, now))) {
                        LOG.warn("Cannot read observer ids file {} ({}); keeping last good set {}", path, e, show(before));
                    }
                    return before;
                }
                // No good read yet, so no last good set: fail safe to the env ids rather than to
                // none, which would let every observer into the ISR until the file is readable.
                String fromEnv = env.apply(IDS_ENV);
                Set<Integer> kept = fromEnv == null ? Collections.<Integer>emptySet() : parse(fromEnv);
                String shown = fromEnv == null ? "unset" : show(kept);
                if (snapshot.compareAndSet(null, new Snapshot(kept, "env " + IDS_ENV + " (file unreadable)", now))) {
                    LOG.warn("Cannot read observer ids file {} ({}) before any good read; using env {}: {}",
                        path, e, IDS_ENV, shown);
                }
                return kept;
            }
        }

        // Only a file that does not exist hands over to the env var; any other error is a failure,
        // so that a transient IO problem cannot flip observers to electable replicas.
        private Snapshot load(long now) throws IOException {
            try {
                byte[] bytes = Files.readAllBytes(Paths.get(path));
                // Ids are ASCII; ISO-8859-1 turns each other byte into one char of an ignored token.
                return new Snapshot(parse(new String(bytes, StandardCharsets.ISO_8859_1)), "file " + path, now);
            } catch (NoSuchFileException e) {
                String fromEnv = env.apply(IDS_ENV);
                if (fromEnv == null) {
                    return new Snapshot(Collections.<Integer>emptySet(),
                        "none (no file " + path + ", " + IDS_ENV + " unset)", now);
                }
                return new Snapshot(parse(fromEnv), "env " + IDS_ENV + " (no file " + path + ")", now);
            }
        }
    }

    private static final class Snapshot {
        final Set<Integer> ids;
        final String source;
        final long loadedAt;

        Snapshot(Set<Integer> ids, String source, long loadedAt) {
            this.ids = ids;
            this.source = source;
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

    // Sorted, and formatted exactly like the Scala side, so both logs read the same.
    private static String show(Set<Integer> ids) {
        return new TreeSet<>(ids).toString();
    }
}
