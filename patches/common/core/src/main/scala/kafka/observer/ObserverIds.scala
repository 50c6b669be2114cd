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
 *
 * Where the ids come from, re-evaluated at most once per 5 s:
 *  1. the file named by env `KAFKA_OBSERVER_IDS_FILE` (unset or blank: `/opt/kafka/observer.ids`);
 *  1. while that file does not exist (never created, or deleted later), env
 *     `KAFKA_OBSERVER_BROKER_IDS`;
 *  1. neither: no observers, so the patched broker behaves like upstream.
 *
 * Format, for the file and the env var alike: ids separated by commas and/or whitespace; `#` starts
 * a comment that runs to the end of its line; a token that is not a plain decimal number in
 * 0..2147483647 is ignored, because a stray character written at 3 a.m. must not stop a broker.
 *
 * A file that exists but cannot be read keeps the last good set and logs a WARN; before the first
 * good read there is none, so it fails safe to `KAFKA_OBSERVER_BROKER_IDS`. Nothing here throws.
 * Every change of the set is logged at INFO with before/after/added/removed.
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

  private[this] val shared = new ObserverIdCache((name: String) => System.getenv(name), () => System.nanoTime())

  /** True if `brokerId` is an observer. Cheap: at most one file read per 5 s per broker. */
  def isObserver(brokerId: Int): Boolean = shared.isObserver(brokerId)

  /** The observer ids now in force (an immutable snapshot). */
  def current: Set[Int] = shared.current
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
  // one whose compareAndSet wins publishes and logs, so a change is logged once.
  private[this] val snapshot = new AtomicReference[Snapshot](null)

  def isObserver(brokerId: Int): Boolean = current.contains(brokerId)

  def current: Set[Int] = {
    val seen = snapshot.get
    val now = nanoTime.getAsLong
    // A difference of nanoTime values stays right when the counter wraps; the wall clock can jump.
    if (seen != null && now - seen.loadedAt < ObserverIds.TtlNanos) seen.ids
    else reload(seen, now)
  }

  private def reload(seen: Snapshot, now: Long): Set[Int] = {
    val before = if (seen == null) Set.empty[Int] else seen.ids
    try {
      val loaded = load(now)
      val after = loaded.ids
      if (snapshot.compareAndSet(seen, loaded) && after != before)
        log.info(s"Observer broker ids changed: before=${show(before)} after=${show(after)} " +
          s"added=${show(after -- before)} removed=${show(before -- after)} source=${loaded.source}")
      after
    } catch {
      // The timestamp still advances, so a broken file costs one read and one WARN per 5 s,
      // not one per call on the fetch path.
      case NonFatal(e) if seen != null =>
        if (snapshot.compareAndSet(seen, new Snapshot(before, seen.source, now)))
          log.warn(s"Cannot read observer ids file $path ($e); keeping last good set ${show(before)}")
        before
      // No good read yet, so no last good set: fail safe to the env ids rather than to none,
      // which would let every observer into the ISR until the file is readable.
      case NonFatal(e) =>
        val fromEnv = env.apply(ObserverIds.IdsEnv)
        val kept = if (fromEnv == null) Set.empty[Int] else parse(fromEnv)
        val shown = if (fromEnv == null) "unset" else show(kept)
        if (snapshot.compareAndSet(null, new Snapshot(kept, s"env ${ObserverIds.IdsEnv} (file unreadable)", now)))
          log.warn(s"Cannot read observer ids file $path ($e) before any good read; using env ${ObserverIds.IdsEnv}: $shown")
        kept
    }
  }

  // Only a file that does not exist hands over to the env var; any other error is a failure, so
  // that a transient IO problem cannot flip observers to electable replicas.
  private def load(now: Long): Snapshot =
    try {
      val bytes = Files.readAllBytes(Paths.get(path))
      // Ids are ASCII; ISO-8859-1 turns each other byte into one char of an ignored token.
      new Snapshot(parse(new String(bytes, StandardCharsets.ISO_8859_1)), "file " + path, now)
    } catch {
      case _: NoSuchFileException =>
        val fromEnv = env.apply(ObserverIds.IdsEnv)
        if (fromEnv == null) new Snapshot(Set.empty, s"none (no file $path, ${ObserverIds.IdsEnv} unset)", now)
        else new Snapshot(parse(fromEnv), s"env ${ObserverIds.IdsEnv} (no file $path)", now)
    }
}

private[observer] object ObserverIdCache {
  private val log = LoggerFactory.getLogger("kafka.observer.ObserverIds")

  private final class Snapshot(val ids: Set[Int], val source: String, val loadedAt: Long)

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

  private def show(ids: Set[Int]): String = ids.toSeq.sorted.mkString("[", ", ", "]")
}
