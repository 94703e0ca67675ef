package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// Consumer defaults.
const (
	DefaultMaxWait           = 500 * time.Millisecond
	DefaultFetchMaxBytes     = 8 << 20
	DefaultPartitionMaxBytes = 1 << 20
)

// ConsumerConfig configures a Consumer. Zero fields take the defaults named in their comments.
type ConsumerConfig struct {
	MaxWait           time.Duration // long-poll: how long a leader may hold a fetch with no data; 500ms
	MinBytes          int32         // a leader answers once it has this much; 1
	MaxBytes          int32         // per fetch request; 8 MiB
	PartitionMaxBytes int32         // per partition in a fetch; 1 MiB (one whole batch is always returned)
	RetryBackoff      time.Duration // after a failed fetch, doubled per failure; 20ms
	RetryBackoffMax   time.Duration // 1s
	// OnOffsetReset, when set, makes a partition whose position fell below
	// the leader's log start (retention deleted the records there) go on
	// at the log start, as Kafka's auto.offset.reset=earliest does, and is
	// called with the partition and the offsets skipped, [from, to). nil:
	// Poll returns an *OffsetOutOfRangeError instead. A position past the
	// leader's end is an error either way. It runs inside Poll.
	OnOffsetReset func(tp TopicPartition, from, to int64)
}

func (c ConsumerConfig) withDefaults() ConsumerConfig {
	if c.MaxWait <= 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.MinBytes <= 0 {
		c.MinBytes = 1
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultFetchMaxBytes
	}
	if c.PartitionMaxBytes <= 0 {
		c.PartitionMaxBytes = DefaultPartitionMaxBytes
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.RetryBackoffMax <= 0 {
		c.RetryBackoffMax = DefaultRetryBackoffMax
	}
	return c
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// Message is one consumed record. Key, Value and header values alias the
// fetched buffer and stay valid (they are never reused); each message has
// its own Headers slice.
type Message struct {
	Topic       string
	Partition   int32
	Offset      int64
	Timestamp   time.Time
	Key         []byte // nil: no key
	Value       []byte
	Headers     []segment.RecordHeader
	LeaderEpoch int32 // the epoch of the leader that wrote the batch
}

// OffsetOutOfRangeError is returned by Poll when a partition's position is
// outside the leader's log.
type OffsetOutOfRangeError struct {
	TopicPartition
	Requested int64
	Start     int64 // the log start offset
	End       int64 // the high watermark (-1 if unknown)
}

func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("client: %s: offset %d is out of range [%d, %d]", e.TopicPartition, e.Requested, e.Start, e.End)
}

// ErrLogTruncated matches (errors.Is) the *LogTruncatedError Poll returns.
var ErrLogTruncated = errors.New("client: log truncated")

// LogTruncatedError is returned by Poll when a partition's leader no longer
// has the history the consumer has read (KIP-320): its log was truncated
// below the consumer's position and, maybe, written again since, as after
// an unclean leader election or records lost to a crash under --fsync
// never. The records the consumer returned from DivergingEndOffset on are
// not (all) in the leader's log, and whatever the leader now has at the
// position would not follow them.
//
// Poll does not move the position and returns the error again while the
// partition stays where it is: the application decides, by seeking (to
// DivergingEndOffset to read the leader's history from where it parts from
// what was returned, or wherever its reset policy says). A Seek within the
// records returned keeps their leader epochs, so the next fetch is checked
// again from there.
type LogTruncatedError struct {
	TopicPartition
	// Position is the consumer's position: the offset after the last
	// record returned.
	Position int64
	// LastFetchedEpoch is the leader epoch of the last record returned.
	LastFetchedEpoch int32
	// DivergingEpoch and DivergingEndOffset: the histories part at
	// DivergingEndOffset at the latest (<= Position): the leader's end
	// offset for DivergingEpoch (the largest epoch <= LastFetchedEpoch its
	// log knows, -1 if none), lowered to where the records returned left
	// that epoch.
	DivergingEpoch     int32
	DivergingEndOffset int64
}

func (e *LogTruncatedError) Error() string {
	return fmt.Sprintf("client: %s: log truncated: the leader's log parts from the records returned at offset %d "+
		"(position %d, last fetched epoch %d, leader's diverging epoch %d)",
		e.TopicPartition, e.DivergingEndOffset, e.Position, e.LastFetchedEpoch, e.DivergingEpoch)
}

// Unwrap makes errors.Is(err, ErrLogTruncated) hold.
func (e *LogTruncatedError) Unwrap() error { return ErrLogTruncated }

// ErrNoAssignment is returned by Poll when no partition is assigned.
var ErrNoAssignment = errors.New("client: consumer has no partitions assigned")

// Consumer reads assigned partitions from their leaders. It is not safe for
// concurrent use: one goroutine calls Assign, Seek, Poll and Close.
//
// Lifecycle: NewConsumer, Assign or AssignTopic, Poll repeatedly, Close
// (abandons fetches in flight and waits for their goroutines).
type Consumer struct {
	c        *Client
	cfg      ConsumerConfig
	ctx      context.Context // cancelled by Close
	cancel   context.CancelFunc
	results  chan fetchResult
	wg       sync.WaitGroup
	parts    map[TopicPartition]*cpart
	order    []*cpart                // assignment order
	inflight map[*fetchCall]struct{} // fetches in flight
	// owed is an error Poll met while it had records to return: the
	// records go first, the error with the next Poll.
	owed   error
	closed bool
}

type cpart struct {
	tp        TopicPartition
	pos       int64 // next offset to return; SeekBeginning/SeekEnd while a seek is pending
	gen       int   // bumped by Seek: answers to older fetches are dropped
	fetching  bool
	hw        int64 // highest high watermark fetches reported (-1 unknown)
	lso       int64
	failures  int
	notBefore time.Time
	// epochs is the leader-epoch history of the records returned since
	// the partition was assigned or sought outside them: the offset of the
	// first record returned in each epoch. The last entry's epoch is the
	// last fetched epoch every fetch carries (KIP-320); none: -1.
	// Invariant: epochs and offsets strictly increase; every offset < pos.
	epochs []epochStart
}

// epochStart is where a leader epoch begins in the records returned.
type epochStart struct {
	epoch int32
	start int64
}

// lastEpoch is the leader epoch of the last record returned (-1: unknown).
func (cp *cpart) lastEpoch() int32 {
	if len(cp.epochs) == 0 {
		return -1
	}
	return cp.epochs[len(cp.epochs)-1].epoch
}

// returned records the leader epochs of msgs, this partition's records
// just returned in offset order.
func (cp *cpart) returned(msgs []Message) {
	for i := range msgs {
		m := &msgs[i]
		if m.LeaderEpoch < 0 {
			continue
		}
		if n := len(cp.epochs); n == 0 || m.LeaderEpoch > cp.epochs[n-1].epoch {
			cp.epochs = append(cp.epochs, epochStart{m.LeaderEpoch, m.Offset})
		}
	}
}

// seekEpochs keeps the history below offset when the seek stays within the
// records returned (offset-1 was returned, so the epoch it had is known),
// and forgets it otherwise.
func (cp *cpart) seekEpochs(offset int64) {
	if offset < 0 || cp.pos < 0 || offset > cp.pos || len(cp.epochs) == 0 || offset <= cp.epochs[0].start {
		cp.epochs = nil
		return
	}
	i := sort.Search(len(cp.epochs), func(i int) bool { return cp.epochs[i].start >= offset })
	cp.epochs = cp.epochs[:i]
}

// divergence is where the records returned part from a leader's log that
// answered a fetch at pos with d: the leader's end offset for d.Epoch,
// lowered to where the records returned left that epoch (a follower's
// truncation offset, replica.TruncationOffset): when the leader knows the
// epoch only as an older one than the consumer's last, its end offset may
// lie past the consumer's records of later epochs.
func (cp *cpart) divergence(pos int64, d wire.EpochEndOffset) int64 {
	end := min(d.EndOffset, pos)
	if d.Epoch < 0 || len(cp.epochs) == 0 {
		return max(end, 0)
	}
	i := sort.Search(len(cp.epochs), func(i int) bool { return cp.epochs[i].epoch > d.Epoch })
	switch {
	case i == 0:
		// Every record returned is of a later epoch than any the
		// leader knows up to ours: they all part from its log.
		end = min(end, cp.epochs[0].start)
	case i < len(cp.epochs):
		end = min(end, cp.epochs[i].start)
	}
	return max(end, 0)
}

// fetchCall is one fetch in flight to one leader.
type fetchCall struct {
	leader  int32
	epochs  map[int32]int32 // partition -> leader epoch it was sent with
	topic   string
	started time.Time
	cancel  context.CancelFunc
}

type fetchResult struct {
	call  *fetchCall
	addr  string
	topic string
	parts []fetchedPart
	resp  *wire.FetchResponse
	err   error
}

type fetchedPart struct {
	cp  *cpart
	gen int
	off int64
}

// NewConsumer creates a consumer with no assignment.
func (c *Client) NewConsumer(cfg ConsumerConfig) *Consumer {
	cs := &Consumer{c: c, cfg: cfg.withDefaults(), results: make(chan fetchResult, 16), parts: map[TopicPartition]*cpart{}, inflight: map[*fetchCall]struct{}{}}
	cs.ctx, cs.cancel = context.WithCancel(context.Background())
	return cs
}

// Assign adds partitions, each starting at from (an offset, SeekBeginning or SeekEnd).
func (cs *Consumer) Assign(tps []TopicPartition, from int64) {
	for _, tp := range tps {
		if cp, ok := cs.parts[tp]; ok {
			cs.seek(cp, from)
			continue
		}
		cp := &cpart{tp: tp, pos: from, hw: -1, lso: -1}
		cs.parts[tp] = cp
		cs.order = append(cs.order, cp)
	}
}

// AssignTopic assigns every partition of topic (from the metadata), each
// starting at from, and returns them.
func (cs *Consumer) AssignTopic(ctx context.Context, topic string, from int64) ([]TopicPartition, error) {
	n, err := cs.c.PartitionCount(ctx, topic)
	if err != nil {
		return nil, err
	}
	tps := make([]TopicPartition, n)
	for i := range tps {
		tps[i] = TopicPartition{topic, int32(i)}
	}
	cs.Assign(tps, from)
	return tps, nil
}

// Assignment lists the assigned partitions in assignment order.
func (cs *Consumer) Assignment() []TopicPartition {
	out := make([]TopicPartition, len(cs.order))
	for i, cp := range cs.order {
		out[i] = cp.tp
	}
	return out
}

// Seek sets a partition's position: an offset, SeekBeginning or SeekEnd.
func (cs *Consumer) Seek(tp TopicPartition, offset int64) error {
	cp, ok := cs.parts[tp]
	if !ok {
		return fmt.Errorf("client: %s is not assigned", tp)
	}
	cs.seek(cp, offset)
	return nil
}

func (cs *Consumer) seek(cp *cpart, offset int64) {
	cs.owed = nil // it may be this partition's; another's comes again with its next fetch
	cp.seekEpochs(offset)
	cp.pos = offset
	cp.gen++
	cp.failures = 0
	cp.notBefore = time.Time{}
}

// Position returns the next offset Poll will return for tp, or a negative
// Seek constant while a seek is still to be resolved.
func (cs *Consumer) Position(tp TopicPartition) (int64, bool) {
	cp, ok := cs.parts[tp]
	if !ok {
		return 0, false
	}
	return cp.pos, true
}

// HighWatermark returns the highest high watermark fetches reported for tp
// (-1 if none yet). It never goes backwards: a new leader whose HW has not
// yet caught up with its predecessor's reports none (KIP-207), and the last
// known one stands.
func (cs *Consumer) HighWatermark(tp TopicPartition) int64 {
	if cp, ok := cs.parts[tp]; ok {
		return cp.hw
	}
	return -1
}

// EndOffsets returns each partition's high watermark, asking the leaders.
func (cs *Consumer) EndOffsets(ctx context.Context, tps []TopicPartition) (map[TopicPartition]int64, error) {
	return cs.c.offsetsFor(ctx, tps, wire.Latest)
}

// BeginningOffsets returns each partition's log start offset, asking the leaders.
func (cs *Consumer) BeginningOffsets(ctx context.Context, tps []TopicPartition) (map[TopicPartition]int64, error) {
	return cs.c.offsetsFor(ctx, tps, wire.Earliest)
}

func (c *Client) offsetsFor(ctx context.Context, tps []TopicPartition, ts int64) (map[TopicPartition]int64, error) {
	byTopic := map[string][]int32{}
	for _, tp := range tps {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	out := make(map[TopicPartition]int64, len(tps))
	for topic, parts := range byTopic {
		offs, _, err := c.listOffsets(ctx, topic, parts, ts, true)
		if err != nil {
			return nil, err
		}
		for p, o := range offs {
			out[TopicPartition{topic, p}] = o
		}
	}
	return out, nil
}

// PartitionCount returns a topic's partition count, refreshing the metadata
// if the topic is not in the cache. A missing topic yields an error matching
// wire.UnknownTopicOrPartition.
func (c *Client) PartitionCount(ctx context.Context, topic string) (int, error) {
	for i := 0; i < 2; i++ {
		if i > 0 || c.meta.current() == nil {
			if err := c.meta.refresh(ctx); err != nil {
				return 0, err
			}
		}
		if t, ok := c.meta.current().topics[topic]; ok && len(t.Partitions) > 0 {
			return len(t.Partitions), nil
		}
	}
	return 0, wire.UnknownTopicOrPartition.Err(fmt.Sprintf("topic %q does not exist", topic))
}

// Poll returns the next records of the assigned partitions. It waits until a
// fetch answers with records, an error that needs the caller occurs, about
// MaxWait passes with nothing new (returning no records and a nil error), or
// ctx ends. It never returns records together with an error: records
// fetched along with an error (another partition's, or a corrupt record
// after them) are returned first, with a nil error, and the error comes
// with the next call.
func (cs *Consumer) Poll(ctx context.Context) ([]Message, error) {
	if cs.closed {
		return nil, errors.New("client: consumer closed")
	}
	if err := cs.owed; err != nil {
		cs.owed = nil
		return nil, err
	}
	if len(cs.order) == 0 {
		return nil, ErrNoAssignment
	}
	start := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if err := cs.resolveSeeks(ctx); err != nil {
			return nil, err
		}
		wait := cs.startFetches(time.Now())
		if len(cs.inflight) == 0 {
			if wait <= 0 {
				wait = cs.cfg.RetryBackoff
			}
			timer.Reset(wait)
		} else {
			timer.Reset(min(leaderCheckEvery, max(cs.cfg.MaxWait+cs.cfg.MaxWait/2-time.Since(start), time.Millisecond)))
		}
		select {
		case r := <-cs.results:
			msgs, err := cs.apply(r, nil)
			for more := true; more && err == nil; {
				select {
				case r := <-cs.results:
					msgs, err = cs.apply(r, msgs)
				default:
					more = false
				}
			}
			if len(msgs) > 0 {
				// Their positions have moved past them: a caller that
				// drops results with an error would never see them.
				cs.owed = err
				return msgs, nil
			}
			if err != nil {
				return nil, err
			}
		case <-timer.C:
			cs.checkLeaders(true)
		case <-cs.c.meta.changed():
			cs.checkLeaders(false)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if time.Since(start) >= cs.cfg.MaxWait {
			return nil, nil
		}
	}
}

// resolveSeeks turns pending SeekBeginning/SeekEnd positions into offsets.
// A partition whose leader cannot answer now (offline, moved) stays pending
// and is asked again after a backoff: retrying it here until ctx ends would
// stall every other partition's records.
func (cs *Consumer) resolveSeeks(ctx context.Context) error {
	type key struct {
		topic string
		ts    int64
	}
	now := time.Now()
	groups := map[key][]*cpart{}
	for _, cp := range cs.order {
		if cp.pos < 0 && !now.Before(cp.notBefore) {
			groups[key{cp.tp.Topic, cp.pos}] = append(groups[key{cp.tp.Topic, cp.pos}], cp)
		}
	}
	for k, cps := range groups {
		parts := make([]int32, len(cps))
		for i, cp := range cps {
			parts[i] = cp.tp.Partition
		}
		offs, _, err := cs.c.listOffsets(ctx, k.topic, parts, k.ts, false)
		if err != nil {
			return err
		}
		for _, cp := range cps {
			if o, ok := offs[cp.tp.Partition]; ok {
				cp.pos, cp.failures = o, 0
			} else {
				cs.backoff(cp, now)
			}
		}
	}
	return nil
}

// startFetches sends a fetch to each leader for its idle partitions and
// returns how long until a partition in backoff may be fetched again.
func (cs *Consumer) startFetches(now time.Time) time.Duration {
	snap := cs.c.meta.current()
	if snap == nil {
		ctx, cancel := context.WithTimeout(cs.ctx, cs.c.cfg.MetadataTimeout)
		err := cs.c.meta.refresh(ctx)
		cancel()
		if err != nil {
			return cs.cfg.RetryBackoff
		}
		snap = cs.c.meta.current()
	}
	type key struct{ addr, topic string }
	groups := map[key][]*cpart{}
	var wait time.Duration
	for _, cp := range cs.order {
		if cp.fetching || cp.pos < 0 {
			continue
		}
		if d := cp.notBefore.Sub(now); d > 0 {
			if wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		ld, ok := snap.leaderOf(cp.tp.Topic, cp.tp.Partition)
		if !ok {
			cs.backoff(cp, now)
			cs.c.meta.refreshIfOlder(cs.cfg.RetryBackoff)
			continue
		}
		k := key{ld.addr, cp.tp.Topic}
		groups[k] = append(groups[k], cp)
	}
	for k, cps := range groups {
		req := &wire.FetchRequest{
			MaxWaitMs: int32(cs.cfg.MaxWait / time.Millisecond),
			MinBytes:  cs.cfg.MinBytes,
			MaxBytes:  cs.cfg.MaxBytes,
			Topic:     k.topic,
		}
		fps := make([]fetchedPart, len(cps))
		ctx, cancel := context.WithTimeout(cs.ctx, cs.cfg.MaxWait+cs.c.cfg.RequestTimeout)
		call := &fetchCall{epochs: map[int32]int32{}, topic: k.topic, started: now, cancel: cancel}
		for i, cp := range cps {
			pm, _ := snap.partition(cp.tp.Topic, cp.tp.Partition)
			req.Parts = append(req.Parts, wire.FetchPartition{Partition: cp.tp.Partition, Offset: cp.pos, MaxBytes: cs.cfg.PartitionMaxBytes,
				LeaderEpoch: pm.LeaderEpoch, LastFetchedEpoch: cp.lastEpoch()})
			fps[i] = fetchedPart{cp: cp, gen: cp.gen, off: cp.pos}
			cp.fetching = true
			call.leader = pm.Leader
			call.epochs[cp.tp.Partition] = pm.LeaderEpoch
		}
		cs.inflight[call] = struct{}{}
		cs.wg.Add(1)
		go func(addr, topic string) {
			defer cs.wg.Done()
			defer cancel()
			var resp wire.FetchResponse
			err := cs.c.call(ctx, addr, wire.TypeFetch, req, &resp)
			select {
			case cs.results <- fetchResult{call: call, addr: addr, topic: topic, parts: fps, resp: &resp, err: err}:
			case <-cs.ctx.Done():
			}
		}(k.addr, k.topic)
	}
	return wait
}

// leaderCheckEvery is how often Poll looks for fetches stuck at a replaced leader.
const leaderCheckEvery = 250 * time.Millisecond

// checkLeaders abandons fetches sent to a leader the metadata says has been
// replaced (their partitions are then fetched from the new leader). With
// refresh it also asks for fresher metadata when a fetch has been outstanding
// well past MaxWait (a dead leader never answers).
func (cs *Consumer) checkLeaders(refresh bool) {
	snap := cs.c.meta.current()
	now := time.Now()
	for call := range cs.inflight {
		if refresh && now.Sub(call.started) > cs.cfg.MaxWait+leaderCheckEvery {
			cs.c.meta.refreshIfOlder(leaderCheckEvery)
		}
		for p, epoch := range call.epochs {
			if pm, ok := snap.partition(call.topic, p); ok && (pm.LeaderEpoch > epoch || pm.Leader != call.leader) {
				call.cancel()
				break
			}
		}
	}
}

func (cs *Consumer) backoff(cp *cpart, now time.Time) {
	cp.failures++
	d := cs.cfg.RetryBackoff
	for i := 1; i < cp.failures && d < cs.cfg.RetryBackoffMax; i++ {
		d *= 2
	}
	cp.notBefore = now.Add(min(d, cs.cfg.RetryBackoffMax))
}

// apply turns one fetch answer into messages (appended to out) and new positions.
func (cs *Consumer) apply(r fetchResult, out []Message) ([]Message, error) {
	delete(cs.inflight, r.call)
	now := time.Now()
	byPart := map[int32]*wire.FetchPartitionResponse{}
	if r.err == nil {
		for i := range r.resp.Parts {
			byPart[r.resp.Parts[i].Partition] = &r.resp.Parts[i]
		}
	}
	var firstErr error
	for _, fp := range r.parts {
		cp := fp.cp
		cp.fetching = false
		if fp.gen != cp.gen || cs.parts[cp.tp] != cp {
			continue // sought or unassigned meanwhile
		}
		pr := byPart[cp.tp.Partition]
		if r.err != nil || pr == nil {
			cs.c.log.Debug("fetch failed", "topic", cp.tp.Topic, "partition", cp.tp.Partition, "addr", r.addr, "err", r.err)
			cs.backoff(cp, now)
			cs.c.meta.refreshIfOlder(cs.cfg.RetryBackoff)
			continue
		}
		switch code := pr.Err; {
		case code == wire.None && pr.Diverging != nil:
			// The leader's log parts from the records returned: stay
			// put and let the application choose where to go on.
			if firstErr == nil {
				firstErr = &LogTruncatedError{TopicPartition: cp.tp, Position: fp.off, LastFetchedEpoch: cp.lastEpoch(),
					DivergingEpoch: pr.Diverging.Epoch, DivergingEndOffset: cp.divergence(fp.off, *pr.Diverging)}
			}
			cs.c.log.Debug("log truncated below the consumer's position", "topic", cp.tp.Topic, "partition", cp.tp.Partition,
				"offset", fp.off, "epoch", cp.lastEpoch(), "diverging_epoch", pr.Diverging.Epoch,
				"diverging_end_offset", pr.Diverging.EndOffset, "addr", r.addr)
			cs.backoff(cp, now)
		case code == wire.None:
			cp.failures = 0
			cp.hw = max(cp.hw, pr.HighWatermark) // -1: the leader does not know it yet
			if pr.LogStart >= 0 {
				cp.lso = pr.LogStart
			}
			var next int64
			var err error
			n := len(out)
			out, next, err = decodeFetched(cp.tp, pr.Records, fp.off, out)
			cp.returned(out[n:])
			cp.pos = max(cp.pos, next)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		case code == wire.OffsetOutOfRange && cs.cfg.OnOffsetReset != nil && pr.LogStart > fp.off:
			// Deleted by retention: go on at the log start.
			cs.c.log.Debug("position below the log start: resetting to it", "topic", cp.tp.Topic,
				"partition", cp.tp.Partition, "offset", fp.off, "log_start", pr.LogStart)
			cs.seek(cp, pr.LogStart)
			cs.cfg.OnOffsetReset(cp.tp, fp.off, pr.LogStart)
		case code == wire.OffsetOutOfRange:
			if firstErr == nil {
				firstErr = &OffsetOutOfRangeError{TopicPartition: cp.tp, Requested: fp.off, Start: pr.LogStart, End: max(cp.hw, pr.HighWatermark)}
			}
			cs.backoff(cp, now)
		case code.Retriable():
			cs.c.log.Debug("fetch refused, retrying", "topic", cp.tp.Topic, "partition", cp.tp.Partition, "addr", r.addr, "err", code)
			cs.backoff(cp, now)
			cs.c.meta.refreshIfOlder(cs.cfg.RetryBackoff)
		default:
			if firstErr == nil {
				firstErr = fmt.Errorf("client: fetch %s from %s: %w", cp.tp, r.addr, code.Err(pr.Message))
			}
			cs.backoff(cp, now)
		}
	}
	return out, firstErr
}

// decodeFetched appends the records of whole batches to out, skipping
// records below from, and returns the offset after the last whole batch (from
// if none). A partial batch at the end (a fetch cut at MaxBytes) is ignored.
// At a corrupt batch or record it stops with an error, returning the offset
// after the last record it returned: the position never passes a record that
// was not delivered.
func decodeFetched(tp TopicPartition, records []byte, from int64, out []Message) ([]Message, int64, error) {
	out = slices.Grow(out, countRecords(records))
	next := from
	prevLast := int64(-1) // the last offset of the previous batch
	// The iterator reuses its Headers slice from record to record: messages
	// get theirs from hdrs, each capped so that later appends never reach it.
	var hdrs []segment.RecordHeader
	_, err := segment.SplitBatches(records, func(b segment.Batch) error {
		// Offsets only grow along a log; a batch that goes back (each batch's
		// CRC leaves its base offset out) would deliver records out of order.
		if b.BaseOffset() <= prevLast {
			return fmt.Errorf("%w: batch at offset %d follows one ending at offset %d", segment.ErrCorrupt, b.BaseOffset(), prevLast)
		}
		prevLast = b.LastOffset()
		if b.LastOffset() < from {
			return nil
		}
		epoch := b.LeaderEpoch()
		it := b.Iter()
		for it.Next() {
			r := it.Record()
			if r.Offset < from {
				continue
			}
			var h []segment.RecordHeader
			if len(r.Headers) > 0 {
				i := len(hdrs)
				hdrs = append(hdrs, r.Headers...)
				h = hdrs[i:len(hdrs):len(hdrs)]
			}
			out = append(out, Message{
				Topic: tp.Topic, Partition: tp.Partition, Offset: r.Offset,
				Timestamp: time.UnixMilli(r.Timestamp).UTC(), Key: r.Key, Value: r.Value, Headers: h,
				LeaderEpoch: epoch,
			})
			next = r.Offset + 1
		}
		if err := it.Err(); err != nil {
			return err // the position stays at the bad record: never skip past it
		}
		next = b.LastOffset() + 1
		return nil
	})
	if err != nil && !errors.Is(err, segment.ErrTornTail) {
		return out, next, fmt.Errorf("client: %s: %w", tp, err)
	}
	return out, next, nil
}

// countRecords sums the record counts of the batch headers in buf (no CRC
// checks: it only sizes the output), at most one per 16 bytes.
func countRecords(buf []byte) int {
	n := 0
	for len(buf) >= segment.HeaderSize {
		h, err := segment.ParseHeader(buf)
		size := 12 + int(h.Length)
		if err != nil || h.Length <= 0 || size > len(buf) || h.RecordCount <= 0 {
			break
		}
		n += min(int(h.RecordCount), size/16)
		buf = buf[size:]
	}
	return n
}

// Close abandons fetches in flight and waits for their goroutines.
func (cs *Consumer) Close() error {
	if cs.closed {
		return nil
	}
	cs.closed = true
	cs.cancel()
	cs.wg.Wait()
	return nil
}
