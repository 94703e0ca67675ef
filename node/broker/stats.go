package broker

import (
	"sync/atomic"

	"paymentlog/node/replica"
)

// Stats is a snapshot of the broker's partitions and request counters (for
// /metrics). Counters only grow.
type Stats struct {
	Leaders   int // partitions this node leads
	Followers int // partitions this node follows
	// UnderReplicated counts partitions led here whose ISR is smaller than
	// their replica set (the alert an operator watches: a replica is down
	// or lagging).
	UnderReplicated int
	// UnderMinISR counts partitions led here whose ISR is below min ISR:
	// they refuse acks=all writes.
	UnderMinISR int
	// FailedLogs counts partition logs that failed (the node stops on one).
	FailedLogs int

	ProduceRequests       uint64 // produce requests handled
	ProduceBytes          uint64 // batch bytes appended as leader (duplicates not counted)
	ReplicaFetchResponses uint64 // answers sent to followers' fetches
	// RetentionDeletedSegments counts segments deleted by retention (and
	// by following a leader's log start); RetentionFailures the partition
	// passes that failed (the segments stay: the disk fills).
	RetentionDeletedSegments uint64
	RetentionFailures        uint64
	ProducerIDsExpired       uint64 // idle producer ids forgotten
}

// counters are the broker's request counters.
type counters struct {
	produceRequests       atomic.Uint64
	produceBytes          atomic.Uint64
	replicaFetchResponses atomic.Uint64
	retentionDeleted      atomic.Uint64
	retentionFailures     atomic.Uint64
	producerIDsExpired    atomic.Uint64
	// producerReplayBatches counts the batch headers read from the logs to
	// rebuild producer state (for tests: a truncation should read few).
	producerReplayBatches atomic.Uint64
}

// Stats returns the current snapshot.
func (b *Broker) Stats() Stats {
	s := Stats{
		ProduceRequests:       b.counters.produceRequests.Load(),
		ProduceBytes:          b.counters.produceBytes.Load(),
		ReplicaFetchResponses: b.counters.replicaFetchResponses.Load(),

		RetentionDeletedSegments: b.counters.retentionDeleted.Load(),
		RetentionFailures:        b.counters.retentionFailures.Load(),
		ProducerIDsExpired:       b.counters.producerIDsExpired.Load(),
	}
	for _, p := range b.partitions() {
		if p.log != nil && p.log.Failed() != nil {
			s.FailedLogs++
		}
		p.mu.Lock()
		stopped, r := p.mu.stopped, p.mu.r
		var role replica.Role
		var isr, replicas, minISR int
		if !stopped {
			role, isr, replicas, minISR = r.Role(), len(r.ISR()), len(r.Replicas()), r.MinISR()
		}
		p.mu.Unlock()
		switch {
		case stopped:
		case role == replica.RoleLeader:
			s.Leaders++
			if isr < replicas {
				s.UnderReplicated++
			}
			if isr < minISR {
				s.UnderMinISR++
			}
		case role == replica.RoleFollower:
			s.Followers++
		}
	}
	return s
}
