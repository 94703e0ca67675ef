package bench

import (
	"fmt"
	"io"
	"time"

	"paymentlog/client"
)

// QUICLoss is what the local nodes' QUIC loss detection saw during a phase
// (from their /metrics): packets sent and declared lost, over every
// connection of every node. The kernel's UDP counters miss most of these:
// quic-go drops an arriving packet itself when 256 already wait for one
// connection.
type QUICLoss struct {
	PacketsSent uint64  `json:"packets_sent"`
	PacketsLost uint64  `json:"packets_lost"`
	LostPercent float64 `json:"lost_percent"`
}

// Messages counts the requests a phase cost the cluster: produce requests
// and the follower fetch answers that replicate them.
type Messages struct {
	ProduceRequests     uint64 `json:"produce_requests"`      // handled by the leaders
	ReplicaFetchAnswers uint64 `json:"replica_fetch_answers"` // sent by the leaders to their followers
	// Per second of the phase, and follower answers per produce request.
	ProduceRequestsPerSec float64 `json:"produce_requests_per_sec"`
	AnswersPerProduce     float64 `json:"answers_per_produce"`
	// CPU milliseconds per produce request over the phase (CPUUsage
	// divided by ProduceRequests), of the nodes and of this process: below
	// full load the machine's CPU goes mostly by the number of requests,
	// not by their bytes. Zero when the CPU was not measured.
	NodeCPUMsPerProduce  float64 `json:"node_cpu_ms_per_produce,omitempty"`
	BenchCPUMsPerProduce float64 `json:"bench_cpu_ms_per_produce,omitempty"`
	// Context switches per produce request (CPUUsage's counts divided by
	// ProduceRequests), of the nodes and of this process.
	NodeSwitchesPerProduce  float64 `json:"node_context_switches_per_produce,omitempty"`
	BenchSwitchesPerProduce float64 `json:"bench_context_switches_per_produce,omitempty"`
	// RecordsPerProduce is the phase's acknowledged records per produce
	// request.
	RecordsPerProduce float64 `json:"records_per_produce,omitempty"`
	// BenchRequests counts the produce requests the bench's producers sent
	// in the phase (first sends and resends), BenchRequestsFailed those
	// answered with an error or lost (client.ProducerStats): each failed
	// one is resent, a round trip or more added to its records' latency.
	// Without faults they should be few: an idempotent producer's requests
	// that overtook one another used to be refused here (broker's
	// reorder.go).
	BenchRequests       uint64 `json:"bench_produce_requests"`
	BenchRequestsFailed uint64 `json:"bench_produce_requests_failed"`
	// ReorderWaits counts the batches the leaders held for an earlier one
	// of their producer that had not arrived yet, ReorderRefused those
	// still ahead after the wait (paymentlog_produce_reorder_*).
	ReorderWaits   uint64 `json:"reorder_waits"`
	ReorderRefused uint64 `json:"reorder_refused"`
}

// producerRequests is what the producers sent and had refused so far.
type producerRequests struct{ sent, failed uint64 }

func readProducerRequests(ps []*client.Producer) producerRequests {
	var r producerRequests
	for _, p := range ps {
		st := p.Stats()
		r.sent += st.Requests
		r.failed += st.FailedRequests
	}
	return r
}

// addRequests fills the bench's request counts of a phase from its
// producers' readings at its start and end.
func (m *Messages) addRequests(r0, r1 producerRequests) {
	if m == nil {
		return
	}
	m.BenchRequests, m.BenchRequestsFailed = r1.sent-r0.sent, r1.failed-r0.failed
}

// addRecords fills RecordsPerProduce from the phase's acknowledged records.
func (m *Messages) addRecords(records int64) {
	if m == nil || m.ProduceRequests == 0 {
		return
	}
	m.RecordsPerProduce = float64(records) / float64(m.ProduceRequests)
}

// addCPU fills the per-request CPU figures from the phase's CPU usage.
func (m *Messages) addCPU(u *CPUUsage) {
	if m == nil || u == nil || m.ProduceRequests == 0 {
		return
	}
	m.NodeCPUMsPerProduce = 1000 * u.NodesSeconds / float64(m.ProduceRequests)
	m.BenchCPUMsPerProduce = 1000 * u.BenchSeconds / float64(m.ProduceRequests)
	m.NodeSwitchesPerProduce = float64(u.NodesSwitches) / float64(m.ProduceRequests)
	m.BenchSwitchesPerProduce = float64(u.BenchSwitches) / float64(m.ProduceRequests)
}

// since is the loss between an earlier reading and this one (nil if either
// is missing).
func (c *nodeCounters) since(before *nodeCounters) *QUICLoss {
	if c == nil || before == nil || c.loss.PacketsSent < before.loss.PacketsSent {
		return nil
	}
	d := &QUICLoss{PacketsSent: c.loss.PacketsSent - before.loss.PacketsSent}
	if c.loss.PacketsLost >= before.loss.PacketsLost {
		d.PacketsLost = c.loss.PacketsLost - before.loss.PacketsLost
	}
	if d.PacketsSent > 0 {
		d.LostPercent = 100 * float64(d.PacketsLost) / float64(d.PacketsSent)
	}
	return d
}

// messagesSince is the messages between an earlier reading and this one
// over a phase of length d (nil if either is missing).
func (c *nodeCounters) messagesSince(before *nodeCounters, d time.Duration) *Messages {
	if c == nil || before == nil || c.msgs.ProduceRequests < before.msgs.ProduceRequests ||
		c.msgs.ReplicaFetchAnswers < before.msgs.ReplicaFetchAnswers {
		return nil
	}
	m := &Messages{
		ProduceRequests:     c.msgs.ProduceRequests - before.msgs.ProduceRequests,
		ReplicaFetchAnswers: c.msgs.ReplicaFetchAnswers - before.msgs.ReplicaFetchAnswers,
	}
	if c.msgs.ReorderWaits >= before.msgs.ReorderWaits && c.msgs.ReorderRefused >= before.msgs.ReorderRefused {
		m.ReorderWaits, m.ReorderRefused = c.msgs.ReorderWaits-before.msgs.ReorderWaits, c.msgs.ReorderRefused-before.msgs.ReorderRefused
	}
	if d > 0 {
		m.ProduceRequestsPerSec = float64(m.ProduceRequests) / d.Seconds()
	}
	if m.ProduceRequests > 0 {
		m.AnswersPerProduce = float64(m.ReplicaFetchAnswers) / float64(m.ProduceRequests)
	}
	return m
}

// produceBytesSince is the batch bytes the leaders appended between an
// earlier reading and this one; false if either reading, or a node's
// counter, is missing, or the counter went back (a node restarted).
func (c *nodeCounters) produceBytesSince(before *nodeCounters) (uint64, bool) {
	if c == nil || before == nil || !c.hasProduceBytes || !before.hasProduceBytes || c.produceBytes < before.produceBytes {
		return 0, false
	}
	return c.produceBytes - before.produceBytes, true
}

// quicLossLine writes one phase's QUIC loss, if it was measured.
func quicLossLine(w io.Writer, phase string, q *QUICLoss) {
	if q == nil {
		return
	}
	fmt.Fprintf(w, "  QUIC packets lost (%s)\t%d of %d sent by the nodes (%.2f%%)\n", phase, q.PacketsLost, q.PacketsSent, q.LostPercent)
}

// messagesLine writes one phase's message counts, if they were measured.
func messagesLine(w io.Writer, phase string, m *Messages) {
	if m == nil || m.ProduceRequests == 0 {
		return
	}
	fmt.Fprintf(w, "  messages (%s)\t%.0f produce requests/s (%.1f records each), %.2f follower fetch answers per produce request\n",
		phase, m.ProduceRequestsPerSec, m.RecordsPerProduce, m.AnswersPerProduce)
	if m.BenchRequests > 0 {
		fmt.Fprintf(w, "  produce requests refused or lost (%s)\t%d of %d the bench sent (%.2f%%), each resent; %d batches waited on the leaders for an earlier one of their producer, %d of them refused after the wait\n",
			phase, m.BenchRequestsFailed, m.BenchRequests, 100*float64(m.BenchRequestsFailed)/float64(m.BenchRequests), m.ReorderWaits, m.ReorderRefused)
	}
	if m.NodeCPUMsPerProduce > 0 {
		fmt.Fprintf(w, "  CPU per produce request (%s)\tnodes %.2f ms + bench %.2f ms; context switches nodes %.0f + bench %.0f\n",
			phase, m.NodeCPUMsPerProduce, m.BenchCPUMsPerProduce, m.NodeSwitchesPerProduce, m.BenchSwitchesPerProduce)
	}
}
