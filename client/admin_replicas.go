package client

import (
	"context"
	"slices"
	"sync"

	"paymentlog/wire"
)

// ReplicaState is one replica's own view of its partition log, asked of the
// broker holding it (`topic describe --replicas`; Kafka's kafka-log-dirs
// size and replica lag in one).
type ReplicaState struct {
	Broker int32  `json:"broker"`
	Addr   string `json:"addr,omitempty"`
	// Leader: the replica says it leads (it may lag the metadata by a
	// moment); InISR: the metadata lists it in the ISR.
	Leader      bool  `json:"leader"`
	InISR       bool  `json:"in_isr"`
	LogStart    int64 `json:"log_start_offset"`
	LogEnd      int64 `json:"log_end_offset"`
	HW          int64 `json:"high_watermark"`
	LeaderEpoch int32 `json:"leader_epoch"`
	// Lag is the leader's log end minus this replica's (0 for the leader;
	// -1 when the leader did not answer). A follower read a moment after
	// the leader may be ahead of its answer: counted as 0.
	Lag int64 `json:"lag"`
	// Size is the bytes of its segment files and Segments their count (0
	// from a node older than the fields).
	Size     int64 `json:"size_bytes"`
	Segments int   `json:"segments"`
	// Error is why the broker did not answer ("" when it did).
	Error string `json:"error,omitempty"`
}

// describeReplicasParallel bounds the DescribeReplica calls in flight.
const describeReplicasParallel = 16

// DescribeTopicReplicas is DescribeTopic with every partition's
// ReplicaStates filled in: each assigned replica (those being added and
// removed too) asked for its own log start, log end, high watermark, leader
// epoch and size, concurrently, each within the client's request timeout.
// A replica whose broker does not answer has its Error set.
func (a *Admin) DescribeTopicReplicas(ctx context.Context, name string) (TopicDescription, error) {
	d, err := a.DescribeTopic(ctx, name)
	if err != nil {
		return d, err
	}
	snap := a.c.meta.current()
	sem := make(chan struct{}, describeReplicasParallel)
	var wg sync.WaitGroup
	for i := range d.Partitions {
		p := &d.Partitions[i]
		ids := slices.Clone(p.Replicas)
		for _, id := range slices.Concat(p.AddingReplicas, p.RemovingReplicas) {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		p.ReplicaStates = make([]ReplicaState, len(ids))
		for j, id := range ids {
			rs := &p.ReplicaStates[j]
			rs.Broker, rs.InISR, rs.Lag = id, slices.Contains(p.ISR, id), -1
			addr, ok := snap.addr(id)
			if !ok {
				rs.Error = "broker not registered"
				continue
			}
			rs.Addr = addr
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				cctx, cancel := context.WithTimeout(ctx, a.c.cfg.RequestTimeout)
				defer cancel()
				var resp wire.DescribeReplicaResponse
				err := a.c.call(cctx, addr, wire.TypeDescribeReplica, &wire.DescribeReplicaRequest{Topic: name, Partition: p.Partition}, &resp)
				if err == nil && resp.Err != wire.None {
					err = resp.Err.Err(addr)
				}
				if err != nil {
					rs.Error = err.Error()
					return
				}
				rs.Leader, rs.LogStart, rs.LogEnd, rs.HW, rs.LeaderEpoch = resp.IsLeader, resp.LogStart, resp.LogEnd, resp.HighWatermark, resp.LeaderEpoch
				rs.Size, rs.Segments = resp.Size, resp.Segments
			})
		}
	}
	wg.Wait()
	for i := range d.Partitions {
		replicaLags(d.Partitions[i].Leader, d.Partitions[i].ReplicaStates)
	}
	return d, nil
}

// replicaLags sets each replica's lag behind the leader's log end: leader
// is the metadata's (-1 while offline, when no lag is known).
func replicaLags(leader int32, rs []ReplicaState) {
	i := slices.IndexFunc(rs, func(r ReplicaState) bool { return r.Broker == leader && r.Error == "" })
	if i < 0 {
		return
	}
	end := rs[i].LogEnd
	for j := range rs {
		if rs[j].Error == "" {
			rs[j].Lag = max(end-rs[j].LogEnd, 0)
		}
	}
}
