package controller

import (
	"time"

	"paymentlog/metrics"
	"paymentlog/node/membership"
	"paymentlog/node/metadata"
)

// ClusterStats is the cluster as the metadata image shows it (for /metrics
// on the active controller).
type ClusterStats struct {
	Brokers       int // registered
	FencedBrokers int
	Topics        int
	Partitions    int
	// OfflinePartitions have no leader: no live replica of their ISR
	// (reads and writes fail until one returns).
	OfflinePartitions int
	// UnderMinISRPartitions have fewer ISR members than their topic's min
	// ISR: they refuse acks=all writes.
	UnderMinISRPartitions int
	// UnderReplicatedPartitions have fewer ISR members than replicas
	// (not counting those a reassignment is still adding).
	UnderReplicatedPartitions int
	// ReassigningPartitions are being moved to other replicas.
	ReassigningPartitions int
	// Groups are the consumer groups with committed offsets.
	Groups int
	// GroupMembers are the consumer groups' members (Stats only: they
	// live on the active controller, not in the image).
	GroupMembers int
}

// Cluster computes img's ClusterStats.
func Cluster(img *metadata.Image) ClusterStats {
	var s ClusterStats
	for _, b := range img.Brokers() {
		s.Brokers++
		if b.Fenced {
			s.FencedBrokers++
		}
	}
	for _, t := range img.Topics() {
		s.Topics++
		for _, p := range t.Partitions {
			s.Partitions++
			if p.Leader == metadata.NoLeader {
				s.OfflinePartitions++
			}
			if len(p.ISR) < int(t.MinISR) {
				s.UnderMinISRPartitions++
			}
			if len(p.ISR) < len(p.Replicas)-len(p.Adding) {
				s.UnderReplicatedPartitions++
			}
			if p.Reassigning() {
				s.ReassigningPartitions++
			}
		}
	}
	s.Groups = img.GroupCount()
	return s
}

// GroupCommits is how many offset commits this node committed as the
// active controller (each one metadata log record).
func (c *Controller) GroupCommits() uint64 { return c.groupCommits.Load() }

// MembersRemoved is how many group members this node removed as the active
// controller: for their session timeout (expired), and for keeping
// partitions past their rebalance timeout (fenced).
func (c *Controller) MembersRemoved() (expired, fenced uint64) {
	return c.membersExpired.Load(), c.membersFenced.Load()
}

// Stats returns the cluster's stats from the applied image while this node
// is the active controller; ok is false otherwise (another node reports
// them: alerting sums over nodes then counts each partition once).
func (c *Controller) Stats() (s ClusterStats, ok bool) {
	if !c.active() {
		return ClusterStats{}, false
	}
	s = Cluster(c.cfg.Store.Image())
	c.withMembers(func(m *membership.Coordinator) { s.GroupMembers = m.Members() })
	return s, true
}

// CommitLatency is how long this controller's entries took from proposal to
// being applied locally (committed by a quorum of the metadata log, then
// applied to the image), for every entry it proposed that applied.
func (c *Controller) CommitLatency() metrics.HistogramSnapshot {
	return c.commitLatency.Snapshot()
}

// commitClock reads the wall clock for CommitLatency (not Config.Now: a
// test's injected clock would make every latency zero).
func commitClock() time.Time { return time.Now() }

// fenceCause is why this controller fenced a broker.
type fenceCause int

const (
	fenceSession    fenceCause = iota // its session ran out
	fenceClosedPort                   // silent, and its port found closed (probe.go)
	fenceDeaf                         // its heartbeats arrive, our answers do not reach it
	fenceStrayed                      // its heartbeats arrive, its raft hears nothing of ours (sessions.strayed)
	numFenceCauses
)

// FenceCauses names the causes of FenceCounts, in its order.
var FenceCauses = [numFenceCauses]string{"session", "port_closed", "deaf", "no_metadata"}

// portFinder is what found a silent broker's port closed (probe.go).
type portFinder int

const (
	foundByProbe   portFinder = iota // this controller's probe was refused
	foundByTraffic                   // this node's own datagrams to it were (an ICMP error its QUIC socket read)
	foundByRaft                      // this node's raft found its leader, that broker, so (PortRefused)
	numPortFinders
)

// PortFinders names what found the ports of the brokers fenced as
// port_closed (PortClosedCounts), in its order.
var PortFinders = [numPortFinders]string{"probe", "traffic", "raft"}

// PortClosedCounts returns how many of the brokers this node fenced as
// port_closed had their port found closed by each of PortFinders.
func (c *Controller) PortClosedCounts() (by [numPortFinders]uint64) {
	for i := range by {
		by[i] = c.closedBy[i].Load()
	}
	return by
}

// FenceCounts returns how many brokers this node has fenced as the active
// controller (fencings proposed), by cause (FenceCauses), and how many
// probes of silent brokers' ports it has started.
func (c *Controller) FenceCounts() (fences [numFenceCauses]uint64, probes uint64) {
	for i := range fences {
		fences[i] = c.fences[i].Load()
	}
	return fences, c.probesSent.Load()
}
