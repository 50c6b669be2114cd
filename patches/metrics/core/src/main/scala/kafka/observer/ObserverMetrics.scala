// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The okp authors
package kafka.observer

/**
 * The values behind okp's observer gauges (the optional `metrics` layer of the patch set).
 *
 * Kafka's own gauges register these from the hook sites; this file only does the arithmetic, so it
 * compiles unchanged against every release from 2.7 to 4.3. The hook in `Partition` turns the
 * leader's view of its followers into [[FollowerState]]s; the hook in `ReplicaManager` adds up the
 * partitions this broker leads. docs/observer-metrics.md names each gauge and what it reads.
 *
 * As with Kafka's `UnderReplicated` and `InSyncReplicasCount`, only the leader knows the followers'
 * positions, so a partition this broker does not lead reads 0 on every gauge.
 */
final case class FollowerState(brokerId: Int, logEndOffset: Long, caughtUp: Boolean)

/**
 * One partition's observer gauges, as its leader sees them.
 *
 * @param replicas observers among the partition's followers (the leader itself is never counted)
 * @param inIsr    ISR members that are observers, the leader included: an observer demoted while it
 *                 leads stays in the ISR until leadership moves, and that is what this shows
 * @param caughtUp observers among the followers that are caught up by Kafka's own ISR rule (at the
 *                 leader's log end offset, or there within replica.lag.time.max.ms)
 * @param maxLag   the largest `leader log end offset - observer log end offset`, in messages
 *                 (offsets), over the observers among the followers; 0 with none
 */
final case class ObserverGaugeValues(replicas: Int, inIsr: Int, caughtUp: Int, maxLag: Long)

object ObserverGaugeValues {
  val Zero: ObserverGaugeValues = ObserverGaugeValues(0, 0, 0, 0L)
}

object ObserverMetrics {
  /** The gauges `Partition` registers, tagged with topic and partition. */
  val PartitionGaugeNames: Seq[String] = Seq("ObserverReplicas", "ObserversInIsr", "CaughtUpObservers", "ObserverLag")

  /** The gauges `ReplicaManager` registers, one per broker. */
  val BrokerGaugeNames: Seq[String] =
    Seq("ObserverSetSize", "ObserverReplicas", "ObserversInIsr", "CaughtUpObservers", "ObserverMaxLag")

  /**
   * Gauge values of a partition of `topic` led by `leaderId`, with `followers` as the leader tracks
   * them; the observers are the topic's (its rule, or the cluster-wide ids).
   */
  def ofPartition(topic: String, leaderId: Int, isr: Set[Int], leaderEndOffset: Long,
                  followers: Iterable[FollowerState]): ObserverGaugeValues = {
    val observers = ObserverIds.observersOf(topic)
    if (observers.isEmpty) {
      ObserverGaugeValues.Zero
    } else {
      var replicas = 0
      var caughtUp = 0
      var maxLag = 0L
      followers.foreach { f =>
        if (f.brokerId != leaderId && observers.contains(f.brokerId)) {
          replicas += 1
          if (f.caughtUp) caughtUp += 1
          maxLag = math.max(maxLag, leaderEndOffset - f.logEndOffset)
        }
      }
      ObserverGaugeValues(replicas, isr.count(observers.contains), caughtUp, maxLag)
    }
  }

  /** The broker's totals over the partitions it leads: counts add up, the lag is the worst one. */
  def total(partitions: Iterator[ObserverGaugeValues]): ObserverGaugeValues =
    partitions.foldLeft(ObserverGaugeValues.Zero) { (sum, p) =>
      ObserverGaugeValues(sum.replicas + p.replicas, sum.inIsr + p.inIsr, sum.caughtUp + p.caughtUp, math.max(sum.maxLag, p.maxLag))
    }
}
