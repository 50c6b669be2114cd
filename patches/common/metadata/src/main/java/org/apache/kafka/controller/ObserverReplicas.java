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
 * line; a token that is not a plain decimal number in 0..2147483647 is ignored. Topic rules
 * ({@code topic:NAME}, {@code prefix:P} or {@code regex:R}, then {@code observers=LIST}, LIST
 * items broker ids or {@code rack:NAME}) are read as the Scala side reads them; a malformed one
 * fails the read (fault {@code malformed}). Racks come from the broker registrations in each
 * metadata image this controller publishes ({@link #brokerRack}); a broker whose registration it
 * has not published yet is an observer of every topic whose rule names a rack (fail safe). Every
 * controller hook asks per topic: by name where the topic's name is in scope (initial ISR,
 * AlterPartition, the metrics), by topic id elsewhere (elections through {@link #leaderGate},
 * leader balance, reassignment), resolved through the names the controller has replayed
 * ({@link #topicNamed}); an id it has not seen yet falls back to {@link #isObserver(int)}, an
 * observer of any topic, which is stricter than asked, never looser. Nothing here
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
    // The most topics a per-topic map holds (a snapshot's resolutions, the rules' regex decisions)
    // before it is emptied and refilled: topics deleted since the rules were read must not
    // accumulate, and a cluster has far fewer topics than this.
    static final int MAX_TOPICS_HELD = 1 << 18;

    private static final String FILE_MISSING = "file-missing";
    private static final String UNREADABLE = "unreadable";
    private static final String MALFORMED = "malformed";

    private static final Logger LOG = LoggerFactory.getLogger(ObserverReplicas.class);
    private static final Cache SHARED = new Cache(System::getenv, System::nanoTime);

    private ObserverReplicas() {
    }

    /**
     * True if {@code brokerId} is an observer of some topic: a cluster-wide id or one a topic rule
     * names. Cheap: at most one file read per 5 s.
     */
    public static boolean isObserver(int brokerId) {
        return SHARED.isObserver(brokerId);
    }

    /**
     * A metadata image this controller published registers {@code brokerId} with broker.rack
     * {@code rack} (null: none set). Cheap when nothing changed.
     */
    public static void brokerRack(int brokerId, String rack) {
        SHARED.brokerRack(brokerId, rack);
    }

    /** The observer ids now in force (an unmodifiable snapshot). */
    public static Set<Integer> current() {
        return SHARED.current();
    }

    /** True if {@code brokerId} is an observer of {@code topic}, by its rule or the cluster-wide ids. */
    public static boolean isObserver(String topic, int brokerId) {
        return SHARED.isObserver(topic, brokerId);
    }

    // Topic names by id, as the controller replays TopicRecord and RemoveTopicRecord (active and
    // standby alike). Ids are random and never reused, so an entry left by a record that was
    // replayed and then reverted names nothing else.
    private static final java.util.concurrent.ConcurrentHashMap<org.apache.kafka.common.Uuid, String> TOPIC_NAMES =
        new java.util.concurrent.ConcurrentHashMap<>();

    /** The controller replayed a TopicRecord: {@code topicId} is {@code name}. */
    public static void topicNamed(org.apache.kafka.common.Uuid topicId, String name) {
        if (topicId != null && name != null) {
            TOPIC_NAMES.put(topicId, name);
        }
    }

    /** The controller replayed a RemoveTopicRecord. */
    public static void topicRemoved(org.apache.kafka.common.Uuid topicId) {
        if (topicId != null) {
            TOPIC_NAMES.remove(topicId);
        }
    }

    /** The name of {@code topicId}, or null if this controller has not replayed it. */
    static String topicName(org.apache.kafka.common.Uuid topicId) {
        return topicId == null ? null : TOPIC_NAMES.get(topicId);
    }

    /** The observers of {@code topic}; of every topic (the union) when the name is unknown (null). */
    static Set<Integer> observersOf(String topic) {
        return SHARED.observersOrUnion(topic);
    }

    /** True if {@code brokerId} is an observer of the topic {@code topicId} (of any topic if not replayed). */
    static boolean isObserver(org.apache.kafka.common.Uuid topicId, int brokerId) {
        return SHARED.isObserver(topicName(topicId), brokerId);
    }

    /**
     * A new partition's initial ISR: {@code isr} without the observers of {@code topic}, in order
     * (its head becomes the leader), unless every member is one; then {@code isr} as given, so the
     * partition is not created without a leader.
     */
    static java.util.List<Integer> initialIsr(String topic, java.util.List<Integer> isr) {
        return SHARED.initialIsr(topic, isr);
    }

    /**
     * The preferred replica of a partition of {@code topic} (null: unknown, the union decides):
     * the first replica that is not an observer of it; with none, {@code leader}, so such a
     * partition is never counted imbalanced and its leadership never moved; with no replicas, -1
     * (no leader), as upstream.
     */
    static int preferredReplica(String topic, int[] replicas, int leader) {
        return SHARED.preferredReplica(topic, replicas, leader);
    }

    /** Upstream's {@code PartitionRegistration.hasPreferredLeader()}, with the observers of the topic {@code topicId}. */
    public static boolean hasPreferredLeader(org.apache.kafka.common.Uuid topicId, int[] replicas, int leader) {
        return leader == preferredReplica(topicName(topicId), replicas, leader);
    }

    /** Upstream's {@code PartitionRegistration.hasPreferredLeader()}, with the observers of {@code topic}. */
    public static boolean hasPreferredLeader(String topic, int[] replicas, int leader) {
        return leader == preferredReplica(topic, replicas, leader);
    }

    /** As {@link #preferredReplica(String, int[], int)} for a list of replicas (the election's target replicas). */
    static int preferredReplica(org.apache.kafka.common.Uuid topicId, java.util.List<Integer> replicas) {
        return SHARED.preferredReplica(topicName(topicId), replicas);
    }

    /**
     * Something that can say whether the leader predicate would accept a broker if it were not an
     * observer: upstream's test (the broker is active, or the one being unfenced, and its log
     * directory for the partition is online).
     */
    interface LeaderLiveness {
        boolean isLiveLeader(int brokerId);
    }

    /**
     * The leader predicate of one partition's election: upstream's {@code isAcceptableLeader} with
     * the observers of the topic {@code topicId} refused. The topic's name is looked up once, here.
     * {@code PartitionChangeBuilder} wraps its predicate with this on every path (clean, unclean,
     * preferred, reassignment, controlled shutdown, ELR and last-known-leader recovery).
     */
    static IntPredicate leaderGate(org.apache.kafka.common.Uuid topicId, IntPredicate upstream) {
        return SHARED.leaderGate(topicName(topicId), upstream);
    }

    private static final class LeaderGate implements IntPredicate, LeaderLiveness {
        private final Cache cache;
        private final String topic;
        private final IntPredicate upstream;

        LeaderGate(Cache cache, String topic, IntPredicate upstream) {
            this.cache = cache;
            this.topic = topic;
            this.upstream = upstream;
        }

        @Override
        public boolean test(int brokerId) {
            return !cache.isObserver(topic, brokerId) && upstream.test(brokerId);
        }

        @Override
        public boolean isLiveLeader(int brokerId) {
            return upstream.test(brokerId);
        }

        @Override
        public String toString() {
            return upstream.toString();
        }
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
        return containsAllButObservers(null, isr, replicas);
    }

    /** As {@link #containsAllButObservers(Collection, Collection)} with the observers of {@code topic} (null: the union). */
    static boolean containsAllButObservers(String topic, Collection<Integer> isr, Collection<Integer> replicas) {
        return SHARED.containsAllButObservers(topic, isr, replicas);
    }

    /**
     * What the observers now in force are, as a value: equal for two reads with the same ids and
     * rules. The imbalance count is counted again when it changes.
     */
    public static Object version() {
        return SHARED.version();
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
        // The text of the last good read and what it parsed to: a re-read of the same text (every
        // 5 s while nobody edits the file) is not parsed again. Written whole, read once.
        private volatile Object[] lastParsed;
        // Broker id -> broker.rack ("" stands for none set) as published; immutable, replaced whole
        // on a change, which is rare (a broker's first registration, a rack changed).
        private final AtomicReference<java.util.Map<Integer, String>> racks =
            new AtomicReference<java.util.Map<Integer, String>>(Collections.<Integer, String>emptyMap());

        Cache(Function<String, String> env, LongSupplier nanoTime) {
            this.env = env;
            this.nanoTime = nanoTime;
            // The process environment cannot change after start, so the path is fixed here.
            String fromEnv = env.apply(FILE_ENV);
            this.path = fromEnv == null || fromEnv.trim().isEmpty() ? DEFAULT_FILE : fromEnv;
        }

        void brokerRack(int brokerId, String rack) {
            String told = rack == null ? "" : rack;
            while (true) {
                java.util.Map<Integer, String> seen = racks.get();
                if (told.equals(seen.get(brokerId))) {
                    return;
                }
                java.util.Map<Integer, String> next = new java.util.HashMap<>(seen);
                next.put(brokerId, told);
                if (racks.compareAndSet(seen, Collections.unmodifiableMap(next))) {
                    return;
                }
            }
        }

        boolean isObserver(int brokerId) {
            return fresh().isObserver(null, brokerId);
        }

        // Null `topic` (a topic this controller cannot name) asks for the union, as on the Scala side.
        boolean isObserver(String topic, int brokerId) {
            return fresh().isObserver(topic, brokerId);
        }

        Set<Integer> observersOf(String topic) {
            return fresh().observersOf(topic);
        }

        // The observers of a topic; null (a topic this controller cannot name) asks for the union.
        Set<Integer> observersOrUnion(String topic) {
            return topic == null ? current() : observersOf(topic);
        }

        boolean containsAllButObservers(Collection<Integer> isr, Collection<Integer> replicas) {
            return containsAllButObservers(null, isr, replicas);
        }

        // One snapshot answers for every replica.
        boolean containsAllButObservers(String topic, Collection<Integer> isr, Collection<Integer> replicas) {
            Snapshot s = fresh();
            for (Integer replica : replicas) {
                if (!s.isObserver(topic, replica) && !isr.contains(replica)) {
                    return false;
                }
            }
            return true;
        }

        java.util.List<Integer> initialIsr(String topic, java.util.List<Integer> isr) {
            Snapshot s = fresh();
            java.util.List<Integer> kept = new java.util.ArrayList<>(isr.size());
            for (Integer id : isr) {
                if (!s.isObserver(topic, id)) {
                    kept.add(id);
                }
            }
            return kept.isEmpty() ? isr : kept;
        }

        int preferredReplica(String topic, int[] replicas, int leader) {
            Snapshot s = fresh();
            for (int replica : replicas) {
                if (!s.isObserver(topic, replica)) {
                    return replica;
                }
            }
            return replicas.length > 0 ? leader : -1;
        }

        // The election's target: with every target an observer, upstream's first (the gate then
        // refuses it, so no observer is elected).
        int preferredReplica(String topic, java.util.List<Integer> replicas) {
            Snapshot s = fresh();
            for (Integer replica : replicas) {
                if (!s.isObserver(topic, replica)) {
                    return replica;
                }
            }
            return replicas.get(0);
        }

        IntPredicate leaderGate(String topic, IntPredicate upstream) {
            return new LeaderGate(this, topic, upstream);
        }

        Object version() {
            Snapshot s = fresh();
            return java.util.Arrays.<Object>asList(s.ids, s.rules.shown, s.racksShown);
        }

        Set<Integer> current() {
            return fresh().union;
        }

        private Snapshot fresh() {
            Snapshot seen = snapshot.get();
            long now = nanoTime.getAsLong();
            // A difference of nanoTime values stays right when the counter wraps; the wall clock
            // can jump.
            if (seen != null && now - seen.loadedAt < TTL_NANOS) {
                java.util.Map<Integer, String> view = racks.get();
                return seen.racks == view ? seen : reracked(seen, view);
            }
            return reload(seen, now);
        }

        // The rack view changed since `seen` was made: the same ids and rules resolved against it.
        // Only the thread whose compareAndSet wins logs, and only when a rule's rack moved.
        private Snapshot reracked(Snapshot seen, java.util.Map<Integer, String> view) {
            Snapshot next = new Snapshot(seen, seen.ids, seen.rules, view, seen.source, seen.fault, seen.error,
                seen.fileRead, seen.loadedAt);
            if (snapshot.compareAndSet(seen, next) && !next.racksShown.equals(seen.racksShown)) {
                audit("racks", seen, next);
            }
            return next;
        }

        // A failed read still yields a snapshot with a fresh timestamp, so a broken file costs one
        // read per 5 s, not one per call on the request path.
        private Snapshot reload(Snapshot seen, long now) {
            Snapshot next;
            try {
                byte[] bytes = Files.readAllBytes(Paths.get(path));
                // Ids are ASCII; ISO-8859-1 turns each other byte into one char of an ignored token.
                String text = new String(bytes, StandardCharsets.ISO_8859_1);
                Object[] last = lastParsed;
                Parsed parsed;
                if (last != null && last[0].equals(text)) {
                    parsed = (Parsed) last[1];
                } else {
                    parsed = parseFile(text);
                    parsed.rules.keepDecisionsOf(seen == null ? null : seen.rules);
                    lastParsed = new Object[] {text, parsed};
                }
                // The same rules as before are kept whole (their trie, their regex decisions); new
                // rules with the same regexes keep the decisions (keepDecisionsOf): only an edit of a
                // regex rule makes every topic pay the regex scan again.
                TopicRules rules =
                    seen != null && seen.rules.shown.equals(parsed.rules.shown) ? seen.rules : parsed.rules;
                next = new Snapshot(seen, parsed.ids, rules, racks.get(), "file:" + path, null, null, true, now);
            } catch (NoSuchFileException e) {
                next = failed(seen, FILE_MISSING, e, now);
            } catch (MalformedRule e) {
                next = failed(seen, MALFORMED, e, now);
            } catch (Exception e) {
                next = failed(seen, UNREADABLE, e, now);
            }
            if (snapshot.compareAndSet(seen, next)) {
                report(seen, next);
            }
            return next;
        }

        // After a good read the last good set stays (frozen), whatever the failure: a deleted file
        // must not promote every observer. Before one there is no last good set, so the env ids
        // stand in.
        private Snapshot failed(Snapshot seen, String fault, Exception error, long now) {
            if (seen != null && seen.fileRead) {
                return new Snapshot(seen, seen.ids, seen.rules, racks.get(), "frozen:" + fault, fault, error, true,
                    now);
            }
            String fromEnv = env.apply(IDS_ENV);
            if (fromEnv == null) {
                return new Snapshot(seen, Collections.<Integer>emptySet(), TopicRules.EMPTY, racks.get(), "none", fault,
                    error, false, now);
            }
            return new Snapshot(seen, parse(fromEnv), TopicRules.EMPTY, racks.get(), "env:" + IDS_ENV, fault, error,
                false, now);
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
            } else if (!next.ids.equals(seen.ids) || !next.rules.shown.equals(seen.rules.shown)) {
                event = "change";
            } else if (!next.racksShown.equals(seen.racksShown)) {
                event = "racks";
            } else {
                return;
            }
            audit(event, seen, next);
        }

        private void audit(String event, Snapshot seen, Snapshot next) {
            Set<Integer> before = seen == null ? Collections.<Integer>emptySet() : seen.ids;
            Set<Integer> after = next.ids;
            // The rules field only when a topic rule is or was in force, so old files log as before;
            // the racks field only when a rule names a rack.
            String rules = next.rules.shown.isEmpty() && (seen == null || seen.rules.shown.isEmpty())
                ? "" : " rules=" + (next.rules.shown.isEmpty() ? "[]" : next.rules.shown);
            String racksField = next.rules.racks.isEmpty() ? "" : " racks=[" + next.racksShown + "]";
            LOG.info("OBSERVER AUDIT registry=controller node=- event={} source={} before={} after={} added={} "
                    + "removed={} epochMs={}{}{}", event, next.source, show(before), show(after),
                show(minus(after, before)), show(minus(before, after)), System.currentTimeMillis(), rules, racksField);
        }

        private String warning(Snapshot s) {
            String why = s.fault.equals(FILE_MISSING) ? "it does not exist"
                : s.fault.equals(MALFORMED) ? s.error.getMessage() : s.error.toString();
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
        final TopicRules rules;
        // The rack view the rules' rack items were resolved against.
        final java.util.Map<Integer, String> racks;
        // Each rack a rule names -> the brokers known in it.
        private final java.util.TreeMap<String, Set<Integer>> racked = new java.util.TreeMap<>();
        final String racksShown;
        final Set<Integer> union;
        final String source;
        final String fault;
        final Exception error;
        final boolean fileRead;
        final long loadedAt;

        // A topic's observers, resolved once and kept while the ids, rules and rack view stay the
        // same: a new snapshot of an unchanged file (every 5 s) shares its predecessor's, so it
        // resolves no topic again.
        private final java.util.concurrent.ConcurrentHashMap<String, Resolved> byTopic;

        Snapshot(Snapshot prior, Set<Integer> ids, TopicRules rules, java.util.Map<Integer, String> racks,
                 String source, String fault, Exception error, boolean fileRead, long loadedAt) {
            this.byTopic = prior != null && prior.rules == rules && prior.racks == racks && prior.ids.equals(ids)
                ? prior.byTopic : new java.util.concurrent.ConcurrentHashMap<String, Resolved>();
            this.ids = ids;
            this.rules = rules;
            this.racks = racks;
            Set<Integer> all = new HashSet<>(ids);
            all.addAll(rules.ids);
            for (String rack : rules.racks) {
                Set<Integer> in = new HashSet<>();
                for (java.util.Map.Entry<Integer, String> e : racks.entrySet()) {
                    if (e.getValue().equals(rack)) {
                        in.add(e.getKey());
                    }
                }
                racked.put(rack, in);
                all.addAll(in);
            }
            StringBuilder shown = new StringBuilder();
            for (java.util.Map.Entry<String, Set<Integer>> e : racked.entrySet()) {
                shown.append(shown.length() > 0 ? ";" : "").append(e.getKey()).append(':').append(showList(e.getValue()));
            }
            this.racksShown = shown.toString();
            this.union = Collections.unmodifiableSet(all);
            this.source = source;
            this.fault = fault;
            this.error = error;
            this.fileRead = fileRead;
            this.loadedAt = loadedAt;
        }

        private Resolved resolved(String topic) {
            Resolved known = byTopic.get(topic);
            if (known != null) {
                return known;
            }
            Spec spec = rules.resolve(topic);
            Resolved r;
            if (spec == null) {
                r = new Resolved(ids, false);
            } else {
                Set<Integer> all = new HashSet<>(spec.ids);
                for (String rack : spec.racks) {
                    all.addAll(racked.get(rack));
                }
                r = new Resolved(Collections.unmodifiableSet(all), !spec.racks.isEmpty());
            }
            if (byTopic.mappingCount() >= MAX_TOPICS_HELD) {
                byTopic.clear();
            }
            byTopic.putIfAbsent(topic, r);
            return r;
        }

        Set<Integer> observersOf(String topic) {
            return rules.isEmpty() ? ids : resolved(topic).observers;
        }

        // Null `topic` asks for the union. A broker whose rack is not known is an observer wherever
        // a rack item could name it.
        boolean isObserver(String topic, int brokerId) {
            if (topic == null) {
                return union.contains(brokerId) || (!rules.racks.isEmpty() && !racks.containsKey(brokerId));
            }
            if (rules.isEmpty()) {
                return ids.contains(brokerId);
            }
            Resolved r = resolved(topic);
            return r.observers.contains(brokerId) || (r.namesRack && !racks.containsKey(brokerId));
        }
    }

    private static final class Resolved {
        final Set<Integer> observers;
        final boolean namesRack;

        Resolved(Set<Integer> observers, boolean namesRack) {
            this.observers = observers;
            this.namesRack = namesRack;
        }
    }

    /** A rule's observers as written: broker ids and rack names. */
    static final class Spec {
        static final Spec NONE = new Spec(Collections.<Integer>emptySet(), Collections.<String>emptySet());
        final Set<Integer> ids;
        final Set<String> racks;

        Spec(Set<Integer> ids, Set<String> racks) {
            this.ids = ids;
            this.racks = racks;
        }
    }

    /**
     * A {@code regex:} rule's pattern, in the pattern language of docs/observer-ids.md
     * ("Patterns"): a subset of java.util.regex that this class, the broker's ObserverIds and okp
     * (src/observers/pattern.rs) read and match with one engine, line for line the same, so a rule
     * means one thing everywhere. Anything else is refused with its position and reason. Matching
     * is one pass over the name through at most {@code MAX_STEPS} steps: no backtracking, whatever
     * the pattern.
     */
    static final class TopicPattern {
        static final int MAX_CHARS = 4096;
        static final int MAX_DEPTH = 16;
        static final int MAX_COUNT = 249;
        static final long MAX_STEPS = 5000;

        private static final int CHAR = 0;
        private static final int SPLIT = 1;
        private static final int JUMP = 2;
        private static final int MATCH = 3;
        private static final int CAT = 4;
        private static final int ALT = 5;
        private static final int REPEAT = 6;

        /** A pattern refused: the 0-based position it was found at, and why. */
        static final class Refused extends Exception {
            private static final long serialVersionUID = 1L;
            final int at;
            final String reason;

            Refused(int at, String reason) {
                super(reason);
                this.at = at;
                this.reason = reason;
            }
        }

        /** A node of the parsed pattern: one character of a set, a sequence, a choice, a repetition. */
        private static final class Node {
            final int type;
            long lo;
            long hi;
            boolean any;
            boolean rest;
            java.util.List<Node> parts;
            int min;
            int max;

            Node(int type) {
                this.type = type;
            }

            long steps() {
                long cap = MAX_STEPS + 1;
                switch (type) {
                    case CHAR:
                        return 1;
                    case CAT: {
                        long sum = 0;
                        for (Node p : parts) {
                            sum += p.steps();
                        }
                        return Math.min(sum, cap);
                    }
                    case ALT: {
                        long sum = 2L * (parts.size() - 1);
                        for (Node p : parts) {
                            sum += p.steps();
                        }
                        return Math.min(sum, cap);
                    }
                    default: {
                        long f = parts.get(0).steps();
                        long fixed = f * min;
                        return Math.min(max < 0 ? fixed + f + 2 : fixed + (long) (max - min) * (f + 1), cap);
                    }
                }
            }
        }

        final String source;
        private int size;
        private int[] kind = new int[16];
        private long[] lo = new long[16];
        private long[] hi = new long[16];
        private boolean[] any = new boolean[16];
        private boolean[] rest = new boolean[16];
        private int[] to1 = new int[16];
        private int[] to2 = new int[16];

        private TopicPattern(String source) {
            this.source = source;
        }

        /** Reads {@code source} in the pattern language. */
        static TopicPattern compile(String source) throws Refused {
            int n = source.length();
            if (n == 0) {
                throw new Refused(0, "empty");
            }
            if (n > MAX_CHARS) {
                throw new Refused(0, "longer than 4096 characters");
            }
            int start = source.charAt(0) == '^' ? 1 : 0;
            int end = n;
            if (end > start && source.charAt(end - 1) == '$' && (end < 2 || source.charAt(end - 2) != '\\')) {
                end--;
            }
            Parser p = new Parser(source.substring(0, end), start);
            Node node = p.alternation();
            if (node.steps() > MAX_STEPS) {
                throw new Refused(0, "over 5000 steps once its counts are expanded");
            }
            TopicPattern out = new TopicPattern(source);
            out.emit(node);
            out.push(MATCH, 0, 0, false, false, 0, 0);
            return out;
        }

        /** Whether the whole of {@code name} matches: each step visited at most once per character. */
        boolean matches(String name) {
            int[] current = new int[size];
            int[] next = new int[size];
            int[] mark = new int[size];
            java.util.Arrays.fill(mark, -1);
            int[] stack = new int[2 * size + 2];
            int count = close(0, 0, current, 0, mark, stack);
            for (int i = 0; i < name.length(); i++) {
                char c = name.charAt(i);
                int nextCount = 0;
                for (int j = 0; j < count; j++) {
                    int pc = current[j];
                    if (kind[pc] == CHAR && holds(pc, c)) {
                        nextCount = close(pc + 1, i + 1, next, nextCount, mark, stack);
                    }
                }
                int[] swap = current;
                current = next;
                next = swap;
                count = nextCount;
                if (count == 0) {
                    return false;
                }
            }
            for (int j = 0; j < count; j++) {
                if (kind[current[j]] == MATCH) {
                    return true;
                }
            }
            return false;
        }

        private boolean holds(int pc, char c) {
            if (any[pc]) {
                return true;
            }
            if (c >= 128) {
                return rest[pc];
            }
            return c < 64 ? (lo[pc] & (1L << c)) != 0 : (hi[pc] & (1L << (c - 64))) != 0;
        }

        // Adds to list every step reachable from `from` without consuming a character that consumes
        // one or matches, each once per generation; returns the list's new length.
        private int close(int from, int generation, int[] list, int count, int[] mark, int[] stack) {
            int top = 0;
            stack[top++] = from;
            while (top > 0) {
                int pc = stack[--top];
                if (mark[pc] == generation) {
                    continue;
                }
                mark[pc] = generation;
                switch (kind[pc]) {
                    case JUMP:
                        stack[top++] = pc + to1[pc];
                        break;
                    case SPLIT:
                        stack[top++] = pc + to2[pc];
                        stack[top++] = pc + to1[pc];
                        break;
                    default:
                        list[count++] = pc;
                }
            }
            return count;
        }

        private int push(int k, long l, long h, boolean a, boolean r, int t1, int t2) {
            if (size == kind.length) {
                int grown = size * 2;
                kind = java.util.Arrays.copyOf(kind, grown);
                lo = java.util.Arrays.copyOf(lo, grown);
                hi = java.util.Arrays.copyOf(hi, grown);
                any = java.util.Arrays.copyOf(any, grown);
                rest = java.util.Arrays.copyOf(rest, grown);
                to1 = java.util.Arrays.copyOf(to1, grown);
                to2 = java.util.Arrays.copyOf(to2, grown);
            }
            kind[size] = k;
            lo[size] = l;
            hi[size] = h;
            any[size] = a;
            rest[size] = r;
            to1[size] = t1;
            to2[size] = t2;
            return size++;
        }

        // Appends the steps of a node; targets are relative, so a node's steps can be repeated.
        private void emit(Node node) {
            switch (node.type) {
                case CHAR:
                    push(CHAR, node.lo, node.hi, node.any, node.rest, 0, 0);
                    break;
                case CAT:
                    for (Node p : node.parts) {
                        emit(p);
                    }
                    break;
                case ALT: {
                    int[] jumps = new int[node.parts.size()];
                    int last = node.parts.size() - 1;
                    for (int i = 0; i < last; i++) {
                        int split = push(SPLIT, 0, 0, false, false, 1, 0);
                        emit(node.parts.get(i));
                        jumps[i] = push(JUMP, 0, 0, false, false, 0, 0);
                        to2[split] = size - split;
                    }
                    emit(node.parts.get(last));
                    for (int i = 0; i < last; i++) {
                        to1[jumps[i]] = size - jumps[i];
                    }
                    break;
                }
                default: {
                    Node inner = node.parts.get(0);
                    for (int i = 0; i < node.min; i++) {
                        emit(inner);
                    }
                    if (node.max < 0) {
                        int split = push(SPLIT, 0, 0, false, false, 1, 0);
                        emit(inner);
                        push(JUMP, 0, 0, false, false, split - size, 0);
                        to2[split] = size - split;
                    } else {
                        for (int i = node.min; i < node.max; i++) {
                            int split = push(SPLIT, 0, 0, false, false, 1, 0);
                            emit(inner);
                            to2[split] = size - split;
                        }
                    }
                }
            }
        }

        // A character as the reasons quote it: itself when printable ASCII, else U+XXXX.
        static String shown(char c) {
            if (c > ' ' && c <= '~') {
                return "'" + c + "'";
            }
            return String.format(java.util.Locale.ROOT, "U+%04X", (int) c);
        }

        private static boolean isLiteral(char c) {
            return isAsciiAlnum(c) || c == '_' || c == '-';
        }

        private static boolean isAsciiAlnum(char c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        }

        private static Node set(long l, long h, boolean a, boolean r) {
            Node n = new Node(CHAR);
            n.lo = l;
            n.hi = h;
            n.any = a;
            n.rest = r;
            return n;
        }

        private static long[] add(long[] set, char from, char to) {
            for (char c = from; c <= to; c++) {
                if (c < 64) {
                    set[0] |= 1L << c;
                } else {
                    set[1] |= 1L << (c - 64);
                }
            }
            return set;
        }

        private static long[] digits() {
            return add(new long[2], '0', '9');
        }

        private static long[] word() {
            long[] s = add(add(add(digits(), 'a', 'z'), 'A', 'Z'), '_', '_');
            return s;
        }

        private static final class Parser {
            private final String chars;
            private int at;
            private int depth;

            Parser(String chars, int at) {
                this.chars = chars;
                this.at = at;
            }

            private int peek() {
                return at < chars.length() ? chars.charAt(at) : -1;
            }

            private int peek(int i) {
                return i < chars.length() ? chars.charAt(i) : -1;
            }

            // SEQ ('|' SEQ)*, up to a ')' or the end.
            Node alternation() throws Refused {
                java.util.List<Node> parts = new java.util.ArrayList<>();
                parts.add(sequence());
                while (peek() == '|') {
                    at++;
                    parts.add(sequence());
                }
                if (parts.size() == 1) {
                    return parts.get(0);
                }
                Node n = new Node(ALT);
                n.parts = parts;
                return n;
            }

            // PIECE+, up to a '|', a ')' or the end.
            private Node sequence() throws Refused {
                java.util.List<Node> parts = new java.util.ArrayList<>();
                while (peek() >= 0) {
                    int c = peek();
                    if (c == ')' && depth == 0) {
                        throw new Refused(at, "')' without '('");
                    }
                    if (c == '|' || c == ')') {
                        break;
                    }
                    parts.add(piece());
                }
                if (parts.isEmpty()) {
                    throw new Refused(at, "an empty alternative");
                }
                if (parts.size() == 1) {
                    return parts.get(0);
                }
                Node n = new Node(CAT);
                n.parts = parts;
                return n;
            }

            // ATOM QUANT?
            private Node piece() throws Refused {
                Node atom = atom();
                int min;
                int max;
                int c = peek();
                if (c == '*') {
                    min = 0;
                    max = -1;
                    at++;
                } else if (c == '+') {
                    min = 1;
                    max = -1;
                    at++;
                } else if (c == '?') {
                    min = 0;
                    max = 1;
                    at++;
                } else if (c == '{') {
                    int[] count = count();
                    min = count[0];
                    max = count[1];
                } else {
                    return atom;
                }
                c = peek();
                if (c == '*' || c == '+' || c == '?' || c == '{') {
                    throw new Refused(at, "a quantifier after a quantifier (no lazy or possessive forms)");
                }
                Node n = new Node(REPEAT);
                n.parts = java.util.Collections.singletonList(atom);
                n.min = min;
                n.max = max;
                return n;
            }

            // {N}, {N,} or {N,M}: N and M of 1-3 digits, N <= M <= 249; max -1: unbounded.
            private int[] count() throws Refused {
                int open = at;
                String bad = "a count is {N}, {N,} or {N,M} with N <= M <= 249";
                at++;
                int min = number();
                if (min < 0) {
                    throw new Refused(open, bad);
                }
                int max;
                if (peek() == '}') {
                    max = min;
                } else if (peek() == ',') {
                    at++;
                    if (peek() == '}') {
                        max = -1;
                    } else {
                        max = number();
                        if (max < 0) {
                            throw new Refused(open, bad);
                        }
                    }
                } else {
                    throw new Refused(open, bad);
                }
                if (peek() != '}' || min > MAX_COUNT || (max >= 0 && (max > MAX_COUNT || max < min))) {
                    throw new Refused(open, bad);
                }
                at++;
                return new int[] {min, max};
            }

            private int number() {
                int from = at;
                int value = 0;
                while (at < chars.length() && at - from < 3 && chars.charAt(at) >= '0' && chars.charAt(at) <= '9') {
                    value = value * 10 + (chars.charAt(at) - '0');
                    at++;
                }
                return at == from ? -1 : value;
            }

            private Node atom() throws Refused {
                char c = chars.charAt(at);
                switch (c) {
                    case '(':
                        return group();
                    case '[':
                        return klass();
                    case '.':
                        at++;
                        return set(0, 0, true, false);
                    case '\\': {
                        long[] s = escape();
                        return set(s[0], s[1], false, false);
                    }
                    case '*':
                    case '+':
                    case '?':
                    case '{':
                        throw new Refused(at, "nothing to repeat");
                    default:
                        if (isLiteral(c)) {
                            at++;
                            long[] s = add(new long[2], c, c);
                            return set(s[0], s[1], false, false);
                        }
                        throw new Refused(at, shown(c) + " is not in the pattern language");
                }
            }

            // \. \- \d \w
            private long[] escape() throws Refused {
                int c = peek(at + 1);
                if (c < 0) {
                    throw new Refused(at, "a \\ ends the pattern");
                }
                long[] s;
                if (c == '.' || c == '-') {
                    s = add(new long[2], (char) c, (char) c);
                } else if (c == 'd') {
                    s = digits();
                } else if (c == 'w') {
                    s = word();
                } else {
                    throw new Refused(at, "\\ before " + shown((char) c) + ": the escapes are \\. \\- \\d \\w");
                }
                at += 2;
                return s;
            }

            // '(' ALT ')' or '(?:' ALT ')'
            private Node group() throws Refused {
                int open = at;
                depth++;
                if (depth > MAX_DEPTH) {
                    throw new Refused(open, "groups nested deeper than 16");
                }
                at++;
                if (peek() == '?') {
                    if (peek(at + 1) != ':') {
                        throw new Refused(open, "'(?' other than '(?:' (no flags, names or lookaround)");
                    }
                    at += 2;
                }
                Node inner = alternation();
                if (peek() != ')') {
                    throw new Refused(open, "a group not closed");
                }
                at++;
                depth--;
                return inner;
            }

            private static int kindOf(char c) {
                if (c >= '0' && c <= '9') {
                    return 1;
                }
                if (c >= 'a' && c <= 'z') {
                    return 2;
                }
                if (c >= 'A' && c <= 'Z') {
                    return 3;
                }
                return 0;
            }

            // '[' '^'? ITEM+ ']'
            private Node klass() throws Refused {
                int open = at;
                at++;
                boolean negated = peek() == '^';
                if (negated) {
                    at++;
                }
                long[] set = new long[2];
                int items = 0;
                while (true) {
                    int c = peek();
                    if (c < 0) {
                        throw new Refused(open, "a class not closed");
                    }
                    if (c == ']') {
                        break;
                    }
                    int item = at;
                    int after = peek(item + 1);
                    if (c == '-' && after == ']') {
                        add(set, '-', '-');
                        at++;
                    } else if (c == '\\' && (after == 'd' || after == 'w')) {
                        long[] s = escape();
                        set[0] |= s[0];
                        set[1] |= s[1];
                    } else {
                        char from = classChar();
                        if (peek() == '-' && peek(at + 1) >= 0 && peek(at + 1) != ']') {
                            at++;
                            char to = classChar();
                            if (kindOf(from) == 0 || kindOf(from) != kindOf(to) || from > to) {
                                throw new Refused(item,
                                    "a range joins two digits, two lowercase or two uppercase letters in order");
                            }
                            add(set, from, to);
                        } else {
                            add(set, from, from);
                        }
                    }
                    items++;
                }
                if (items == 0) {
                    throw new Refused(open, "an empty class");
                }
                at++;
                return negated ? set(~set[0], ~set[1], false, true) : set(set[0], set[1], false, false);
            }

            // One character of a class: a letter, digit, '_', '.', \. or \-.
            private char classChar() throws Refused {
                char c = chars.charAt(at);
                if (c == '\\') {
                    int e = peek(at + 1);
                    if (e == '.' || e == '-') {
                        at += 2;
                        return (char) e;
                    }
                    if (e < 0) {
                        throw new Refused(at, "a \\ ends the pattern");
                    }
                    throw new Refused(at, "\\ before " + shown((char) e) + " in a class: the escapes are \\. \\- \\d \\w");
                }
                if (isAsciiAlnum(c) || c == '_' || c == '.') {
                    at++;
                    return c;
                }
                if (c == '-') {
                    throw new Refused(at, "'-' in a class stands last or as \\-");
                }
                throw new Refused(at, shown(c) + " in a class");
            }
        }
    }

    /** A rule line that cannot be read; the message names its line and column. */
    static final class MalformedRule extends Exception {
        private static final long serialVersionUID = 1L;

        MalformedRule(String message) {
            super(message);
        }
    }

    static final class Parsed {
        final Set<Integer> ids;
        final TopicRules rules;

        Parsed(Set<Integer> ids, TopicRules rules) {
            this.ids = ids;
            this.rules = rules;
        }
    }

    /**
     * The topic rules of one file. {@code shown} is their canonical text for the audit line and for
     * comparing two reads: exact names sorted, then prefixes sorted, then regexes in file order.
     *
     * <p>{@link #resolve} costs the same whatever the number of rules: the exact name by a hash
     * map, the longest prefix by a walk down a trie of the prefixes (one step per character of the
     * name), and the first regex by a decision kept per topic name: a topic pays the scan of every
     * regex the first time it is asked about, and never again until the regexes themselves are
     * edited. {@link #resolveLinear} is the scan that
     * replaced, kept as the reference the differential test holds {@code resolve} to.
     */
    static final class TopicRules {
        static final TopicRules EMPTY = new TopicRules(new java.util.TreeMap<String, Spec>(),
            new java.util.TreeMap<String, Spec>(), new java.util.ArrayList<TopicPattern>(),
            new java.util.ArrayList<Spec>());

        private final java.util.TreeMap<String, Spec> exact;
        private final java.util.TreeMap<String, Spec> prefixes;
        private final java.util.List<TopicPattern> regexes;
        private final java.util.List<Spec> regexSets;
        private final java.util.HashMap<String, Spec> exactIndex;
        private final PrefixNode prefixTrie = new PrefixNode();
        // Topic name -> the position of the first regex that matches it, -1 for none; at most
        // MAX_TOPICS_HELD. Shared with the rules of the next read when their regexes are the same
        // patterns in the same order (keepDecisionsOf), set before either is published.
        private java.util.concurrent.ConcurrentHashMap<String, Integer> decided =
            new java.util.concurrent.ConcurrentHashMap<>();
        private final String regexSources;
        final Set<Integer> ids = new HashSet<>();
        final Set<String> racks = new HashSet<>();
        final String shown;

        TopicRules(java.util.TreeMap<String, Spec> exact, java.util.TreeMap<String, Spec> prefixes,
                   java.util.List<TopicPattern> regexes, java.util.List<Spec> regexSets) {
            this.exact = exact;
            this.prefixes = prefixes;
            this.regexes = regexes;
            this.regexSets = regexSets;
            this.exactIndex = new java.util.HashMap<>(exact);
            StringBuilder sources = new StringBuilder();
            for (TopicPattern p : regexes) {
                // A pattern is one word of its line: no newline in it.
                sources.append(p.source).append('\n');
            }
            this.regexSources = sources.toString();
            for (java.util.Map.Entry<String, Spec> e : prefixes.entrySet()) {
                prefixTrie.add(e.getKey(), e.getValue());
            }
            StringBuilder out = new StringBuilder();
            for (java.util.Map.Entry<String, Spec> e : exact.entrySet()) {
                out.append(out.length() > 0 ? ";" : "").append("topic:").append(e.getKey()).append('=')
                    .append(showList(e.getValue()));
                ids.addAll(e.getValue().ids);
                racks.addAll(e.getValue().racks);
            }
            for (java.util.Map.Entry<String, Spec> e : prefixes.entrySet()) {
                out.append(out.length() > 0 ? ";" : "").append("prefix:").append(e.getKey()).append('=')
                    .append(showList(e.getValue()));
                ids.addAll(e.getValue().ids);
                racks.addAll(e.getValue().racks);
            }
            for (int i = 0; i < regexes.size(); i++) {
                out.append(out.length() > 0 ? ";" : "").append("regex:").append(regexes.get(i).source).append('=')
                    .append(showList(regexSets.get(i)));
                ids.addAll(regexSets.get(i).ids);
                racks.addAll(regexSets.get(i).racks);
            }
            this.shown = out.toString();
        }

        boolean isEmpty() {
            return exact.isEmpty() && prefixes.isEmpty() && regexes.isEmpty();
        }

        // Most specific first: the exact name, the longest prefix, the first regex in the file.
        // Null when no rule names the topic.
        Spec resolve(String topic) {
            Spec set = exactIndex.get(topic);
            if (set != null) {
                return set;
            }
            set = prefixTrie.longest(topic);
            if (set != null || regexes.isEmpty()) {
                return set;
            }
            Integer known = decided.get(topic);
            int first = -1;
            if (known != null) {
                first = known;
            } else {
                for (int i = 0; i < regexes.size() && first < 0; i++) {
                    if (regexes.get(i).matches(topic)) {
                        first = i;
                    }
                }
                if (decided.mappingCount() >= MAX_TOPICS_HELD) {
                    decided.clear();
                }
                decided.put(topic, first);
            }
            return first < 0 ? null : regexSets.get(first);
        }

        // An edit that leaves the regexes as they were (a topic: or prefix: rule added, changed or
        // removed: what okp's promote, demote and place write) keeps the decisions `prior` made,
        // so no topic pays the regex scan again. Called on freshly parsed rules, before they are
        // published.
        void keepDecisionsOf(TopicRules prior) {
            if (prior != null && prior.regexSources.equals(regexSources)) {
                decided = prior.decided;
            }
        }

        // resolve as a scan of every rule: the reference for the differential test and the bench.
        Spec resolveLinear(String topic) {
            Spec set = exact.get(topic);
            if (set != null) {
                return set;
            }
            String longest = null;
            for (String prefix : prefixes.keySet()) {
                if (topic.startsWith(prefix) && (longest == null || prefix.length() > longest.length())) {
                    longest = prefix;
                }
            }
            if (longest != null) {
                return prefixes.get(longest);
            }
            for (int i = 0; i < regexes.size(); i++) {
                if (regexes.get(i).matches(topic)) {
                    return regexSets.get(i);
                }
            }
            return null;
        }
    }

    /** The prefix rules as a trie: the node at the end of a prefix holds its list. */
    private static final class PrefixNode {
        private Spec spec;
        private java.util.HashMap<Character, PrefixNode> next;

        void add(String prefix, Spec set) {
            PrefixNode node = this;
            for (int i = 0; i < prefix.length(); i++) {
                if (node.next == null) {
                    node.next = new java.util.HashMap<>(4);
                }
                Character c = prefix.charAt(i);
                PrefixNode child = node.next.get(c);
                if (child == null) {
                    child = new PrefixNode();
                    node.next.put(c, child);
                }
                node = child;
            }
            node.spec = set;
        }

        // The list of the longest prefix of `topic` that is a rule, or null.
        Spec longest(String topic) {
            Spec found = null;
            PrefixNode node = this;
            for (int i = 0; i < topic.length() && node.next != null; i++) {
                node = node.next.get(topic.charAt(i));
                if (node == null) {
                    break;
                }
                if (node.spec != null) {
                    found = node.spec;
                }
            }
            return found;
        }
    }

    // Ids ascending, then rack items by name.
    private static String showList(Spec spec) {
        if (spec.ids.isEmpty() && spec.racks.isEmpty()) {
            return "none";
        }
        StringBuilder out = new StringBuilder();
        for (Integer id : new TreeSet<>(spec.ids)) {
            out.append(out.length() > 0 ? "," : "").append(id);
        }
        for (String rack : new TreeSet<>(spec.racks)) {
            out.append(out.length() > 0 ? "," : "").append("rack:").append(rack);
        }
        return out.toString();
    }

    private static String showList(Set<Integer> set) {
        if (set.isEmpty()) {
            return "none";
        }
        StringBuilder out = new StringBuilder();
        for (Integer id : new TreeSet<>(set)) {
            out.append(out.length() > 0 ? "," : "").append(id);
        }
        return out.toString();
    }

    private static final String[] KINDS = {"topic:", "prefix:", "regex:"};
    private static final String LEGAL_NAME = "[a-zA-Z0-9._-]{1,249}";

    // Java's \s: space, \t, \n, \x0B, \f, \r.
    private static boolean isSpace(char c) {
        return c == ' ' || (c >= '\t' && c <= '\r');
    }

    /** The cluster-wide ids and the topic rules of a file's text. */
    static Parsed parseFile(String text) throws MalformedRule {
        StringBuilder plain = new StringBuilder();
        java.util.TreeMap<String, Spec> exact = new java.util.TreeMap<>();
        java.util.TreeMap<String, Spec> prefixes = new java.util.TreeMap<>();
        java.util.List<TopicPattern> regexes = new java.util.ArrayList<>();
        java.util.List<Spec> regexSets = new java.util.ArrayList<>();
        Set<String> seen = new HashSet<>();
        String[] lines = text.split("\r\n|\r|\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            int hash = line.indexOf('#');
            String body = hash < 0 ? line : line.substring(0, hash);
            int start = 0;
            while (start < body.length() && isSpace(body.charAt(start))) {
                start++;
            }
            String kind = null;
            for (String k : KINDS) {
                if (body.startsWith(k, start)) {
                    kind = k;
                }
            }
            if (start >= body.length() || kind == null) {
                plain.append(body).append('\n');
                continue;
            }
            String where = "line " + (i + 1) + ", column ";
            java.util.List<String> tokens = new java.util.ArrayList<>();
            java.util.List<Integer> cols = new java.util.ArrayList<>();
            int at = 0;
            while (at < body.length()) {
                if (isSpace(body.charAt(at))) {
                    at++;
                } else {
                    int from = at;
                    while (at < body.length() && !isSpace(body.charAt(at))) {
                        at++;
                    }
                    tokens.add(body.substring(from, at));
                    cols.add(from + 1);
                }
            }
            if (tokens.size() != 2 || !tokens.get(1).startsWith("observers=")) {
                throw new MalformedRule(where + (start + 1) + ": a topic rule is SELECTOR observers=LIST");
            }
            String selector = tokens.get(0);
            int col = cols.get(0);
            String value = selector.substring(kind.length());
            Spec set = parseList(tokens.get(1).substring("observers=".length()), where,
                cols.get(1) + "observers=".length());
            if (!seen.add(selector)) {
                throw new MalformedRule(where + col + ": a second rule for " + selector);
            }
            if (kind.equals("regex:")) {
                TopicPattern pattern;
                try {
                    pattern = TopicPattern.compile(value);
                } catch (TopicPattern.Refused e) {
                    throw new MalformedRule(where + (col + kind.length() + e.at) + ": not a pattern of observer.ids ("
                        + e.reason + "): " + value);
                }
                regexes.add(pattern);
                regexSets.add(set);
            } else {
                if (!value.matches(LEGAL_NAME)) {
                    throw new MalformedRule(where + (col + kind.length()) + ": not a topic name: " + value);
                }
                (kind.equals("topic:") ? exact : prefixes).put(value, set);
            }
        }
        return new Parsed(parse(plain.toString()), new TopicRules(exact, prefixes, regexes, regexSets));
    }

    private static final String LEGAL_RACK = "[a-zA-Z0-9._/-]{1,255}";

    // `none`, or broker ids and `rack:NAME` items separated by single commas; strict, unlike the
    // cluster-wide ids.
    private static Spec parseList(String list, String where, int col) throws MalformedRule {
        if (list.equals("none")) {
            return Spec.NONE;
        }
        Set<Integer> ids = new HashSet<>();
        Set<String> racks = new HashSet<>();
        int at = col;
        for (String item : list.split(",", -1)) {
            if (item.startsWith("rack:")) {
                String name = item.substring("rack:".length());
                if (!name.matches(LEGAL_RACK)) {
                    throw new MalformedRule(where + at + ": not a rack: \"" + item + "\" (a rack is rack:NAME, NAME of "
                        + "1-255 letters, digits, '.', '_', '-' or '/')");
                }
                racks.add(name);
            } else {
                int id = parseId(item);
                if (id < 0) {
                    throw new MalformedRule(where + at + ": not a broker id: \"" + item
                        + "\" (a list is none, or broker ids and rack:NAME separated by commas)");
                }
                ids.add(id);
            }
            at += item.length() + 1;
        }
        return new Spec(Collections.unmodifiableSet(ids), Collections.unmodifiableSet(racks));
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
