// Package broker is a node's partition I/O: it owns the local replica of
// every assigned partition (its segment.Log and its replica.Replica state
// machine) and serves Produce, Fetch, ListOffsets, DescribeReplica and the
// follower fetch sessions over quic. It proposes ISR changes through
// Config.AlterPartition and learns every decision from metadata through
// ApplyPartition; it never decides cluster state itself.
//
// Concurrency: each partition has an appendMu that serialises changes to the
// log's contents (appends, follower copies and truncations, role transitions;
// I/O happens under it, but for retention's deletions, which hold only
// snapMu across theirs) and a mu that guards the replica state machine and
// waiters (no I/O under it). Lock order: snapMu (producer snapshots), appendMu, mu,
// Broker.mu.
//
// Idempotent producers: each partition remembers the last 5 batches of every
// producer id in its log (producerState), updated by leader appends and
// follower copies alike, so every replica holding the same log answers a
// retry the same way. A follower's truncation rolls it back from memory
// (the batches above the HW are kept apart); the part below the HW is
// written to ProducerSnapshotFile now and then and at a clean close, and the
// next open starts from it instead of replaying every batch header of the log.
//
// Retention (retention.go): every Config.RetentionCheckInterval each replica,
// leader or follower, deletes its oldest whole sealed segments past the
// topic's retention.ms or retention.bytes (PartitionState; the broker's
// defaults otherwise), never the active segment and never a segment holding
// an offset at or above its HW. The log start offset moves to the first
// segment kept (fetches below it are OffsetOutOfRange); followers also raise
// theirs to the leader's, bounded by their HW, as they fetch. The producer
// state is snapshotted before each deletion, so producers whose batches are
// deleted are still recognised, also after a restart. Producer ids idle for
// Config.ProducerIDExpiration are forgotten at the same pace
// (producer_expiry.go).
//
// Compaction (cleaner.go): every Config.CleanerInterval each replica of a
// topic whose cleanup.policy includes compact, leader or follower, runs a
// segment.Log.Compact pass below its HW, the dirtiest first, by
// Config.CleanerThreads workers (cleaner_threads.go); such a
// topic's leader refuses records without a key (InvalidRecord), and a
// topic whose policy is compact alone gets no retention.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

// Defaults.
const (
	// DefaultReplicaLagTime is how long a follower may go without catching
	// up before the leader proposes removing it from the ISR. 2s is twice
	// the default session timeout (1s): a dead broker is fenced by the
	// controller (which removes it from every ISR) before its leaders would
	// shrink it, so the lag rule only catches replicas that are alive but
	// slow (a stalled disk, a paused process, a congested link). Shorter
	// values flap the ISR under GC pauses or fsync stalls of a few hundred
	// ms; longer ones hold acks=all writes hostage to a stuck follower.
	DefaultReplicaLagTime = 2 * time.Second
	// DefaultReplicaFetchMaxWait bounds a follower long-poll; it must stay
	// well below the lag time since an idle follower proves it is caught up
	// only by fetching.
	DefaultReplicaFetchMaxWait = 500 * time.Millisecond
	// DefaultReplicaHWDelay is how long the leader holds a follower's fetch
	// answer that would carry only a new HW (no records), in case records
	// arrive to carry it. Under load they almost always do, which saves two
	// messages per produce (the HW-only answer and the fetch it triggers);
	// an idle follower learns the HW this much later. Nothing waits on a
	// follower's HW: acks=all completes on the leader's HW, which moves
	// when the follower's next fetch arrives, not when its answer leaves.
	DefaultReplicaHWDelay = 10 * time.Millisecond
	// DefaultReplicaFetchMaxBytes bounds one follower fetch response.
	DefaultReplicaFetchMaxBytes = 8 << 20
	// DefaultProducerSnapshotBatches is how many batches become stable (fall
	// below the HW) between two producer snapshots of a partition: a node
	// restarting after a crash replays about that many batch headers per
	// partition to rebuild its producer state, and a snapshot costs an
	// encoding of the partition's producers and one small file write.
	DefaultProducerSnapshotBatches = 100_000
	// DefaultProducerSnapshotBytes: a partition's log growing this much
	// since its last producer snapshot also makes one due (when it would
	// end further than the last one). Batches of 64 KiB reach 100 000 only
	// after 6 GB, which a restart after a crash would then read from disk
	// to rebuild the state; the segment's own recovery point is paced the
	// same (segment.DefaultActivePointBytes, which says why 32 MiB).
	DefaultProducerSnapshotBytes = 32 << 20
	// DefaultRetentionCheckInterval is how often each partition's retention
	// is applied (Kafka's log.retention.check.interval.ms).
	DefaultRetentionCheckInterval = 5 * time.Minute
	// DefaultCleanerInterval is how often the log cleaner looks at the
	// compacted partitions (Kafka's log.cleaner.backoff.ms is 15 s).
	DefaultCleanerInterval = 15 * time.Second
	// DefaultProducerIDExpiration is how long a partition remembers an idle
	// producer id (Kafka's producer.id.expiration.ms).
	DefaultProducerIDExpiration = 24 * time.Hour
	// DefaultProduceTimeout applies when a request carries no timeout.
	DefaultProduceTimeout = 30 * time.Second
	// CheckpointFile is the HW checkpoint in the data directory.
	CheckpointFile = "replication-offset-checkpoint"
)

// ErrClosed is returned by methods called after Close.
var ErrClosed = errors.New("broker: closed")

// Config configures a Broker.
type Config struct {
	NodeID int32
	// Incarnation is this process's registered incarnation (its broker
	// epoch): it opens every fetch session, so that leaders name it when
	// they propose this broker's return to an ISR (KIP-903), and it signs
	// this broker's AlterPartition requests.
	Incarnation int64
	DataDir     string
	Endpoint    *quic.Endpoint
	// Log options applied to every partition log (fsync policy, segment size...).
	Log                  segment.Options
	ReplicaLagTime       time.Duration // DefaultReplicaLagTime
	ReplicaFetchMaxWait  time.Duration // DefaultReplicaFetchMaxWait
	ReplicaFetchMaxBytes int32         // DefaultReplicaFetchMaxBytes
	// ReassignmentThrottle limits, in bytes per second over all its
	// partitions, how fast this node copies partitions a reassignment is
	// adding it to, until each is in the ISR (throttle.go); 0: unlimited.
	ReassignmentThrottle int64
	ReplicaHWDelay       time.Duration // DefaultReplicaHWDelay; negative: answer an HW change at once
	// ReorderWait and ReorderWaitFirst bound how long a batch ahead of its
	// producer's sequence waits for the batches before it, and for the
	// producer's sequence 0 (reorder.go).
	ReorderWait      time.Duration // DefaultReorderWait
	ReorderWaitFirst time.Duration // DefaultReorderWaitFirst
	// ProducerSnapshotBatches and ProducerSnapshotBytes pace the producer
	// snapshots (ProducerSnapshotFile): whichever comes first.
	ProducerSnapshotBatches int   // DefaultProducerSnapshotBatches
	ProducerSnapshotBytes   int64 // DefaultProducerSnapshotBytes
	// RetentionCheckInterval paces the retention passes (retention.go).
	RetentionCheckInterval time.Duration // DefaultRetentionCheckInterval
	// RetentionMs and RetentionBytes are the node's defaults for a topic
	// that sets no retention.ms or retention.bytes; 0 or -1: forever,
	// unlimited (the default).
	RetentionMs, RetentionBytes int64
	// CleanerInterval paces the log cleaner's passes over the compacted
	// partitions (cleaner.go); negative: no cleaner loop (CompactNow
	// still runs a pass).
	CleanerInterval time.Duration // DefaultCleanerInterval
	// ScrubInterval paces the scrubber's passes over every sealed segment
	// (scrub.go); 0: no scrubbing (ScrubNow still runs a pass).
	// ScrubBytesPerSec bounds how fast a pass reads (0: unlimited), and
	// ScrubDelay is the wait before the first pass.
	ScrubInterval    time.Duration
	ScrubBytesPerSec int64
	ScrubDelay       time.Duration
	// QuarantineRetention is how long a scrub repair's quarantine is kept
	// before the sweep may remove it, once redundant
	// (quarantine_sweep.go); 0: never automatically.
	QuarantineRetention time.Duration
	// CleanerIOMaxBytesPerSec limits the bytes the log cleaner reads and
	// writes per second over all its passes (Kafka's
	// log.cleaner.io.max.bytes.per.second); 0: unlimited.
	CleanerIOMaxBytesPerSec int64
	// CleanerDedupeBufferSize bounds the memory of a pass's key map
	// (segment.CompactOptions.MaxMapBytes; Kafka's
	// log.cleaner.dedupe.buffer.size); 0: segment's default, 128 MiB.
	CleanerDedupeBufferSize int64
	// CleanerThreads is how many partitions the log cleaner compacts at
	// once (Kafka's log.cleaner.threads; cleaner_threads.go): they share
	// CleanerIOMaxBytesPerSec, and each pass's key map gets an equal
	// share of CleanerDedupeBufferSize.
	CleanerThreads int // DefaultCleanerThreads
	// ProducerIDExpiration: producer_expiry.go.
	ProducerIDExpiration time.Duration // DefaultProducerIDExpiration
	// ReleaseDiskReserve, when set, is called when a deletion of segments
	// (retention, a follower raising its log start) could not write what
	// must precede it for lack of space; it frees the node's disk reserve
	// and reports whether it did, in which case the deletion is tried once
	// more (node/diskreserve.go).
	ReleaseDiskReserve func() bool
	// AlterPartition sends an ISR change to the active controller (routed by node).
	AlterPartition func(ctx context.Context, req wire.AlterPartitionRequest) (wire.AlterPartitionResponse, error)
	Now            func() time.Time // time.Now
	Logger         *slog.Logger     // slog.Default(); should name the node (the node's logger carries node=ID)
	// Authorize checks client requests against the ACLs (authorize.go);
	// nil allows everything.
	Authorize Authorize
	// RackOf, if set, gives a broker's --rack ("" for none), for fetches
	// from the follower in the consumer's rack (follower_reads.go).
	RackOf func(id int32) string
	// CurrentTopicID, if set, gives the id of the topic incarnation the
	// node's metadata image holds for a partition (ok false: the image has
	// no such partition, its topic deleted); client requests refuse a
	// replica of any other (clientPartition, current_topic.go).
	CurrentTopicID func(topic string, partition int32) (id string, ok bool)
	// WrapHandler, if set, wraps each unary handler the broker registers
	// (the node's audit trail wraps DeleteRecords'; others it returns as
	// they are).
	WrapHandler func(t quic.FrameType, h quic.UnaryHandler) quic.UnaryHandler
	// Quotas holds back client requests over their principal's byte-rate
	// quota (quotas.go); nil throttles nothing.
	Quotas Quotas
}

func (c *Config) setDefaults() {
	if c.ReplicaLagTime <= 0 {
		c.ReplicaLagTime = DefaultReplicaLagTime
	}
	if c.ReplicaFetchMaxWait <= 0 {
		c.ReplicaFetchMaxWait = DefaultReplicaFetchMaxWait
	}
	if c.ReplicaFetchMaxBytes <= 0 {
		c.ReplicaFetchMaxBytes = DefaultReplicaFetchMaxBytes
	}
	if c.ReplicaHWDelay == 0 {
		c.ReplicaHWDelay = DefaultReplicaHWDelay
	}
	if c.ReorderWait <= 0 {
		c.ReorderWait = DefaultReorderWait
	}
	if c.ReorderWaitFirst <= 0 {
		c.ReorderWaitFirst = DefaultReorderWaitFirst
	}
	if c.ProducerSnapshotBatches <= 0 {
		c.ProducerSnapshotBatches = DefaultProducerSnapshotBatches
	}
	if c.ProducerSnapshotBytes <= 0 {
		c.ProducerSnapshotBytes = DefaultProducerSnapshotBytes
	}
	if c.RetentionCheckInterval <= 0 {
		c.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if c.ProducerIDExpiration <= 0 {
		c.ProducerIDExpiration = DefaultProducerIDExpiration
	}
	if c.CleanerInterval == 0 {
		c.CleanerInterval = DefaultCleanerInterval
	}
	if c.CleanerThreads <= 0 {
		c.CleanerThreads = DefaultCleanerThreads
	}
	if c.RetentionMs == 0 {
		c.RetentionMs = -1
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = -1
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// PartitionState is a partition's state from the metadata image.
type PartitionState struct {
	Topic, TopicID                                 string
	Partition, Leader, LeaderEpoch, PartitionEpoch int32
	Replicas, ISR                                  []int32
	MinISR                                         int32
	// Adding are the replicas a reassignment in progress adds (they count
	// toward the replicas, but not yet toward under-replication).
	Adding []int32
	// RetentionMs and RetentionBytes are the topic's retention.ms and
	// retention.bytes (-1: forever, unlimited); nil: the broker's default
	// (Config.RetentionMs, RetentionBytes). They may change while the
	// partition is open (AlterConfigs): each ApplyPartition sets them, and
	// the next retention pass uses them. MinISR may change likewise.
	RetentionMs, RetentionBytes *int64
	// SegmentBytes is the topic's segment.bytes (0: the broker's
	// Config.Log.SegmentBytes). It takes effect when the partition's log
	// opens; it is fixed when the topic is created (AlterConfigs refuses
	// to change it).
	SegmentBytes int64
	// SegmentMs is the topic's segment.ms (0: the broker's
	// Config.Log.RollAge): how long the active segment stays open
	// (rollAgeOf). It may change while the partition is open.
	SegmentMs time.Duration
	// Cleanup is the topic's cleanup.policy and Compaction its compaction
	// configs (cleaner.go), which the node fills in whole, defaults
	// included (a zero Compaction means zeros: clean at any dirty ratio,
	// no lag, tombstones removed at once). Both may change while the
	// partition is open, like RetentionMs.
	Cleanup    CleanupPolicy
	Compaction CompactionConfig
	// Messages is what the topic's configs ask of each produced batch
	// (messages.go). It may change while the partition is open: the next
	// produce request uses it.
	Messages MessagePolicy
}

type tp struct {
	topic     string
	partition int32
}

func (k tp) String() string { return fmt.Sprintf("%s-%d", k.topic, k.partition) }

// Broker serves the local replicas of a node. Lifecycle: New registers the
// quic handlers and starts the background loops (ISR ticks, HW checkpoints,
// retention, the log cleaner);
// the node glue then feeds metadata with ApplyPartition/StopPartition; Close
// stops fetchers and loops, fails waiting requests, writes a final HW
// checkpoint and closes every log. Methods called after Close return
// ErrClosed.
type Broker struct {
	cfg    Config
	log    *slog.Logger
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	fenced atomic.Bool
	// eligible is SetEligibleBrokers' map: live brokers and their
	// registered incarnations (nil until the first call).
	eligible atomic.Pointer[map[int32]int64]
	diskFull atomic.Bool // SetDiskFull: followers do not fetch
	// empty orders markEmpty (read lock: several logs open at once)
	// against Registered (empty_replica.go).
	empty struct {
		sync.RWMutex
		registered bool // or the node's storage is new: no marks
	}
	reqSeq   atomic.Uint64
	throttle *byteThrottle // nil: unlimited
	// cleanerThrottle holds the log cleaner to
	// Config.CleanerIOMaxBytesPerSec (cleaner.go).
	cleanerThrottle *byteThrottle
	counters        counters
	ckptDirty       atomic.Bool
	ckptMu          sync.Mutex // serialises checkpoint writes
	cleanMu         sync.Mutex // serialises the log cleaner's passes (CompactNow)
	cleaner         cleanerStats
	quarantine      quarantineSweep

	// hooks are test hooks: nil outside tests.
	hooks struct {
		// beforeReplicaRead runs in buildReplicaFetch between the checks
		// of a follower's request and the read of its records.
		beforeReplicaRead atomic.Pointer[func(*wire.ReplicaFetchPartition)]
		// beforeConsumerRead runs in buildFetch between the checks of a
		// consumer's fetch (epochs, divergence, range) and the read.
		beforeConsumerRead atomic.Pointer[func(*wire.FetchPartition)]
		// beforeFetcherAdd runs in attachFetcher between finding (or
		// starting) the leader's fetcher and adding the partition to it.
		beforeFetcherAdd atomic.Pointer[func(leader int32, key tp)]
		// producerReplay runs before a follower truncation replays its log
		// into a new producer state; an error it returns fails the replay
		// (as a read error of the log would).
		producerReplay atomic.Pointer[func() error]
		// opened runs in getOrOpen after each partition log open.
		opened atomic.Pointer[func(key tp)]
		// compact runs instead of segment.Log.Compact in the cleaner's
		// passes (cleaner.go).
		compact atomic.Pointer[func(key tp, o segment.CompactOptions) (segment.CompactResult, error)]
		// cleanerSleep runs instead of the cleaner's sleep when its
		// throttle holds it back.
		cleanerSleep atomic.Pointer[func(ctx context.Context, d time.Duration) error]
	}

	mu struct {
		sync.Mutex
		closed   bool
		parts    map[tp]*partition
		addrs    map[int32]string
		fetchers map[int32]*fetcher // by leader id
		ckpt     map[tp]int64       // HWs read from the checkpoint at start, for partitions not yet opened
		// opening holds a channel per partition whose log is being opened,
		// closed when the open ends (open.go).
		opening map[tp]chan struct{}
	}
}

// New creates the broker, reads the HW checkpoint and registers its quic
// handlers on cfg.Endpoint (when non-nil). Partition logs are opened lazily,
// on the first ApplyPartition that names them.
func New(ctx context.Context, cfg Config) (*Broker, error) {
	cfg.setDefaults()
	if cfg.DataDir == "" {
		return nil, errors.New("broker: DataDir required")
	}
	b := &Broker{cfg: cfg, log: cfg.Logger} // the caller's logger names the node
	b.throttle = newByteThrottle(cfg.ReassignmentThrottle)
	b.cleanerThrottle = newByteThrottle(cfg.CleanerIOMaxBytesPerSec)
	b.quarantine.retention.Store(int64(max(cfg.QuarantineRetention, 0)))
	b.cleaner.lastRun = b.cfg.Now()
	b.cfg.Log.OnFlush = b.counters.onFlush(cfg.Log.OnFlush)
	b.cfg.Log.OnCacheDrop = b.counters.onCacheDrop(cfg.Log.OnCacheDrop)
	b.ctx, b.cancel = context.WithCancel(context.WithoutCancel(ctx))
	b.mu.parts = make(map[tp]*partition)
	b.mu.opening = make(map[tp]chan struct{})
	b.mu.addrs = make(map[int32]string)
	b.mu.fetchers = make(map[int32]*fetcher)
	ck, err := readCheckpoint(cfg.Log.FS, filepath.Join(cfg.DataDir, CheckpointFile))
	if err != nil {
		return nil, err
	}
	b.mu.ckpt = ck
	if e := cfg.Endpoint; e != nil {
		wrap := cfg.WrapHandler
		if wrap == nil {
			wrap = func(_ quic.FrameType, h quic.UnaryHandler) quic.UnaryHandler { return h }
		}
		e.HandleOrdered(wire.TypeProduce, wrap(wire.TypeProduce, b.handleProduce)) // produce_order.go
		e.Handle(wire.TypeFetch, wrap(wire.TypeFetch, b.handleFetch))
		e.Handle(wire.TypeListOffsets, wrap(wire.TypeListOffsets, b.handleListOffsets))
		e.Handle(wire.TypeDeleteRecords, wrap(wire.TypeDeleteRecords, b.handleDeleteRecords))
		e.Handle(wire.TypeDescribeReplica, wrap(wire.TypeDescribeReplica, b.handleDescribeReplica))
		e.Handle(wire.TypeDescribeProducers, wrap(wire.TypeDescribeProducers, b.handleDescribeProducers))
		e.HandleSession(wire.TypeReplicaFetch, b.serveReplicaFetch)
	}
	b.wg.Add(3)
	go b.tickLoop()
	go b.checkpointLoop()
	go b.retentionLoop()
	if cfg.CleanerInterval > 0 {
		b.wg.Add(1)
		go b.cleanerLoop()
	}
	if cfg.ScrubInterval > 0 {
		b.wg.Add(1)
		go b.scrubLoop()
	}
	return b, nil
}

// SetBrokerAddrs gives the addresses of the other brokers (for fetching).
func (b *Broker) SetBrokerAddrs(addrs map[int32]string) {
	b.mu.Lock()
	changed := make([]*fetcher, 0)
	for id, a := range addrs {
		if b.mu.addrs[id] != a {
			if f := b.mu.fetchers[id]; f != nil {
				changed = append(changed, f)
			}
		}
	}
	b.mu.addrs = make(map[int32]string, len(addrs))
	for id, a := range addrs {
		b.mu.addrs[id] = a
	}
	b.mu.Unlock()
	for _, f := range changed {
		f.poke()
	}
}

func (b *Broker) addr(id int32) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.addrs[id]
}

// SetFenced marks the broker fenced (or not) by the controller. A fenced
// broker refuses every write at once, before metadata moves its leaderships.
func (b *Broker) SetFenced(fenced bool) {
	if b.fenced.Swap(fenced) != fenced {
		b.log.Info("broker fencing changed", "fenced", fenced)
	}
}

// SetDiskFull tells the broker whether the node's disk counts as full. While
// it does (the node holds back its heartbeats, so it is fenced and out of
// every ISR), its followers fetch only what leaves diskFullHeadroom free
// (fetchRoom): what retention, or the disk reserve released for it, frees
// stays for retention's next deletions and the node's probe. Copied records
// took it all before, under load, and left retention unable to write the
// producer snapshot a deletion needs: the node stayed fenced for good.
// They still fill the rest while fenced, so that room an operator frees
// little by little does not make the node resume and fill it at once.
func (b *Broker) SetDiskFull(full bool) {
	if b.diskFull.Swap(full) != full {
		b.log.Info("followers' fetching", "disk_full_headroom", full)
		if !full {
			b.mu.Lock()
			for _, f := range b.mu.fetchers {
				f.poke()
			}
			b.mu.Unlock()
		}
	}
}

// PartitionInfo reports the local replica's HW, log start and log end
// offsets; not ok when there is none, or it belongs to a deleted topic or
// to one re-created under this name (clientPartition), whose offsets are
// not the current topic's.
func (b *Broker) PartitionInfo(topic string, partition int32) (hw, logStart, logEnd int64, ok bool) {
	p := b.clientPartition(topic, partition)
	if p == nil {
		return 0, 0, 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.stopped {
		return 0, 0, 0, false
	}
	return p.mu.r.HW(), p.mu.r.LogStart(), p.mu.r.LEO(), true
}

func (b *Broker) partition(topic string, partition int32) *partition {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.parts[tp{topic, partition}]
}

func (b *Broker) partitions() []*partition {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*partition, 0, len(b.mu.parts))
	for _, p := range b.mu.parts {
		out = append(out, p)
	}
	return out
}

// Close stops fetching and serving, fails parked requests with NotLeader,
// wakes long-polls, writes a final HW checkpoint and closes every partition
// log. The quic endpoint is the caller's to shut down; calling Close first
// lets it drain quickly, since every handler still running (or arriving)
// then answers NotLeader at once instead of waiting for an HW that no
// follower will advance.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.mu.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	b.mu.closed = true
	fetchers := b.mu.fetchers
	b.mu.fetchers = map[int32]*fetcher{}
	b.mu.Unlock()
	b.cancel()
	for _, f := range fetchers {
		f.cancel()
	}
	b.wg.Wait() // loops, fetchers and ISR proposals
	var errs []error
	if err := b.writeCheckpoint(); err != nil {
		errs = append(errs, err)
	}
	for _, p := range b.partitions() {
		if err := p.close(false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// spawn runs fn in a goroutine that Close waits for; after Close it does nothing.
func (b *Broker) spawn(fn func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.closed {
		return false
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn()
	}()
	return true
}

// tickLoop drives replica.Tick on every partition: ISR shrink and
// re-expansion proposals, parked-request deadlines.
func (b *Broker) tickLoop() {
	defer b.wg.Done()
	t := time.NewTicker(max(min(b.cfg.ReplicaLagTime/4, 250*time.Millisecond), time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
			now := b.cfg.Now()
			for _, p := range b.partitions() {
				p.tick(now)
			}
		}
	}
}
