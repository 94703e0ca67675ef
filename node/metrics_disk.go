package node

import "paymentlog/metrics"

// writeDiskStallMetrics writes the disk stall detector's series
// (diskstall.go); all 0 while it is off (--disk-stall-timeout 0).
func (n *Node) writeDiskStallMetrics(w *metrics.Writer) {
	s := n.diskStallStats()
	w.Gauge("paymentlog_disk_stalled", "1 while a disk operation of this node's logs (fsync, msync, write...) has been in flight longer than --disk-stall-timeout: the node holds back its heartbeats so that the controller fences it and moves its leaderships.", b2i(s.stalled))
	w.Counter("paymentlog_disk_stalls_total", "Disk stalls this node detected since it started (each held back its heartbeats until the operation returned).", s.stalls)
	w.Family("paymentlog_disk_oldest_inflight_seconds", metrics.TypeGauge, "How long the oldest disk operation of this node's logs still in flight has been running (0: none); over --disk-stall-timeout it is a stall.")
	w.Float(nil, s.oldest.Seconds())
	w.Family("paymentlog_disk_op_max_seconds", metrics.TypeGauge, "The longest disk operation of this node's logs (fsync, msync, write, ...) that completed since it started: how close a healthy disk comes to --disk-stall-timeout.")
	w.Float(nil, s.longest.Seconds())
	w.Family("paymentlog_disk_stall_hold_down_seconds", metrics.TypeGauge, "After a disk stall that came within 10 minutes of the previous one's end: how long the node still holds back its heartbeats (stays fenced) although the operation returned (0: no hold-down).")
	w.Float(nil, s.holdDown.Seconds())
	w.Counter("paymentlog_disk_stall_hold_downs_total", "Hold-downs after a disk stall (a stall within 10 minutes of the previous one's end) since the node started.", s.holdDowns)
	w.Family("paymentlog_disk_stall_timeout_seconds", metrics.TypeGauge, "--disk-stall-timeout: a disk operation in flight longer than this is a stall (0: detection off).")
	w.Float(nil, n.cfg.DiskStallTimeout.Seconds())
	h := n.handOffStats()
	w.Family("paymentlog_controller_handoffs_total", metrics.TypeCounter, "Transfers of the controller's raft leadership this node started while aside for its disk (stalled, in a hold-down, or full), by result: handed (another voter leads) or failed (tried again at the next heartbeat tick).")
	w.Uint(metrics.Labels{"result", "handed"}, h.handed)
	w.Uint(metrics.Labels{"result", "failed"}, h.failed)
	w.Gauge("paymentlog_controller_kept_while_aside", "1 while this node is aside for its disk yet keeps leading the metadata quorum, because no other voter is live to take it (a quorum without a leader would stop every metadata change).", b2i(h.keeps))
}
