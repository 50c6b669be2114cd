// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The okp authors
package kafka.observer

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, NoSuchFileException, Paths}
import java.util.concurrent.atomic.AtomicReference
import java.util.function.{LongSupplier, Function => JFunction}

import scala.util.control.NonFatal

import org.slf4j.LoggerFactory

/**
 * The broker ids that are observers: replicas that copy the whole log through the normal follower
 * fetch path but are never in the ISR and never leader. Hook sites in core call
 * `kafka.observer.ObserverIds.isObserver(id)` fully qualified, so no upstream import block changes.
 * In ZooKeeper mode the controller's hooks run in a broker JVM and use this registry too.
 *
 * Where the ids come from, re-evaluated at most once per 5 s:
 *  1. the file named by env `KAFKA_OBSERVER_IDS_FILE` (unset or blank: `/opt/kafka/observer.ids`).
 *     An empty file, or one with only comments, means no observers: that is how every observer is
 *     promoted at once.
 *  1. once that file has been read, a read that fails (the file deleted, a directory in its place,
 *     no permission) keeps the last good set: the set is frozen until the file reads again. A
 *     deleted file never promotes anyone (fail safe: any doubt keeps a replica out of the ISR).
 *  1. before any good read (the file never created, or unreadable since start), env
 *     `KAFKA_OBSERVER_BROKER_IDS`; unset, no observers, so the patched broker behaves like upstream.
 *
 * Format, for the file and the env var alike: ids separated by commas and/or whitespace; `#` starts
 * a comment that runs to the end of its line; a token that is not a plain decimal number in
 * 0..2147483647 is ignored, because a stray character written at 3 a.m. must not stop a broker.
 * Topic rules (the file only): a line whose first word starts with `topic:`, `prefix:` or `regex:`
 * is `SELECTOR observers=LIST`, LIST `none` or items separated by commas, each a broker id or
 * `rack:NAME` (every broker whose broker.rack is NAME). A topic's observers are those of its exact
 * rule, else of its longest matching prefix, else of the first regex in the file that matches the
 * whole name, else the cluster-wide ids. A malformed rule line makes the whole read fail (fault
 * `malformed`): the last good set stays, as for an unreadable file, because acting on half a file
 * could promote a topic's observer.
 *
 * Racks come from this node's own view of the brokers, told through [[ObserverIds.brokerRack]] by
 * the ZooKeeper controller (its live brokers), the ZooKeeper broker (UpdateMetadata) and the KRaft
 * broker (each metadata image). A rack is remembered once seen. A broker whose rack this node has
 * not seen is an observer of every topic whose rule names a rack (fail safe: doubt keeps a replica
 * out of the ISR and out of leadership); a broker seen without broker.rack matches no rack item.
 *
 * Nothing here throws. A failed read logs one WARN when the condition starts or changes (missing,
 * unreadable), not one per retry. Every change of the set, the first evaluation, and each freeze and
 * unfreeze log one INFO line in the audit format of okp's docs/observer-ids.md:
 * `OBSERVER AUDIT registry=broker node=- event=.. source=.. before=[..] after=[..] added=[..] removed=[..] epochMs=..`
 *
 * The KRaft controller holds the same rules in `org.apache.kafka.controller.ObserverReplicas`
 * (metadata must not depend on core); a change here must be made there too, and
 * patches/tests/ObserverIdsContractTest.java runs both through the same cases.
 */
object ObserverIds {
  private[observer] val FileEnv = "KAFKA_OBSERVER_IDS_FILE"
  private[observer] val IdsEnv = "KAFKA_OBSERVER_BROKER_IDS"
  private[observer] val DefaultFile = "/opt/kafka/observer.ids"
  private[observer] val TtlNanos: Long = 5L * 1000 * 1000 * 1000
  // The most topics a per-topic map holds (a snapshot's resolutions, the rules' regex decisions)
  // before it is emptied and refilled: topics deleted since the rules were read must not
  // accumulate, and a cluster has far fewer topics than this.
  private[observer] val MaxTopicsHeld: Int = 1 << 18

  private[this] val shared = new ObserverIdCache((name: String) => System.getenv(name), () => System.nanoTime())

  /**
   * True if `brokerId` is an observer of some topic: a cluster-wide id or one a topic rule names.
   * Hooks that do not know the topic ask this, so they keep such a broker out wherever it could be
   * an observer. Cheap: at most one file read per 5 s per broker.
   */
  def isObserver(brokerId: Int): Boolean = shared.isObserver(brokerId)

  /** True if `brokerId` is an observer of `topic`, by the topic's rule or the cluster-wide ids. */
  def isObserver(topic: String, brokerId: Int): Boolean = shared.isObserver(topic, brokerId)

  /** Every id that is an observer of some topic now (an immutable snapshot). */
  def current: Set[Int] = shared.current

  /** The observers of `topic` now. */
  def observersOf(topic: String): Set[Int] = shared.observersOf(topic)

  /**
   * The preferred replica of a partition with these replicas in assignment order: the first one
   * that is not an observer. None when every replica is an observer: such a partition has no
   * preferred replica, so leader balance never counts it and never moves its leadership.
   */
  def preferredReplica(replicas: scala.collection.Seq[Int]): Option[Int] = replicas.find(id => !isObserver(id))

  /** As [[preferredReplica]], with the observers of `topic` (null: not known, the union decides). */
  def preferredReplica(topic: String, replicas: scala.collection.Seq[Int]): Option[Int] =
    shared.preferredReplica(topic, replicas)

  /**
   * The replicas an election of a partition of `topic` may pick, in assignment order: `replicas`
   * without the topic's observers. The ZooKeeper controller's elections (offline, clean and
   * unclean; reassignment; preferred; controlled shutdown) pass this to upstream's algorithms in
   * place of the assignment, so each picks as upstream among the rest, and the preferred replica
   * is the first that is not an observer of the topic.
   */
  def candidates(topic: String, replicas: scala.collection.Seq[Int]): scala.collection.Seq[Int] =
    shared.candidates(topic, replicas)

  /**
   * What the observers now in force are, as a value: equal for two reads with the same ids and
   * rules. The controller counts its imbalance gauge again when it changes.
   */
  def version: AnyRef = shared.version

  /** This node learned that broker `brokerId` has broker.rack `rack` (null: none set). Cheap when nothing changed. */
  def brokerRack(brokerId: Int, rack: String): Unit = shared.brokerRack(brokerId, rack)
}

/**
 * One cache of the observer ids. The broker uses the single instance inside [[ObserverIds]]; tests
 * build their own with a fake environment and clock.
 */
private[observer] final class ObserverIdCache(env: JFunction[String, String], nanoTime: LongSupplier) {
  import ObserverIdCache._

  // The process environment cannot change after start, so the path is fixed for this instance.
  private[this] val path: String = {
    val fromEnv = env.apply(ObserverIds.FileEnv)
    if (fromEnv == null || fromEnv.trim.isEmpty) ObserverIds.DefaultFile else fromEnv
  }

  // Readers pay one volatile read of an immutable snapshot and take no lock. When the snapshot has
  // expired, every thread that notices may reload (harmless, the read is idempotent), but only the
  // one whose compareAndSet wins publishes and logs, so an event is logged once.
  private[this] val snapshot = new AtomicReference[Snapshot](null)

  // The text of the last good read and what it parsed to: a re-read of the same text (every 5 s
  // while nobody edits the file) is not parsed again. Written whole, read once.
  @volatile private[this] var lastParsed: (String, (Set[Int], TopicRules)) = null

  // Broker id -> broker.rack (None: the broker has none) as this node has seen them; immutable,
  // replaced whole on a change, which is rare (a broker's first registration, a rack changed).
  private[this] val racks = new AtomicReference[Map[Int, Option[String]]](Map.empty)

  def brokerRack(brokerId: Int, rack: String): Unit = {
    val told = Option(rack)
    var done = false
    while (!done) {
      val seen = racks.get
      done = seen.get(brokerId).contains(told) || racks.compareAndSet(seen, seen.updated(brokerId, told))
    }
  }

  def isObserver(brokerId: Int): Boolean = fresh.isObserver(null, brokerId)

  def isObserver(topic: String, brokerId: Int): Boolean = fresh.isObserver(topic, brokerId)

  def current: Set[Int] = fresh.union

  def observersOf(topic: String): Set[Int] = fresh.observersOf(topic)

  def version: AnyRef = {
    val s = fresh
    (s.ids, s.rules.shown, s.racksShown)
  }

  def candidates(topic: String, replicas: scala.collection.Seq[Int]): scala.collection.Seq[Int] = {
    val s = fresh
    if (s.union.isEmpty && s.rules.racks.isEmpty) replicas else replicas.filterNot(id => s.isObserver(topic, id))
  }

  def preferredReplica(topic: String, replicas: scala.collection.Seq[Int]): Option[Int] = {
    val s = fresh
    replicas.find(id => !s.isObserver(topic, id))
  }

  private def fresh: Snapshot = {
    val seen = snapshot.get
    val now = nanoTime.getAsLong
    // A difference of nanoTime values stays right when the counter wraps; the wall clock can jump.
    if (seen != null && now - seen.loadedAt < ObserverIds.TtlNanos) {
      val view = racks.get
      if (seen.racks eq view) seen else reracked(seen, view)
    } else reload(seen, now)
  }

  // The rack view changed since `seen` was made: the same ids and rules resolved against it. Only
  // the thread whose compareAndSet wins logs, and only when a rule names a rack whose brokers moved.
  private def reracked(seen: Snapshot, view: Map[Int, Option[String]]): Snapshot = {
    val next =
      new Snapshot(seen, seen.ids, seen.rules, view, seen.source, seen.fault, seen.error, seen.fileRead, seen.loadedAt)
    if (snapshot.compareAndSet(seen, next) && next.racksShown != seen.racksShown) audit("racks", seen, next)
    next
  }

  // A failed read still yields a snapshot with a fresh timestamp, so a broken file costs one read
  // per 5 s, not one per call on the fetch path.
  private def reload(seen: Snapshot, now: Long): Snapshot = {
    val next =
      try {
        val bytes = Files.readAllBytes(Paths.get(path))
        // Ids are ASCII; ISO-8859-1 turns each other byte into one char of an ignored token.
        val text = new String(bytes, StandardCharsets.ISO_8859_1)
        val last = lastParsed
        val (ids, parsed) =
          if (last != null && last._1 == text) last._2
          else {
            val fresh = parseFile(text)
            fresh._2.keepDecisionsOf(if (seen == null) null else seen.rules)
            lastParsed = (text, fresh)
            fresh
          }
        // The same rules as before are kept whole (their trie, their regex decisions); new rules
        // with the same regexes keep the decisions (keepDecisionsOf): only an edit of a regex rule
        // makes every topic pay the regex scan again.
        val rules = if (seen != null && seen.rules.shown == parsed.shown) seen.rules else parsed
        new Snapshot(seen, ids, rules, racks.get, "file:" + path, null, null, true, now)
      } catch {
        case e: NoSuchFileException => failed(seen, FileMissing, e, now)
        case e: MalformedRule => failed(seen, Malformed, e, now)
        case NonFatal(e) => failed(seen, Unreadable, e, now)
      }
    if (snapshot.compareAndSet(seen, next)) report(seen, next)
    next
  }

  // After a good read the last good set stays (frozen), whatever the failure: a deleted file must
  // not promote every observer. Before one there is no last good set, so the env ids stand in.
  private def failed(seen: Snapshot, fault: String, error: Throwable, now: Long): Snapshot =
    if (seen != null && seen.fileRead)
      new Snapshot(seen, seen.ids, seen.rules, racks.get, "frozen:" + fault, fault, error, true, now)
    else {
      val fromEnv = env.apply(ObserverIds.IdsEnv)
      if (fromEnv == null) new Snapshot(seen, Set.empty, TopicRules.Empty, racks.get, "none", fault, error, false, now)
      else
        new Snapshot(seen, parse(fromEnv), TopicRules.Empty, racks.get, "env:" + ObserverIds.IdsEnv, fault, error,
          false, now)
    }

  private def report(seen: Snapshot, next: Snapshot): Unit = {
    val conditionChanged = seen == null || seen.fault != next.fault
    if (next.fault != null && conditionChanged) log.warn(warning(next))
    val event =
      if (seen == null) "initial"
      else if (seen.fileRead && seen.fault != null && next.fault == null) "unfreeze"
      else if (next.fileRead && next.fault != null && conditionChanged) "freeze"
      else if (next.ids != seen.ids || next.rules.shown != seen.rules.shown) "change"
      else if (next.racksShown != seen.racksShown) "racks"
      else null
    if (event != null) audit(event, seen, next)
  }

  private def audit(event: String, seen: Snapshot, next: Snapshot): Unit = {
    val before = if (seen == null) Set.empty[Int] else seen.ids
    val after = next.ids
    // The rules field only when a topic rule is or was in force, so old files log as before; the
    // racks field only when a rule names a rack.
    val rules =
      if (next.rules.shown.isEmpty && (seen == null || seen.rules.shown.isEmpty)) ""
      else " rules=" + (if (next.rules.shown.isEmpty) "[]" else next.rules.shown)
    val racksField = if (next.rules.racks.isEmpty) "" else " racks=[" + next.racksShown + "]"
    log.info(s"OBSERVER AUDIT registry=broker node=- event=$event source=${next.source} before=${show(before)} " +
      s"after=${show(after)} added=${show(after -- before)} removed=${show(before -- after)} " +
      s"epochMs=${System.currentTimeMillis()}$rules$racksField")
  }

  private def warning(s: Snapshot): String = {
    val why =
      if (s.fault == FileMissing) "it does not exist"
      else if (s.fault == Malformed) s.error.getMessage
      else s.error.toString
    val outcome =
      if (s.fileRead) s"keeping the last good set ${show(s.ids)} (frozen) until it reads again; " +
        "an empty file, not a missing one, means no observers"
      else if (s.source == "none") s"no good read yet and env ${ObserverIds.IdsEnv} is unset, so no observers"
      else s"no good read yet, so using env ${ObserverIds.IdsEnv}: ${show(s.ids)}"
    s"Cannot read observer ids file $path ($why); $outcome"
  }
}

private[observer] object ObserverIdCache {
  private val log = LoggerFactory.getLogger("kafka.observer.ObserverIds")

  private val FileMissing = "file-missing"
  private val Unreadable = "unreadable"
  private val Malformed = "malformed"

  // One evaluation: the cluster-wide ids and the topic rules, where they came from (the audit
  // line's source), the failure of this read if any (fault and error null after a good read), and
  // whether the file was ever read. `racks` is the rack view the rules' rack items were resolved
  // against. A topic's observers are resolved once and kept while the ids, rules and rack view stay
  // the same: a new snapshot of an unchanged file (every 5 s) shares `prior`'s, so it resolves no
  // topic again.
  private final class Snapshot(prior: Snapshot, val ids: Set[Int], val rules: TopicRules,
                               val racks: Map[Int, Option[String]], val source: String, val fault: String,
                               val error: Throwable, val fileRead: Boolean, val loadedAt: Long) {
    private[this] val racked: Map[String, Set[Int]] =
      if (rules.racks.isEmpty) Map.empty
      else rules.racks.iterator.map(r => r -> racks.collect { case (id, Some(`r`)) => id }.toSet).toMap

    val union: Set[Int] = ids ++ rules.ids ++ racked.values.flatten

    // Each rack a rule names, with the brokers this node knows in it: the audit line's racks field.
    val racksShown: String =
      racked.toSeq.sortBy(_._1).map { case (r, in) => r + ":" + showList(in) }.mkString(";")

    private val byTopic: java.util.concurrent.ConcurrentHashMap[String, Resolved] =
      if (prior != null && (prior.rules eq rules) && (prior.racks eq racks) && prior.ids == ids) prior.byTopic
      else new java.util.concurrent.ConcurrentHashMap[String, Resolved]()

    private def resolved(topic: String): Resolved = {
      val known = byTopic.get(topic)
      if (known != null) known
      else {
        val r = rules.resolve(topic) match {
          case Some(spec) => new Resolved(spec.ids ++ spec.racks.flatMap(racked), spec.racks.nonEmpty)
          case None => new Resolved(ids, false)
        }
        if (byTopic.mappingCount >= ObserverIds.MaxTopicsHeld) byTopic.clear()
        byTopic.putIfAbsent(topic, r)
        r
      }
    }

    def observersOf(topic: String): Set[Int] = if (rules.isEmpty) ids else resolved(topic).observers

    // Null `topic` (a caller that could not name it) asks for the union. A broker whose rack is not
    // known is an observer wherever a rack item could name it.
    def isObserver(topic: String, brokerId: Int): Boolean =
      if (topic == null) union.contains(brokerId) || (rules.racks.nonEmpty && !racks.contains(brokerId))
      else if (rules.isEmpty) ids.contains(brokerId)
      else {
        val r = resolved(topic)
        r.observers.contains(brokerId) || (r.namesRack && !racks.contains(brokerId))
      }
  }

  private final class Resolved(val observers: Set[Int], val namesRack: Boolean)

  /** The prefix rules as a trie: the node at the end of a prefix holds its list. */
  private final class PrefixNode {
    private var spec: Spec = null
    private var next: java.util.HashMap[Character, PrefixNode] = null

    def add(prefix: String, set: Spec): Unit = {
      var node = this
      for (c <- prefix) {
        if (node.next == null) node.next = new java.util.HashMap[Character, PrefixNode](4)
        var child = node.next.get(c)
        if (child == null) {
          child = new PrefixNode
          node.next.put(c, child)
        }
        node = child
      }
      node.spec = set
    }

    // The list of the longest prefix of `topic` that is a rule, or null.
    def longest(topic: String): Spec = {
      var found: Spec = null
      var node = this
      var i = 0
      while (i < topic.length && node != null && node.next != null) {
        node = node.next.get(topic.charAt(i))
        if (node != null && node.spec != null) found = node.spec
        i += 1
      }
      found
    }
  }

  /** A rule's observers as written: broker ids and rack names. */
  private[observer] final case class Spec(ids: Set[Int], racks: Set[String])

  /** A rule line that cannot be read; the message names its line and column. */
  private[observer] final class MalformedRule(message: String) extends Exception(message)

  /**
   * The topic rules of one file. `shown` is their canonical text for the audit line and for
   * comparing two reads: exact names sorted, then prefixes sorted, then regexes in file order.
   *
   * [[resolve]] costs the same whatever the number of rules: the exact name by a hash map, the
   * longest prefix by a walk down a trie of the prefixes (one step per character of the name), and
   * the first regex by a decision kept per topic name: a topic pays the scan of every regex the first
   * time it is asked about, and never again until the regexes themselves are edited. [[resolveLinear]] is the scan that replaced, kept as the reference the
   * differential test holds `resolve` to.
   */
  private[observer] final class TopicRules(exact: Map[String, Spec], prefixes: Seq[(String, Spec)],
                                           regexes: Seq[(TopicPattern, Spec)]) {
    def isEmpty: Boolean = exact.isEmpty && prefixes.isEmpty && regexes.isEmpty

    private[this] val specs: Seq[Spec] = exact.values.toSeq ++ prefixes.map(_._2) ++ regexes.map(_._2)
    val ids: Set[Int] = specs.foldLeft(Set.empty[Int])(_ ++ _.ids)
    val racks: Set[String] = specs.foldLeft(Set.empty[String])(_ ++ _.racks)

    val shown: String = {
      val parts = exact.toSeq.sortBy(_._1).map { case (name, set) => "topic:" + name + "=" + showList(set) } ++
        prefixes.sortBy(_._1).map { case (prefix, set) => "prefix:" + prefix + "=" + showList(set) } ++
        regexes.map { case (regex, set) => "regex:" + regex.source + "=" + showList(set) }
      parts.mkString(";")
    }

    private[this] val prefixTrie = new PrefixNode
    prefixes.foreach { case (prefix, set) => prefixTrie.add(prefix, set) }

    // Topic name -> the position of the first regex that matches it, -1 for none; at most
    // MaxTopicsHeld. Shared with the rules of the next read when their regexes are the same
    // patterns in the same order (keepDecisionsOf), set before either is published.
    private var decided = new java.util.concurrent.ConcurrentHashMap[String, Integer]()
    // A pattern is one word of its line: no newline in it.
    private val regexSources: String = regexes.map(_._1.source + "\n").mkString
    private[this] val regexesAt = regexes.toIndexedSeq

    // An edit that leaves the regexes as they were (a topic: or prefix: rule added, changed or
    // removed: what okp's promote, demote and place write) keeps the decisions `prior` made, so no
    // topic pays the regex scan again. Called on freshly parsed rules, before they are published.
    def keepDecisionsOf(prior: TopicRules): Unit =
      if (prior != null && prior.regexSources == regexSources) decided = prior.decided

    // Most specific first: the exact name, the longest prefix, the first regex in the file.
    def resolve(topic: String): Option[Spec] = {
      val named = exact.get(topic)
      if (named.isDefined) named
      else {
        val prefixed = prefixTrie.longest(topic)
        if (prefixed != null) Some(prefixed)
        else if (regexes.isEmpty) None
        else {
          val known = decided.get(topic)
          val first =
            if (known != null) known.intValue
            else {
              val i = regexesAt.indexWhere(_._1.matches(topic))
              if (decided.mappingCount >= ObserverIds.MaxTopicsHeld) decided.clear()
              decided.put(topic, Integer.valueOf(i))
              i
            }
          if (first < 0) None else Some(regexesAt(first)._2)
        }
      }
    }

    // resolve as a scan of every rule: the reference for the differential test and the bench.
    def resolveLinear(topic: String): Option[Spec] =
      exact.get(topic)
        .orElse(prefixes.filter(p => topic.startsWith(p._1)).sortBy(-_._1.length).headOption.map(_._2))
        .orElse(regexes.find(_._1.matches(topic)).map(_._2))
  }

  /**
   * A `regex:` rule's pattern, in the pattern language of docs/observer-ids.md ("Patterns"): a
   * subset of java.util.regex that this class, the controller's ObserverReplicas and okp
   * (src/observers/pattern.rs) read and match with one engine, line for line the same, so a rule
   * means one thing everywhere. Anything else is refused with its position and reason. Matching is
   * one pass over the name through at most `MaxSteps` steps: no backtracking, whatever the pattern.
   */
  private[observer] final class TopicPattern private (val source: String) {
    import TopicPattern._

    private var size = 0
    private var kind = new Array[Int](16)
    private var lo = new Array[Long](16)
    private var hi = new Array[Long](16)
    private var any = new Array[Boolean](16)
    private var rest = new Array[Boolean](16)
    private var to1 = new Array[Int](16)
    private var to2 = new Array[Int](16)

    /** Whether the whole of `name` matches: each step visited at most once per character. */
    def matches(name: String): Boolean = {
      var current = new Array[Int](size)
      var next = new Array[Int](size)
      val mark = Array.fill(size)(-1)
      val stack = new Array[Int](2 * size + 2)
      var count = close(0, 0, current, 0, mark, stack)
      var i = 0
      while (i < name.length) {
        val c = name.charAt(i)
        var nextCount = 0
        var j = 0
        while (j < count) {
          val pc = current(j)
          if (kind(pc) == StepChar && holds(pc, c)) nextCount = close(pc + 1, i + 1, next, nextCount, mark, stack)
          j += 1
        }
        val swap = current
        current = next
        next = swap
        count = nextCount
        if (count == 0) return false
        i += 1
      }
      var j = 0
      while (j < count) {
        if (kind(current(j)) == StepMatch) return true
        j += 1
      }
      false
    }

    private def holds(pc: Int, c: Char): Boolean =
      if (any(pc)) true
      else if (c >= 128) rest(pc)
      else if (c < 64) (lo(pc) & (1L << c)) != 0
      else (hi(pc) & (1L << (c - 64))) != 0

    // Adds to list every step reachable from `from` without consuming a character that consumes one
    // or matches, each once per generation; returns the list's new length.
    private def close(from: Int, generation: Int, list: Array[Int], start: Int, mark: Array[Int],
                      stack: Array[Int]): Int = {
      var count = start
      var top = 0
      stack(top) = from
      top += 1
      while (top > 0) {
        top -= 1
        val pc = stack(top)
        if (mark(pc) != generation) {
          mark(pc) = generation
          kind(pc) match {
            case StepJump =>
              stack(top) = pc + to1(pc)
              top += 1
            case StepSplit =>
              stack(top) = pc + to2(pc)
              stack(top + 1) = pc + to1(pc)
              top += 2
            case _ =>
              list(count) = pc
              count += 1
          }
        }
      }
      count
    }

    private def push(k: Int, l: Long, h: Long, a: Boolean, r: Boolean, t1: Int, t2: Int): Int = {
      if (size == kind.length) {
        val grown = size * 2
        kind = java.util.Arrays.copyOf(kind, grown)
        lo = java.util.Arrays.copyOf(lo, grown)
        hi = java.util.Arrays.copyOf(hi, grown)
        any = java.util.Arrays.copyOf(any, grown)
        rest = java.util.Arrays.copyOf(rest, grown)
        to1 = java.util.Arrays.copyOf(to1, grown)
        to2 = java.util.Arrays.copyOf(to2, grown)
      }
      kind(size) = k
      lo(size) = l
      hi(size) = h
      any(size) = a
      rest(size) = r
      to1(size) = t1
      to2(size) = t2
      size += 1
      size - 1
    }

    // Appends the steps of a node; targets are relative, so a node's steps can be repeated.
    private def emit(node: Node): Unit = node.kind match {
      case StepChar => push(StepChar, node.lo, node.hi, node.any, node.rest, 0, 0)
      case NodeCat => node.parts.foreach(emit)
      case NodeAlt =>
        val last = node.parts.size - 1
        val jumps = new Array[Int](last)
        for (i <- 0 until last) {
          val split = push(StepSplit, 0, 0, false, false, 1, 0)
          emit(node.parts(i))
          jumps(i) = push(StepJump, 0, 0, false, false, 0, 0)
          to2(split) = size - split
        }
        emit(node.parts(last))
        for (i <- 0 until last) to1(jumps(i)) = size - jumps(i)
      case _ =>
        val inner = node.parts.head
        for (_ <- 0 until node.min) emit(inner)
        if (node.max < 0) {
          val split = push(StepSplit, 0, 0, false, false, 1, 0)
          emit(inner)
          push(StepJump, 0, 0, false, false, split - size, 0)
          to2(split) = size - split
        } else {
          for (_ <- node.min until node.max) {
            val split = push(StepSplit, 0, 0, false, false, 1, 0)
            emit(inner)
            to2(split) = size - split
          }
        }
    }
  }

  private[observer] object TopicPattern {
    val MaxChars = 4096
    val MaxDepth = 16
    val MaxCount = 249
    val MaxSteps = 5000L

    private final val StepChar = 0
    private final val StepSplit = 1
    private final val StepJump = 2
    private final val StepMatch = 3
    private final val NodeCat = 4
    private final val NodeAlt = 5
    private final val NodeRepeat = 6

    /** A pattern refused: the 0-based position it was found at, and why. */
    final class Refused(val at: Int, val reason: String) extends Exception(reason)

    /** A node of the parsed pattern: one character of a set, a sequence, a choice, a repetition. */
    private final class Node(val kind: Int) {
      var lo = 0L
      var hi = 0L
      var any = false
      var rest = false
      var parts: IndexedSeq[Node] = IndexedSeq.empty
      var min = 0
      var max = 0

      def steps: Long = {
        val cap = MaxSteps + 1
        kind match {
          case StepChar => 1L
          case NodeCat => math.min(parts.map(_.steps).sum, cap)
          case NodeAlt => math.min(parts.map(_.steps).sum + 2L * (parts.size - 1), cap)
          case _ =>
            val f = parts.head.steps
            val fixed = f * min
            math.min(if (max < 0) fixed + f + 2 else fixed + (max - min).toLong * (f + 1), cap)
        }
      }
    }

    /** Reads `source` in the pattern language; throws [[Refused]]. */
    def compile(source: String): TopicPattern = {
      val n = source.length
      if (n == 0) throw new Refused(0, "empty")
      if (n > MaxChars) throw new Refused(0, "longer than 4096 characters")
      val start = if (source.charAt(0) == '^') 1 else 0
      var end = n
      if (end > start && source.charAt(end - 1) == '$' && (end < 2 || source.charAt(end - 2) != '\\')) end -= 1
      val node = new Parser(source.substring(0, end), start).alternation()
      if (node.steps > MaxSteps) throw new Refused(0, "over 5000 steps once its counts are expanded")
      val out = new TopicPattern(source)
      out.emit(node)
      out.push(StepMatch, 0, 0, false, false, 0, 0)
      out
    }

    // A character as the reasons quote it: itself when printable ASCII, else U+XXXX.
    def shown(c: Char): String =
      if (c > ' ' && c <= '~') "'" + c + "'" else String.format(java.util.Locale.ROOT, "U+%04X", Int.box(c.toInt))

    private def isAsciiAlnum(c: Char): Boolean = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')

    private def isLiteral(c: Char): Boolean = isAsciiAlnum(c) || c == '_' || c == '-'

    private def set(l: Long, h: Long, a: Boolean, r: Boolean): Node = {
      val n = new Node(StepChar)
      n.lo = l
      n.hi = h
      n.any = a
      n.rest = r
      n
    }

    private def add(set: Array[Long], from: Char, to: Char): Array[Long] = {
      var c = from.toInt
      while (c <= to) {
        if (c < 64) set(0) |= 1L << c else set(1) |= 1L << (c - 64)
        c += 1
      }
      set
    }

    private def digits: Array[Long] = add(new Array[Long](2), '0', '9')

    private def word: Array[Long] = add(add(add(digits, 'a', 'z'), 'A', 'Z'), '_', '_')

    private def kindOf(c: Char): Int =
      if (c >= '0' && c <= '9') 1 else if (c >= 'a' && c <= 'z') 2 else if (c >= 'A' && c <= 'Z') 3 else 0

    private final class Parser(chars: String, start: Int) {
      private var at = start
      private var depth = 0

      private def peek: Int = peekAt(at)

      private def peekAt(i: Int): Int = if (i < chars.length) chars.charAt(i).toInt else -1

      // SEQ ('|' SEQ)*, up to a ')' or the end.
      def alternation(): Node = {
        val parts = IndexedSeq.newBuilder[Node]
        parts += sequence()
        while (peek == '|') {
          at += 1
          parts += sequence()
        }
        val all = parts.result()
        if (all.size == 1) all.head
        else {
          val n = new Node(NodeAlt)
          n.parts = all
          n
        }
      }

      // PIECE+, up to a '|', a ')' or the end.
      private def sequence(): Node = {
        val parts = IndexedSeq.newBuilder[Node]
        var count = 0
        var done = false
        while (!done && peek >= 0) {
          val c = peek
          if (c == ')' && depth == 0) throw new Refused(at, "')' without '('")
          if (c == '|' || c == ')') done = true
          else {
            parts += piece()
            count += 1
          }
        }
        if (count == 0) throw new Refused(at, "an empty alternative")
        val all = parts.result()
        if (count == 1) all.head
        else {
          val n = new Node(NodeCat)
          n.parts = all
          n
        }
      }

      // ATOM QUANT?
      private def piece(): Node = {
        val atom = this.atom()
        val q = peek
        if (q != '*' && q != '+' && q != '?' && q != '{') return atom
        val (min, max) =
          if (q == '{') count()
          else {
            at += 1
            if (q == '*') (0, -1) else if (q == '+') (1, -1) else (0, 1)
          }
        val c = peek
        if (c == '*' || c == '+' || c == '?' || c == '{')
          throw new Refused(at, "a quantifier after a quantifier (no lazy or possessive forms)")
        val n = new Node(NodeRepeat)
        n.parts = IndexedSeq(atom)
        n.min = min
        n.max = max
        n
      }

      // {N}, {N,} or {N,M}: N and M of 1-3 digits, N <= M <= 249; max -1: unbounded.
      private def count(): (Int, Int) = {
        val open = at
        val bad = "a count is {N}, {N,} or {N,M} with N <= M <= 249"
        at += 1
        val min = number()
        if (min < 0) throw new Refused(open, bad)
        val max =
          if (peek == '}') min
          else if (peek == ',') {
            at += 1
            if (peek == '}') -1
            else {
              val m = number()
              if (m < 0) throw new Refused(open, bad)
              m
            }
          } else throw new Refused(open, bad)
        if (peek != '}' || min > MaxCount || (max >= 0 && (max > MaxCount || max < min))) throw new Refused(open, bad)
        at += 1
        (min, max)
      }

      private def number(): Int = {
        val from = at
        var value = 0
        while (at < chars.length && at - from < 3 && chars.charAt(at) >= '0' && chars.charAt(at) <= '9') {
          value = value * 10 + (chars.charAt(at) - '0')
          at += 1
        }
        if (at == from) -1 else value
      }

      private def atom(): Node = {
        val c = chars.charAt(at)
        c match {
          case '(' => group()
          case '[' => klass()
          case '.' =>
            at += 1
            set(0, 0, true, false)
          case '\\' =>
            val s = escape()
            set(s(0), s(1), false, false)
          case '*' | '+' | '?' | '{' => throw new Refused(at, "nothing to repeat")
          case _ if isLiteral(c) =>
            at += 1
            val s = add(new Array[Long](2), c, c)
            set(s(0), s(1), false, false)
          case _ => throw new Refused(at, shown(c) + " is not in the pattern language")
        }
      }

      // \. \- \d \w
      private def escape(): Array[Long] = {
        val c = peekAt(at + 1)
        if (c < 0) throw new Refused(at, "a \\ ends the pattern")
        val s =
          if (c == '.' || c == '-') add(new Array[Long](2), c.toChar, c.toChar)
          else if (c == 'd') digits
          else if (c == 'w') word
          else throw new Refused(at, "\\ before " + shown(c.toChar) + ": the escapes are \\. \\- \\d \\w")
        at += 2
        s
      }

      // '(' ALT ')' or '(?:' ALT ')'
      private def group(): Node = {
        val open = at
        depth += 1
        if (depth > MaxDepth) throw new Refused(open, "groups nested deeper than 16")
        at += 1
        if (peek == '?') {
          if (peekAt(at + 1) != ':') throw new Refused(open, "'(?' other than '(?:' (no flags, names or lookaround)")
          at += 2
        }
        val inner = alternation()
        if (peek != ')') throw new Refused(open, "a group not closed")
        at += 1
        depth -= 1
        inner
      }

      // '[' '^'? ITEM+ ']'
      private def klass(): Node = {
        val open = at
        at += 1
        val negated = peek == '^'
        if (negated) at += 1
        val set = new Array[Long](2)
        var items = 0
        var done = false
        while (!done) {
          val c = peek
          if (c < 0) throw new Refused(open, "a class not closed")
          if (c == ']') done = true
          else {
            val item = at
            val after = peekAt(item + 1)
            if (c == '-' && after == ']') {
              add(set, '-', '-')
              at += 1
            } else if (c == '\\' && (after == 'd' || after == 'w')) {
              val s = escape()
              set(0) |= s(0)
              set(1) |= s(1)
            } else {
              val from = classChar()
              if (peek == '-' && peekAt(at + 1) >= 0 && peekAt(at + 1) != ']') {
                at += 1
                val to = classChar()
                if (kindOf(from) == 0 || kindOf(from) != kindOf(to) || from > to)
                  throw new Refused(item, "a range joins two digits, two lowercase or two uppercase letters in order")
                add(set, from, to)
              } else add(set, from, from)
            }
            items += 1
          }
        }
        if (items == 0) throw new Refused(open, "an empty class")
        at += 1
        if (negated) TopicPattern.set(~set(0), ~set(1), false, true) else TopicPattern.set(set(0), set(1), false, false)
      }

      // One character of a class: a letter, digit, '_', '.', \. or \-.
      private def classChar(): Char = {
        val c = chars.charAt(at)
        if (c == '\\') {
          val e = peekAt(at + 1)
          if (e == '.' || e == '-') {
            at += 2
            e.toChar
          } else if (e < 0) throw new Refused(at, "a \\ ends the pattern")
          else throw new Refused(at, "\\ before " + shown(e.toChar) + " in a class: the escapes are \\. \\- \\d \\w")
        } else if (isAsciiAlnum(c) || c == '_' || c == '.') {
          at += 1
          c
        } else if (c == '-') throw new Refused(at, "'-' in a class stands last or as \\-")
        else throw new Refused(at, shown(c) + " in a class")
      }
    }
  }

  private[observer] object TopicRules {
    val Empty = new TopicRules(Map.empty, Seq.empty, Seq.empty)
  }

  private def showList(set: Set[Int]): String = if (set.isEmpty) "none" else set.toSeq.sorted.mkString(",")

  // Ids ascending, then rack items by name (String order, as the Java side sorts).
  private def showList(spec: Spec): String =
    if (spec.ids.isEmpty && spec.racks.isEmpty) "none"
    else (spec.ids.toSeq.sorted.map(_.toString) ++ spec.racks.toSeq.sorted.map("rack:" + _)).mkString(",")

  private val Kinds = Seq("topic:", "prefix:", "regex:")
  private val LegalName = "[a-zA-Z0-9._-]{1,249}"

  /** The cluster-wide ids and the topic rules of a file's text; throws [[MalformedRule]]. */
  private[observer] def parseFile(text: String): (Set[Int], TopicRules) = {
    val plain = new StringBuilder
    var exact = Map.empty[String, Spec]
    val prefixes = Seq.newBuilder[(String, Spec)]
    val regexes = Seq.newBuilder[(TopicPattern, Spec)]
    val seen = scala.collection.mutable.Set.empty[String]
    val lines = text.split("\r\n|\r|\n", -1)
    for (i <- lines.indices) {
      val line = lines(i)
      val hash = line.indexOf('#')
      val body = if (hash < 0) line else line.substring(0, hash)
      val start = body.indexWhere(c => !isSpace(c))
      if (start >= 0 && Kinds.exists(k => body.startsWith(k, start))) {
        val where = "line " + (i + 1) + ", column "
        val tokens = tokensOf(body)
        if (tokens.size != 2 || !tokens(1)._1.startsWith("observers="))
          throw new MalformedRule(where + (start + 1) + ": a topic rule is SELECTOR observers=LIST")
        val (selector, col) = tokens.head
        val kind = Kinds.find(k => selector.startsWith(k)).get
        val value = selector.substring(kind.length)
        val set = parseList(tokens(1)._1.substring("observers=".length), where, tokens(1)._2 + "observers=".length)
        if (!seen.add(selector)) throw new MalformedRule(where + col + ": a second rule for " + selector)
        if (kind == "regex:") {
          val pattern =
            try TopicPattern.compile(value)
            catch {
              case e: TopicPattern.Refused =>
                throw new MalformedRule(where + (col + kind.length + e.at) + ": not a pattern of observer.ids (" +
                  e.reason + "): " + value)
            }
          regexes += ((pattern, set))
        } else {
          if (!value.matches(LegalName))
            throw new MalformedRule(where + (col + kind.length) + ": not a topic name: " + value)
          if (kind == "topic:") exact += value -> set else prefixes += ((value, set))
        }
      } else plain.append(body).append('\n')
    }
    (parse(plain.toString), new TopicRules(exact, prefixes.result(), regexes.result()))
  }

  // Java's \s: space, \t, \n, \x0B, \f, \r.
  private def isSpace(c: Char): Boolean = c == ' ' || (c >= '\t' && c <= '\r')

  // Whitespace-separated words with their 1-based columns.
  private def tokensOf(body: String): IndexedSeq[(String, Int)] = {
    val out = IndexedSeq.newBuilder[(String, Int)]
    var i = 0
    while (i < body.length) {
      if (isSpace(body.charAt(i))) i += 1
      else {
        val from = i
        while (i < body.length && !isSpace(body.charAt(i))) i += 1
        out += ((body.substring(from, i), from + 1))
      }
    }
    out.result()
  }

  private val LegalRack = "[a-zA-Z0-9._/-]{1,255}"

  // `none`, or broker ids and `rack:NAME` items separated by single commas; strict, unlike the
  // cluster-wide ids.
  private def parseList(list: String, where: String, col: Int): Spec =
    if (list == "none") Spec(Set.empty, Set.empty)
    else {
      val ids = Set.newBuilder[Int]
      val racks = Set.newBuilder[String]
      var at = col
      for (item <- list.split(",", -1)) {
        if (item.startsWith("rack:")) {
          val name = item.substring("rack:".length)
          if (!name.matches(LegalRack))
            throw new MalformedRule(where + at + ": not a rack: \"" + item + "\" (a rack is rack:NAME, NAME of 1-255 " +
              "letters, digits, '.', '_', '-' or '/')")
          racks += name
        } else {
          val id = parseId(item)
          if (id < 0)
            throw new MalformedRule(where + at + ": not a broker id: \"" + item + "\" (a list is none, or broker ids " +
              "and rack:NAME separated by commas)")
          ids += id
        }
        at += item.length + 1
      }
      Spec(ids.result(), racks.result())
    }

  // `#` starts a comment wherever it stands, so "3 # was 4" does not make 4 an observer.
  private[observer] def parse(text: String): Set[Int] = {
    val ids = Set.newBuilder[Int]
    for (token <- text.replaceAll("#[^\r\n]*", " ").split("[,\\s]+")) {
      val id = parseId(token)
      if (id >= 0) ids += id
    }
    ids.result()
  }

  // Plain decimal only: "+3", "-1", "3.0" and anything past Int.MaxValue are not broker ids.
  private def parseId(token: String): Int =
    if (token.isEmpty || token.length > 10 || !token.forall(c => c >= '0' && c <= '9')) -1
    else {
      val value = java.lang.Long.parseLong(token)
      if (value > Int.MaxValue) -1 else value.toInt
    }

  // Sorted, no spaces (one token in a key=value line), and formatted exactly like the Java side.
  private def show(ids: Set[Int]): String = ids.toSeq.sorted.mkString("[", ",", "]")
}
