package node

import (
	"strconv"

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
// image every node applies. Summed over the nodes, each group and
// partition is counted once, by its leader.
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
	written, omitted := 0, 0
	w.Family("paymentlog_group_lag_messages", metrics.TypeGauge,
		"On a partition's leader, per consumer group that committed an offset for it: the high watermark minus the committed offset (records the group has not committed yet).")
	if len(hw) > 0 {
		for _, g := range n.store.Image().Groups() {
			for _, gp := range g.SortedOffsets() {
				h, ok := hw[tp{gp.Topic, gp.Partition}]
				if !ok {
					continue
				}
				if written == MetricsMaxGroupLags {
					omitted++
					continue
				}
				written++
				w.Int(metrics.Labels{"group", g.Name, "topic", gp.Topic, "partition", strconv.Itoa(int(gp.Partition))},
					max(h-g.Offsets[gp].Offset, 0))
			}
		}
	}
	w.Gauge("paymentlog_group_lag_metrics_omitted",
		"Group lag series this node left out of paymentlog_group_lag_messages (more than "+strconv.Itoa(MetricsMaxGroupLags)+").", int64(omitted))
}
