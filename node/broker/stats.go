package broker

import (
	"cmp"
	"slices"
	"sync/atomic"
	"time"

	"paymentlog/metrics"
	"paymentlog/node/replica"
	"paymentlog/wire"
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

	// ProduceThrottled and FetchThrottled count the client requests held
	// back for their principal's byte-rate quota, ProduceThrottleTime and
	// FetchThrottleTime for how long in all (quotas.go).
	ProduceThrottled, FetchThrottled       uint64
	ProduceThrottleTime, FetchThrottleTime time.Duration

	ProduceRequests       uint64 // produce requests handled
	ProduceBytes          uint64 // batch bytes appended as leader (duplicates not counted)
	ReplicaFetchResponses uint64 // answers sent to followers' fetches
	// ProduceReorderWaits counts produce batches that reached their leader
	// ahead of an earlier batch of their producer and waited for it;
	// ProduceReorderRefused those refused when the wait was up (the
	// earlier batch lost, refused, or later than Config.ReorderWait).
	ProduceReorderWaits, ProduceReorderRefused uint64
	// ProduceStreamOrderWaits counts batches without a sequence that
	// waited for an earlier stream of their connection (produce_order.go);
	// ProduceStreamOrderSkipped those appended when the wait for an earlier
	// stream whose request had not been read yet was up.
	ProduceStreamOrderWaits, ProduceStreamOrderSkipped uint64
	// RetentionDeletedSegments counts segments deleted by retention (and
	// by following a leader's log start); RetentionFailures the partition
	// passes that failed (the segments stay: the disk fills).
	RetentionDeletedSegments uint64
	RetentionFailures        uint64
	ProducerIDsExpired       uint64 // idle producer ids forgotten
	// CleanerPasses counts the log cleaner's partition passes that
	// rewrote segments, CleanerRemovedRecords the records (superseded
	// ones and expired tombstones) they removed, CleanerBytesReclaimed
	// the segment bytes they freed, and CleanerFailures the partition
	// passes that failed (cleaner.go). CleanerSegmentsMerged counts the
	// segments those passes folded into a neighbour (each pass writes one
	// segment per group of small ones: segment/compaction_group.go).
	// CleanerThrottleTime is how long the cleaner slept for
	// Config.CleanerIOMaxBytesPerSec.
	CleanerPasses, CleanerRemovedRecords, CleanerBytesReclaimed, CleanerFailures uint64
	CleanerSegmentsMerged                                                        uint64
	CleanerThrottleTime                                                          time.Duration
	// CleanerThrottle is the log cleaner's rate in bytes per second (0:
	// unlimited; SetCleanerThrottle).
	CleanerThrottle int64
	// Cleaner is what the log cleaner's last pass found and took
	// (cleaner_threads.go).
	Cleaner CleanerStats
	// ScrubBytes counts the bytes the scrubber checked, ScrubPasses its
	// passes over every partition, ScrubCorrupt the corrupt batches it
	// found (each failed its partition's log: scrub.go).
	ScrubBytes, ScrubPasses, ScrubCorrupt uint64
	// ScrubQuarantineBytes is the size of what scrub repairs set aside in
	// this node's partition directories, still there (as of each
	// partition's open, last retention pass or last quarantine removal).
	ScrubQuarantineBytes int64
	// ScrubQuarantineRemoved counts the quarantines the sweep removed,
	// redundant past their retention (quarantine_sweep.go).
	ScrubQuarantineRemoved uint64
	// ScrubQuarantineRetention is how long a quarantine is kept before
	// the sweep may remove it (0: never; SetQuarantineRetention).
	ScrubQuarantineRetention time.Duration
	// ReassignCopyBytes counts the bytes fetched for replicas a
	// reassignment is adding here, until each is in the ISR.
	ReassignCopyBytes uint64
	// ReassignThrottle is the rate those copies are held to, in bytes per
	// second (0: unlimited; SetReassignmentThrottle).
	ReassignThrottle int64

	// LogSizeBytes is the bytes of every partition log's segments here.
	LogSizeBytes int64
	// MaxFollowerLag is the largest lag, in offsets, of a follower of a
	// partition led here (Kafka's replica MaxLag, seen from the leader).
	MaxFollowerLag int64
	// ISRShrinks and ISRExpands count committed ISR changes of partitions
	// led here that removed, or added, a member (one change may do both).
	ISRShrinks, ISRExpands uint64
	// LeaderChanges counts the times a partition became led here.
	LeaderChanges uint64
	// FetchRequests and FetchBytes count consumer fetches answered and the
	// record bytes they carried (followers' fetches are not counted).
	FetchRequests, FetchBytes uint64
	// Flushes and FlushBytes count group-commit flushes of partition logs
	// and the bytes they made durable.
	Flushes, FlushBytes uint64
	// PageCacheDroppedBytes counts the durable bytes of partition logs
	// dropped from the page cache (segment.Options.CacheBytes).
	PageCacheDroppedBytes uint64
	// RecompressedBatches counts the batches appended as leader in their
	// topic's compression.type rather than the codec they were sent in
	// (recompress.go; retried duplicates not counted), and
	// RecompressedSentBytes and RecompressedStoredBytes their sizes as
	// sent and as stored.
	RecompressedBatches, RecompressedSentBytes, RecompressedStoredBytes uint64
}

// Acks levels, the index of Latencies.Produce.
const (
	AcksLevelNone = iota
	AcksLevelLeader
	AcksLevelAll
	acksLevels
)

// AcksLevelName is a level's label on /metrics ("0", "1", "all").
var AcksLevelName = [acksLevels]string{"0", "1", "all"}

// acksLevel maps a request's acks to its level (anything but 0 and -1
// behaves as 1).
func acksLevel(acks int8) int {
	switch acks {
	case wire.AcksNone:
		return AcksLevelNone
	case wire.AcksAll:
		return AcksLevelAll
	}
	return AcksLevelLeader
}

// Latencies are the broker's latency histograms.
type Latencies struct {
	// Produce is by acks level: from the handler's start (before the
	// request is decoded) to its answer (all partitions done), on the
	// leader, for every request whose frame decoded.
	Produce [acksLevels]metrics.HistogramSnapshot
	// Flush is a group-commit flush of a partition log (segment.Options.OnFlush).
	Flush metrics.HistogramSnapshot
}

// Latencies returns the latency histograms now.
func (b *Broker) Latencies() Latencies {
	var l Latencies
	for i := range l.Produce {
		l.Produce[i] = b.counters.produceLatency[i].Snapshot()
	}
	l.Flush = b.counters.flushLatency.Snapshot()
	return l
}

// Requests whose answers' error codes are counted (ErrorCount.Request).
const (
	RequestProduce = iota
	RequestFetch
	RequestReplicaFetch // followers' fetches, answered here as leader
	countedRequests
)

// RequestName is a counted request's label on /metrics.
var RequestName = [countedRequests]string{"produce", "fetch", "replica_fetch"}

// errSlots bounds the error codes counted apart; larger ones share the last.
const errSlots = 64

// ErrorCount is how many partition answers of one request type carried one
// error code.
type ErrorCount struct {
	Request int // RequestProduce, RequestFetch, RequestReplicaFetch
	Code    wire.ErrorCode
	Other   bool // a code >= errSlots-1 (Code is then errSlots-1)
	Count   uint64
}

// ErrorCounts lists the error codes answered so far (one per partition of a
// request), only those seen.
func (b *Broker) ErrorCounts() []ErrorCount {
	var out []ErrorCount
	for r := range countedRequests {
		for c := range errSlots {
			if n := b.counters.errors[r][c].Load(); n > 0 {
				out = append(out, ErrorCount{Request: r, Code: wire.ErrorCode(c), Other: c == errSlots-1, Count: n})
			}
		}
	}
	return out
}

// counters are the broker's request counters.
type counters struct {
	produceRequests       atomic.Uint64
	produceBytes          atomic.Uint64
	replicaFetchResponses atomic.Uint64
	// reorderWaits counts produce batches that waited for an earlier one
	// of their producer, reorderRefused those still ahead when the wait
	// was up (reorder.go).
	reorderWaits, reorderRefused atomic.Uint64
	// orderWaits and orderSkipped: see Stats.ProduceStreamOrderWaits;
	// orderAwaiting counts the batches in produceOrder.await now.
	orderWaits, orderSkipped atomic.Uint64
	orderAwaiting            atomic.Int64
	retentionDeleted         atomic.Uint64
	retentionFailures        atomic.Uint64
	producerIDsExpired       atomic.Uint64
	// cleanerPasses, cleanerRemoved, cleanerReclaimed and cleanerFailures
	// count the log cleaner's partition passes that ran, the records and
	// tombstones they removed, the bytes they reclaimed, and the passes
	// that failed (cleaner.go).
	cleanerPasses, cleanerRemoved, cleanerReclaimed, cleanerFailures atomic.Uint64
	// scrubBytes, scrubPasses and scrubCorrupt count the scrubber's work
	// (scrub.go).
	scrubBytes, scrubPasses, scrubCorrupt atomic.Uint64
	cleanerMerged                         atomic.Uint64 // segments folded into a neighbour
	cleanerThrottledNanos                 atomic.Int64
	// producerReplayBatches counts the batch headers read from the logs to
	// rebuild producer state (for tests: a truncation should read few).
	producerReplayBatches atomic.Uint64
	// reassignCopyBytes counts the bytes fetched for replicas a
	// reassignment is adding to this node, until they are in the ISR.
	reassignCopyBytes atomic.Uint64

	produceLatency         [acksLevels]metrics.Histogram
	flushLatency           metrics.Histogram
	flushBytes             atomic.Uint64
	cacheDropped           atomic.Uint64
	isrShrinks, isrExpands atomic.Uint64
	leaderChanges          atomic.Uint64
	fetchRequests          atomic.Uint64
	fetchBytes             atomic.Uint64
	errors                 [countedRequests][errSlots]atomic.Uint64
	// throttled and throttledNanos count the client requests held back
	// for their principal's quota, and for how long (quotas.go).
	throttled, throttledNanos [throttledKinds]atomic.Uint64
	// recompressedBatches, recompressedSent and recompressedStored count
	// the batches appended in their topic's compression.type rather than
	// as sent, and their bytes before and after (countRecompressed).
	recompressedBatches, recompressedSent, recompressedStored atomic.Uint64
}

// countRecompressed counts a batch of sent bytes appended as stored bytes
// in its topic's compression.type.
func (c *counters) countRecompressed(sent, stored int) {
	c.recompressedBatches.Add(1)
	c.recompressedSent.Add(uint64(sent))
	c.recompressedStored.Add(uint64(stored))
}

// countError counts one partition answer's code (None is not counted).
func (c *counters) countError(req int, code wire.ErrorCode) {
	if code == wire.None {
		return
	}
	i := int(code)
	if i < 0 || i >= errSlots {
		i = errSlots - 1
	}
	c.errors[req][i].Add(1)
}

// produced records a produce request answered: its latency since start,
// and each partition's error code.
func (c *counters) produced(acks int8, start time.Time, parts []wire.ProducePartitionResponse) {
	c.produceLatency[acksLevel(acks)].Since(start)
	for i := range parts {
		c.countError(RequestProduce, parts[i].Err)
	}
}

// fetched records a consumer fetch answered.
func (c *counters) fetched(resp *wire.FetchResponse) {
	c.fetchRequests.Add(1)
	var n int
	for i := range resp.Parts {
		n += len(resp.Parts[i].Records)
		c.countError(RequestFetch, resp.Parts[i].Err)
	}
	c.fetchBytes.Add(uint64(n))
}

// replicaFetched records a follower's fetch answered: each partition's
// error code (FencedLeaderEpoch: a follower whose metadata lags; NotReplica:
// one that has not applied its removal yet).
func (c *counters) replicaFetched(resp *wire.ReplicaFetchResponse) {
	for i := range resp.Parts {
		c.countError(RequestReplicaFetch, resp.Parts[i].Err)
	}
}

// onFlush returns the partition logs' segment.Options.OnFlush: it times
// each flush, then calls next (the configured one, if any).
func (c *counters) onFlush(next func(time.Duration, int64)) func(time.Duration, int64) {
	return func(d time.Duration, n int64) {
		c.flushLatency.Observe(d)
		c.flushBytes.Add(uint64(n))
		if next != nil {
			next(d, n)
		}
	}
}

// onCacheDrop returns the partition logs' segment.Options.OnCacheDrop: it
// counts the bytes, then calls next (the configured one, if any).
func (c *counters) onCacheDrop(next func(int64)) func(int64) {
	return func(n int64) {
		c.cacheDropped.Add(uint64(n))
		if next != nil {
			next(n)
		}
	}
}

// countISRChangeLocked counts a committed ISR change of a partition led
// here, from before to the replica's ISR now; p.mu held.
func (p *partition) countISRChangeLocked(before []int32) {
	r := p.mu.r
	if r.Role() != replica.RoleLeader {
		return
	}
	after := r.ISR()
	for _, id := range before {
		if !slices.Contains(after, id) {
			p.b.counters.isrShrinks.Add(1)
			break
		}
	}
	for _, id := range after {
		if !slices.Contains(before, id) {
			p.b.counters.isrExpands.Add(1)
			break
		}
	}
}

// Stats returns the current snapshot.
func (b *Broker) Stats() Stats {
	s := Stats{
		ProduceRequests:       b.counters.produceRequests.Load(),
		ProduceBytes:          b.counters.produceBytes.Load(),
		ReplicaFetchResponses: b.counters.replicaFetchResponses.Load(),
		ProduceReorderWaits:   b.counters.reorderWaits.Load(),
		ProduceReorderRefused: b.counters.reorderRefused.Load(),

		ProduceStreamOrderWaits:   b.counters.orderWaits.Load(),
		ProduceStreamOrderSkipped: b.counters.orderSkipped.Load(),

		RetentionDeletedSegments: b.counters.retentionDeleted.Load(),
		RetentionFailures:        b.counters.retentionFailures.Load(),
		ProducerIDsExpired:       b.counters.producerIDsExpired.Load(),
		CleanerPasses:            b.counters.cleanerPasses.Load(),
		CleanerRemovedRecords:    b.counters.cleanerRemoved.Load(),
		CleanerBytesReclaimed:    b.counters.cleanerReclaimed.Load(),
		CleanerFailures:          b.counters.cleanerFailures.Load(),
		CleanerSegmentsMerged:    b.counters.cleanerMerged.Load(),
		CleanerThrottleTime:      time.Duration(b.counters.cleanerThrottledNanos.Load()),
		CleanerThrottle:          b.cleanerThrottle.limit(),
		Cleaner:                  b.cleaner.snapshot(b.cfg.Now()),
		ReassignCopyBytes:        b.counters.reassignCopyBytes.Load(),
		ScrubBytes:               b.counters.scrubBytes.Load(),
		ScrubPasses:              b.counters.scrubPasses.Load(),
		ScrubCorrupt:             b.counters.scrubCorrupt.Load(),
		ScrubQuarantineRemoved:   b.quarantine.removed.Load(),
		ScrubQuarantineRetention: time.Duration(b.quarantine.retention.Load()),
		ReassignThrottle:         b.throttle.limit(),

		ISRShrinks:    b.counters.isrShrinks.Load(),
		ISRExpands:    b.counters.isrExpands.Load(),
		LeaderChanges: b.counters.leaderChanges.Load(),
		FetchRequests: b.counters.fetchRequests.Load(),
		FetchBytes:    b.counters.fetchBytes.Load(),
		Flushes:       b.counters.flushLatency.Snapshot().Count,
		FlushBytes:    b.counters.flushBytes.Load(),

		PageCacheDroppedBytes: b.counters.cacheDropped.Load(),

		RecompressedBatches:     b.counters.recompressedBatches.Load(),
		RecompressedSentBytes:   b.counters.recompressedSent.Load(),
		RecompressedStoredBytes: b.counters.recompressedStored.Load(),

		ProduceThrottled:    b.counters.throttled[throttledProduce].Load(),
		FetchThrottled:      b.counters.throttled[throttledFetch].Load(),
		ProduceThrottleTime: time.Duration(b.counters.throttledNanos[throttledProduce].Load()),
		FetchThrottleTime:   time.Duration(b.counters.throttledNanos[throttledFetch].Load()),
	}
	for _, p := range b.partitions() {
		if p.log != nil {
			if p.log.Failed() != nil {
				s.FailedLogs++
			}
			s.LogSizeBytes += p.log.Size()
		}
		s.ScrubQuarantineBytes += p.quarantined.Load()
		p.mu.Lock()
		stopped, r := p.mu.stopped, p.mu.r
		var role replica.Role
		var isr, replicas, minISR int
		if !stopped {
			role, isr, replicas, minISR = r.Role(), len(r.ISR()), len(r.Replicas())-p.mu.adding, r.MinISR()
			for _, l := range r.FollowerLags() {
				s.MaxFollowerLag = max(s.MaxFollowerLag, l.Messages)
			}
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

// PartitionStat is one local replica's state (for /metrics).
type PartitionStat struct {
	Topic     string
	Partition int32
	Role      replica.Role
	// LogEnd, HW and LogStart are the replica's offsets: the log end
	// offset, the high watermark and the log start offset.
	LogEnd, HW, LogStart int64
	SizeBytes            int64 // the log's segment bytes
	ISR, Replicas        int   // sizes, as this replica knows them (the leader's view is the current one)
	// Followers is the leader's view of each follower (leaders only).
	Followers []replica.FollowerLag
}

// PartitionStats returns the state of the first limit local replicas in
// order of topic and partition (all of them when limit <= 0), and how many
// replicas there are in all. Stopped ones are left out.
func (b *Broker) PartitionStats(limit int) ([]PartitionStat, int) {
	parts := b.partitions()
	slices.SortFunc(parts, func(x, y *partition) int {
		return cmp.Or(cmp.Compare(x.key.topic, y.key.topic), cmp.Compare(x.key.partition, y.key.partition))
	})
	total := len(parts)
	if limit > 0 && len(parts) > limit {
		parts = parts[:limit]
	}
	out := make([]PartitionStat, 0, len(parts))
	for _, p := range parts {
		st := PartitionStat{Topic: p.key.topic, Partition: p.key.partition}
		p.mu.Lock()
		if p.mu.stopped {
			p.mu.Unlock()
			continue
		}
		r := p.mu.r
		st.Role, st.LogEnd, st.HW, st.LogStart = r.Role(), r.LEO(), r.HW(), r.LogStart()
		st.ISR, st.Replicas = len(r.ISR()), len(r.Replicas())
		st.Followers = r.FollowerLags()
		p.mu.Unlock()
		st.SizeBytes = p.log.Size()
		out = append(out, st)
	}
	return out, total
}
