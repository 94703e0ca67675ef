package client

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"paymentlog/wire"
)

// DeleteRecordsLatest, as an offset of DeleteRecords, deletes every record
// below the partition's high watermark.
const DeleteRecordsLatest = wire.DeleteRecordsLatest

// DeleteRecordsOption changes what DeleteRecords waits for.
type DeleteRecordsOption int

// LeadersOnly makes DeleteRecords return once each partition's leader has
// moved its log start, without waiting for the followers
// (WaitReplicasLogStart waits for them, saying which are behind).
const LeadersOnly DeleteRecordsOption = 1

// DeleteRecords deletes, for each partition of topic in offsets, every
// record below its offset (Kafka's deleteRecords, kafka-delete-records):
// the partition's log start offset moves there, on its leader at once and
// on each follower at its next fetch, and consumers reading from below it
// go on from there (OffsetOutOfRange for an exact offset). An offset may
// not pass the high watermark; DeleteRecordsLatest means the high
// watermark. It returns once every in-sync replica of each partition has
// deleted the records, each partition's low watermark: the lowest log
// start offset among its in-sync replicas, as Kafka's does (with
// LeadersOnly: once the leaders have, their log starts). Each leader waits
// for its followers for most of the request's time (Config.RequestTimeout,
// or until ctx ends if sooner) and answers Timeout, naming the replicas
// behind, if they have not caught up; that and leader changes are retried
// until ctx ends. A topic whose cleanup.policy
// is compact alone is refused (PolicyViolation).
func (a *Admin) DeleteRecords(ctx context.Context, topic string, offsets map[int32]int64, opts ...DeleteRecordsOption) (map[int32]int64, error) {
	for p, off := range offsets {
		if off < 0 && off != DeleteRecordsLatest {
			return nil, fmt.Errorf("client: delete records of %s/%d below %d: not an offset or DeleteRecordsLatest", topic, p, off)
		}
	}
	leadersOnly := slices.Contains(opts, LeadersOnly)
	c := a.c
	out := make(map[int32]int64, len(offsets))
	errs := map[int32]error{}
	todo := slices.Sorted(maps.Keys(offsets))
	backoff := 25 * time.Millisecond
	for len(todo) > 0 {
		failed, err := askLeaders(ctx, c, topic, todo, out, errs, func(cctx context.Context, addr string, ps []int32) (map[int32]int64, map[int32]error, error) {
			req := &wire.DeleteRecordsRequest{Topic: topic}
			if d, ok := cctx.Deadline(); ok && !leadersOnly {
				wait := time.Until(d) - time.Until(d)/8 // leaves the answer time to come back
				req.TimeoutMs = int32(max(wait/time.Millisecond, 1))
			}
			for _, p := range ps {
				req.Parts = append(req.Parts, wire.DeleteRecordsPartition{Partition: p, Offset: offsets[p]})
			}
			var resp wire.DeleteRecordsResponse
			if err := c.call(cctx, addr, wire.TypeDeleteRecords, req, &resp); err != nil {
				return nil, nil, err
			}
			vals, perrs := map[int32]int64{}, map[int32]error{}
			for _, pr := range resp.Parts {
				if pr.Err != wire.None {
					perrs[pr.Partition] = pr.Err.Err(fmt.Sprintf("%s/%d at %s: %s", topic, pr.Partition, addr, pr.Message))
					continue
				}
				vals[pr.Partition] = pr.LowWatermark
			}
			return vals, perrs, nil
		})
		if err != nil {
			return out, err
		}
		slices.Sort(failed)
		for _, p := range failed {
			if e := errs[p]; e != nil {
				if code := ErrorCode(e); code != wire.Unknown && !code.Retriable() {
					return out, e
				}
			}
		}
		todo = failed
		if len(todo) == 0 {
			break
		}
		if err := c.meta.refresh(ctx); err != nil && ctx.Err() != nil {
			return out, firstErr(errs, todo, ctx.Err())
		}
		if err := sleepCtx(ctx, backoff); err != nil {
			return out, firstErr(errs, todo, err)
		}
		backoff = min(2*backoff, time.Second)
	}
	return out, nil
}

// DeleteAllRecords is DeleteRecords of every partition of topic below its
// high watermark.
func (a *Admin) DeleteAllRecords(ctx context.Context, topic string, opts ...DeleteRecordsOption) (map[int32]int64, error) {
	n, err := a.c.PartitionCount(ctx, topic)
	if err != nil {
		return nil, err
	}
	offsets := make(map[int32]int64, n)
	for p := range int32(n) {
		offsets[p] = DeleteRecordsLatest
	}
	return a.DeleteRecords(ctx, topic, offsets, opts...)
}

// WaitReplicasLogStart waits, until ctx ends, for every in-sync replica of
// each partition in starts (of topic) to report a log start offset of at
// least the partition's, asking each replica's broker (DescribeReplica) a
// few times a second: after DeleteRecords, until the followers have
// dropped the records too (each does at its next fetch). It returns, per
// partition, the in-sync replicas and those of them that still hold
// records below it (none once they all caught up); when ctx ends first,
// that and ctx's error.
func (a *Admin) WaitReplicasLogStart(ctx context.Context, topic string, starts map[int32]int64) (isr, behind map[int32][]int32, err error) {
	for {
		d, derr := a.DescribeTopicReplicas(ctx, topic)
		if derr == nil {
			isr, behind = map[int32][]int32{}, map[int32][]int32{}
			for _, p := range d.Partitions {
				start, ok := starts[p.Partition]
				if !ok {
					continue
				}
				isr[p.Partition] = p.ISR
				for _, rs := range p.ReplicaStates {
					if rs.InISR && (rs.Error != "" || rs.LogStart < start) {
						behind[p.Partition] = append(behind[p.Partition], rs.Broker)
					}
				}
				if len(behind[p.Partition]) == 0 {
					delete(behind, p.Partition)
				}
			}
			if len(behind) == 0 {
				return isr, behind, nil
			}
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			if derr != nil && isr == nil {
				return nil, nil, fmt.Errorf("%w (last error: %v)", err, derr)
			}
			return isr, behind, err
		}
	}
}
