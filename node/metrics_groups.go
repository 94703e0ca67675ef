package node

import (
	"strconv"
	"time"

	"paymentlog/metrics"
	"paymentlog/node/broker"
	"paymentlog/node/replica"
)

// MetricsMaxGroupLags bounds the paymentlog_group_lag_messages series one
// node writes (a group and a partition it leads each); the ones past it
// are counted in paymentlog_group_lag_metrics_omitted.
const MetricsMaxGroupLags = 1000

// writeGroupLagMetrics writes each consumer group's lag on the partitions
// this node leads (of parts, the partition series written): the leader's
// high watermark minus the group's committed offset, from the metadata
// image every node applies, and the same lag in time (groupLagSeconds).
// Summed over the nodes, each group and partition is counted once, by its
// leader.
func (n *Node) writeGroupLagMetrics(w *metrics.Writer, parts []broker.PartitionStat) {
	type tp struct {
		topic     string
		partition int32
	}
	hw := map[tp]int64{}
	for _, p := range parts {
		if p.Role == replica.RoleLeader {
			hw[tp{p.Topic, p.Partition}] = p.HW
		}
	}
	type lag struct {
		labels   metrics.Labels
		messages int64
		seconds  float64
	}
	var lags []lag
	omitted := 0
	now := time.Now()
	if len(hw) > 0 {
		for _, g := range n.store.Image().Groups() {
			for _, gp := range g.SortedOffsets() {
				h, ok := hw[tp{gp.Topic, gp.Partition}]
				if !ok {
					continue
				}
				if len(lags) == MetricsMaxGroupLags {
					omitted++
					continue
				}
				committed := g.Offsets[gp].Offset
				lags = append(lags, lag{metrics.Labels{"group", g.Name, "topic", gp.Topic, "partition", strconv.Itoa(int(gp.Partition))},
					max(h-committed, 0), n.groupLagSeconds(gp.Topic, gp.Partition, committed, h, now)})
			}
		}
	}
	w.Family("paymentlog_group_lag_messages", metrics.TypeGauge,
		"On a partition's leader, per consumer group that committed an offset for it: the high watermark minus the committed offset (records the group has not committed yet).")
	for _, l := range lags {
		w.Int(l.labels, l.messages)
	}
	w.Family("paymentlog_group_lag_seconds", metrics.TypeGauge,
		"On a partition's leader, per consumer group that committed an offset for it: how long ago the oldest record the group has not committed was written (the timestamp of its batch, by this node's clock); 0 when it has committed everything.")
	for _, l := range lags {
		w.Float(l.labels, l.seconds)
	}
	w.Gauge("paymentlog_group_lag_metrics_omitted",
		"Group lag series this node left out of paymentlog_group_lag_messages and paymentlog_group_lag_seconds (more than "+strconv.Itoa(MetricsMaxGroupLags)+" each).", int64(omitted))
}

// groupLagSeconds is a group's lag in time on a partition led here, whose
// high watermark is hw: now minus the timestamp of the batch holding the
// group's committed offset (the next record it has to process), at least 0;
// 0 when the group has committed everything, or when the batch cannot be
// read. A batch's timestamp is its first record's, so the lag is over by at
// most the time the producer took to fill the batch (its linger).
func (n *Node) groupLagSeconds(topic string, partition int32, committed, hw int64, now time.Time) float64 {
	if committed >= hw {
		return 0
	}
	ts, ok := n.broker.BatchTimestampAt(topic, partition, committed)
	if !ok {
		return 0
	}
	return max(now.Sub(time.UnixMilli(ts)).Seconds(), 0)
}
