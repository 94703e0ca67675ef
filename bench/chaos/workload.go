package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"paymentlog/client"
	"paymentlog/quic"
	"paymentlog/segment"
)

// WorkloadConfig configures the workload. Zero fields take the defaults in
// their comments.
type WorkloadConfig struct {
	Bootstrap  []string
	TLS        quic.TLSConfig
	Topic      string
	Partitions int // the topic's partition count; record seq goes to partition seq % Partitions
	Producers  int // default 4; each has its own Client (connection) and idempotent acks=all Producer
	Consumers  int // default 2; each reads every partition from the beginning
	// ConsumerRacks[i], when set, is consumer i's rack
	// (ConsumerConfig.Rack): it reads from the in-sync follower there
	// where its leaders are elsewhere.
	ConsumerRacks []string
	// Members is how many consumers share the partitions as members of
	// MembersGroup (members.go); default 2, -1 none.
	Members int
	// MemberLifetime is how long a member stays before it leaves and
	// joins again (member i: MemberLifetime × (1 + i/2)); default 20s.
	MemberLifetime time.Duration
	Interval       time.Duration // per producer, between two records; default 2ms
	// MaxOutstanding bounds each producer's unresolved records; default 1000.
	MaxOutstanding  int
	Pad             int           // filler bytes after each payload; default 0
	DeliveryTimeout time.Duration // the producers' delivery timeout; default 30s
	Compression     segment.Codec // the producers' codec; none by default
	// Keys > 0 (a compacted topic): each record gets a key, at random
	// (from Seed and the producer): one of Keys hot keys per partition
	// ("k<n>", rewritten all the time), or with ColdRatio one of ColdKeys
	// cold ones ("c<n>", rewritten rarely: their latest records stay in
	// old segments, and their tombstones outlive delete.retention.ms);
	// a TombstoneRatio share of records are tombstones (a null value,
	// named by their HeaderID header). 0: records without a key.
	Keys, ColdKeys            int
	ColdRatio, TombstoneRatio float64
	Seed                      int64
	// CommitInterval is how often each consumer commits its positions to
	// its own consumer group (GroupName); default 250ms.
	CommitInterval time.Duration
	Logger         *slog.Logger
}

func (c WorkloadConfig) withDefaults() WorkloadConfig {
	if c.Producers <= 0 {
		c.Producers = 4
	}
	if c.Consumers <= 0 {
		c.Consumers = 2
	}
	if c.Members == 0 {
		c.Members = 2
	}
	if c.MemberLifetime <= 0 {
		c.MemberLifetime = 20 * time.Second
	}
	if c.Interval <= 0 {
		c.Interval = 2 * time.Millisecond
	}
	if c.MaxOutstanding <= 0 {
		c.MaxOutstanding = 1000
	}
	if c.DeliveryTimeout <= 0 {
		c.DeliveryTimeout = 30 * time.Second
	}
	if c.CommitInterval <= 0 {
		c.CommitInterval = 250 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Workload runs idempotent acks=all producers writing self-describing
// records (Payload) and consumers reading every partition continuously, and
// records everything they see.
//
// Lifecycle: StartWorkload, then StopProducers (stops producing, waits until
// every record has an outcome or ctx ends, closes the producers), then
// StopConsumers. Writes and Reads may be called at any time.
type Workload struct {
	cfg    WorkloadConfig
	log    *slog.Logger
	pctx   context.Context
	pstop  context.CancelFunc
	cctx   context.Context
	cstop  context.CancelFunc
	pwg    sync.WaitGroup
	cwg    sync.WaitGroup
	prods  []*client.Producer
	pcls   []*client.Client
	ccls   []*client.Client
	ccfg   client.Config // the consumers' and members' clients'
	closed bool

	mu struct {
		sync.Mutex
		writes   []Write
		reads    []Read
		maxAcked []int64 // per partition: the largest acknowledged offset, -1 if none
		acked    int
		readPos  map[int]map[int32]int64 // consumer -> partition -> next offset
		// divergences: one per consumer, partition and position.
		divergences   []Divergence
		commits       []Commit
		memberReads   []MemberRead
		memberPos     map[int32]int64  // partition -> after the highest offset a member read
		memberCut     map[int32]bool   // partitions a member was told its history was truncated in
		memberDivs    []Divergence     // those truncations, one per member, partition and position
		memberStalls  int              // stalls past memberMaxPoll
		stallsLeft    int              // of those, ones after which the member found its membership lost
		memberJoins   int              // rejoins after a member left
		memberDeaths  int              // of those, after it died without leaving
		memberClients []*client.Client // the clients of members that joined again after dying
	}
}

// StartWorkload connects the producers and consumers and starts them.
func StartWorkload(ctx context.Context, cfg WorkloadConfig) (*Workload, error) {
	cfg = cfg.withDefaults()
	if cfg.Partitions <= 0 || cfg.Topic == "" {
		return nil, errors.New("chaos: workload needs a topic and its partition count")
	}
	w := &Workload{cfg: cfg, log: cfg.Logger}
	w.mu.maxAcked = make([]int64, cfg.Partitions)
	for i := range w.mu.maxAcked {
		w.mu.maxAcked[i] = -1
	}
	// Every consumer's positions are made here, before any goroutine
	// starts: the consumers read the map under w.mu as soon as they run.
	w.mu.readPos = make(map[int]map[int32]int64, cfg.Consumers)
	for i := range cfg.Consumers {
		w.mu.readPos[i] = map[int32]int64{}
	}
	w.mu.memberPos = map[int32]int64{}
	w.mu.memberCut = map[int32]bool{}
	w.pctx, w.pstop = context.WithCancel(context.Background())
	w.cctx, w.cstop = context.WithCancel(context.Background())
	ccfg := client.Config{Bootstrap: cfg.Bootstrap, TLS: cfg.TLS, Logger: cfg.Logger}
	w.ccfg = ccfg
	for i := range cfg.Producers {
		c, err := client.New(ctx, ccfg)
		if err != nil {
			w.abandon()
			return nil, err
		}
		w.pcls = append(w.pcls, c)
		p, err := c.NewProducer(client.ProducerConfig{DeliveryTimeout: cfg.DeliveryTimeout, Compression: cfg.Compression})
		if err != nil {
			w.abandon()
			return nil, err
		}
		w.prods = append(w.prods, p)
		w.pwg.Add(1)
		go w.produce(i, p)
	}
	for i := range cfg.Consumers {
		c, err := client.New(ctx, ccfg)
		if err != nil {
			w.abandon()
			return nil, err
		}
		w.ccls = append(w.ccls, c)
		var rack string
		if i < len(cfg.ConsumerRacks) {
			rack = cfg.ConsumerRacks[i]
		}
		cons := c.NewConsumer(client.ConsumerConfig{Rack: rack})
		tps := make([]client.TopicPartition, cfg.Partitions)
		for p := range tps {
			tps[p] = client.TopicPartition{Topic: cfg.Topic, Partition: int32(p)}
		}
		cons.Assign(tps, 0)
		w.cwg.Add(1)
		go w.consume(i, cons)
	}
	if err := w.startMembers(ctx, ccfg); err != nil {
		w.abandon()
		return nil, err
	}
	return w, nil
}

// abandon stops the goroutines StartWorkload has started and closes the
// producers (their partitions' senders) and clients it has made, when it
// fails part way. The records in flight are given up: nobody will check
// them.
func (w *Workload) abandon() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	w.StopProducers(ctx) // its error: records given up, as said
	w.StopConsumers()
}

// produce is one producer's loop: one record every Interval, at most
// MaxOutstanding unresolved.
func (w *Workload) produce(id int, p *client.Producer) {
	defer w.pwg.Done()
	slots := make(chan struct{}, w.cfg.MaxOutstanding)
	tick := time.NewTicker(w.cfg.Interval)
	defer tick.Stop()
	rng := rand.New(rand.NewPCG(uint64(w.cfg.Seed), uint64(id)))
	for seq := int64(0); ; seq++ {
		select {
		case slots <- struct{}{}:
		case <-w.pctx.Done():
			return
		}
		select {
		case <-tick.C:
		case <-w.pctx.Done():
			return
		}
		rid := RecordID{Producer: id, Seq: seq}
		part := int32(seq % int64(w.cfg.Partitions))
		rec := &client.Record{Topic: w.cfg.Topic, Partition: part, PartitionSet: true, Value: Payload(rid, w.cfg.Pad)}
		wr := Write{ID: rid, Partition: part, Offset: -1}
		if w.cfg.Keys > 0 {
			wr.Key = keyName(rng.IntN(w.cfg.Keys))
			if w.cfg.ColdKeys > 0 && rng.Float64() < w.cfg.ColdRatio {
				wr.Key = fmt.Sprintf("c%d", rng.IntN(w.cfg.ColdKeys))
			}
			rec.Key = []byte(wr.Key)
			if rng.Float64() < w.cfg.TombstoneRatio {
				wr.Tombstone = true
				rec.Value = nil
				rec.Headers = []segment.RecordHeader{{Key: HeaderID, Value: []byte(rid.String())}}
			}
		}
		w.mu.Lock()
		idx := len(w.mu.writes)
		wr.Sent = time.Now()
		w.mu.writes = append(w.mu.writes, wr)
		w.mu.Unlock()
		err := p.Produce(w.pctx, rec, func(d client.Delivery) {
			w.resolve(idx, d.Offset, d.Err)
			<-slots
		})
		if err != nil {
			// Not queued: certainly not written.
			w.mu.Lock()
			wr := &w.mu.writes[idx]
			wr.Done, wr.Outcome, wr.Err = time.Now(), Failed, err.Error()
			w.mu.Unlock()
			<-slots
			if w.pctx.Err() != nil {
				return
			}
		}
	}
}

func (w *Workload) resolve(idx int, offset int64, err error) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	wr := &w.mu.writes[idx]
	wr.Done = now
	if err == nil {
		wr.Outcome, wr.Offset = Acked, offset
		w.mu.acked++
		if offset > w.mu.maxAcked[wr.Partition] {
			w.mu.maxAcked[wr.Partition] = offset
		}
		return
	}
	wr.Err = err.Error()
	// Only an explicit "certainly not written" is Failed; anything else may
	// have reached a leader.
	var de *client.DeliveryError
	if errors.As(err, &de) && !de.Unknown {
		wr.Outcome = Failed
	} else {
		wr.Outcome = Indeterminate
	}
}

// GroupName is the consumer group consumer id commits to.
func GroupName(id int) string { return fmt.Sprintf("chaos-%d", id) }

// commitTimeout bounds one group commit: long enough for a controller
// election, short enough that the consumer reads on soon after one that
// failed.
const commitTimeout = 3 * time.Second

// consume is one consumer's loop: it reads, and commits its positions to
// its group every CommitInterval (the commit holds the reads back, as in an
// application that commits in its loop).
func (w *Workload) consume(id int, cons *client.Consumer) {
	defer w.cwg.Done()
	defer cons.Close()
	lastCommit := time.Now()
	for w.cctx.Err() == nil {
		if time.Since(lastCommit) >= w.cfg.CommitInterval {
			w.commit(id, cons)
			lastCommit = time.Now()
		}
		msgs, err := cons.Poll(w.cctx)
		now := time.Now()
		if len(msgs) > 0 || w.cfg.Keys > 0 {
			w.mu.Lock()
			for _, m := range msgs {
				k, v, tomb := storedValue(m.Key, m.Value, m.Headers)
				w.mu.reads = append(w.mu.reads, Read{Consumer: id, Partition: m.Partition, Offset: m.Offset, Value: v, At: now, Key: k, Tombstone: tomb})
				w.mu.readPos[id][m.Partition] = m.Offset + 1
			}
			if w.cfg.Keys > 0 {
				// A compacted log may end its HW with offsets whose
				// records the cleaner removed: the consumer's position
				// passes them without a record to show for it.
				w.movePositions(w.mu.readPos[id], cons)
			}
			w.mu.Unlock()
		}
		if err != nil && w.cctx.Err() == nil {
			w.pollFailed(id, err, now)
			w.pauseConsumer()
		}
	}
}

// movePositions raises the positions in pos (partition -> next offset) to
// the consumer's, where those are further. w.mu is held; cons is polled by
// the caller's goroutine.
func (w *Workload) movePositions(pos map[int32]int64, cons *client.Consumer) {
	for p := range w.cfg.Partitions {
		tp := client.TopicPartition{Topic: w.cfg.Topic, Partition: int32(p)}
		if o, ok := cons.Position(tp); ok && o > pos[int32(p)] {
			pos[int32(p)] = o
		}
	}
}

// pauseConsumer waits a little after a failed poll (or until the consumers
// stop).
func (w *Workload) pauseConsumer() {
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.cctx.Done():
	}
}

// commit commits the consumer's positions to its group and records the
// commit and its outcome.
func (w *Workload) commit(id int, cons *client.Consumer) {
	offs := map[client.TopicPartition]int64{}
	sent := map[int32]int64{}
	for p := range w.cfg.Partitions {
		tp := client.TopicPartition{Topic: w.cfg.Topic, Partition: int32(p)}
		if pos, ok := cons.Position(tp); ok && pos >= 0 {
			offs[tp], sent[int32(p)] = pos, pos
		}
	}
	if len(offs) == 0 {
		return
	}
	c := Commit{Consumer: id, Offsets: sent, Sent: time.Now()}
	ctx, cancel := context.WithTimeout(w.cctx, commitTimeout)
	err := cons.CommitOffsets(ctx, GroupName(id), offs)
	cancel()
	c.Done, c.Acked = time.Now(), err == nil
	if err != nil {
		c.Err = err.Error()
		if w.cctx.Err() == nil {
			w.log.Warn("consumer group commit failed", "consumer", id, "err", err)
		}
	}
	w.mu.Lock()
	w.mu.commits = append(w.mu.commits, c)
	w.mu.Unlock()
}

// Commits returns a copy of every group commit so far, in order per
// consumer.
func (w *Workload) Commits() []Commit {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Commit(nil), w.mu.commits...)
}

// pollFailed notes why a consumer's Poll failed. A divergence (the leader's
// log no longer holds what the consumer read) is recorded for the checker,
// once per partition and position: Poll returns it again at every call
// while the position stays, and the consumer leaves it there (seeking back
// would re-read and hide what happened). Anything else is retried.
func (w *Workload) pollFailed(id int, err error, now time.Time) {
	var lt *client.LogTruncatedError
	var oor *client.OffsetOutOfRangeError
	switch {
	case errors.As(err, &lt):
		d := Divergence{Consumer: id, Partition: lt.Partition, Position: lt.Position, LastFetchedEpoch: lt.LastFetchedEpoch,
			DivergingEpoch: lt.DivergingEpoch, DivergingEndOffset: lt.DivergingEndOffset, At: now}
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, o := range w.mu.divergences {
			if o.Consumer == id && o.Partition == d.Partition && o.Position == d.Position {
				return
			}
		}
		w.mu.divergences = append(w.mu.divergences, d)
		w.log.Error("consumer told its history was truncated", "consumer", id, "partition", lt.Partition, "offset", lt.DivergingEndOffset,
			"position", lt.Position, "epoch", lt.LastFetchedEpoch)
	case errors.As(err, &oor):
		// A leader whose log (or HW) is behind our position: keep the
		// position and retry; the checker judges what we read.
		w.log.Warn("consumer offset out of range", "consumer", id, "partition", oor.Partition, "offset", oor.Requested, "start", oor.Start, "end", oor.End)
	default:
		w.log.Warn("consumer poll failed", "consumer", id, "err", err)
	}
}

// Divergences returns a copy of every divergence a consumer was told of.
func (w *Workload) Divergences() []Divergence {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Divergence(nil), w.mu.divergences...)
}

// MaxAcked returns the largest acknowledged offset of a partition (-1 if none).
func (w *Workload) MaxAcked(partition int) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.maxAcked[partition]
}

// Acked returns how many records have been acknowledged so far.
func (w *Workload) Acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.acked
}

// ReadPositions returns, per consumer, the next offset it will read per partition.
func (w *Workload) ReadPositions() map[int]map[int32]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[int]map[int32]int64{}
	for c, m := range w.mu.readPos {
		out[c] = map[int32]int64{}
		for p, o := range m {
			out[c][p] = o
		}
	}
	return out
}

// StopProducers stops producing new records and closes the producers, giving
// outstanding records until ctx ends to resolve.
func (w *Workload) StopProducers(ctx context.Context) error {
	w.pstop()
	w.pwg.Wait()
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, p := range w.prods {
		wg.Add(1)
		go func(p *client.Producer) {
			defer wg.Done()
			if err := p.Close(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(p)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// StopConsumers stops the consumers and closes every client.
func (w *Workload) StopConsumers() {
	w.cstop()
	w.cwg.Wait()
	w.closeClients()
}

func (w *Workload) closeClients() {
	if w.closed {
		return
	}
	w.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.mu.Lock()
	members := w.mu.memberClients
	w.mu.Unlock()
	for _, c := range append(append(append([]*client.Client(nil), w.pcls...), w.ccls...), members...) {
		c.Close(ctx)
	}
}

// Writes returns a copy of every write so far.
func (w *Workload) Writes() []Write {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Write(nil), w.mu.writes...)
}

// Reads returns a copy of every read so far.
func (w *Workload) Reads() []Read {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Read(nil), w.mu.reads...)
}

// String summarises progress.
func (w *Workload) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d written, %d acked, %d read", len(w.mu.writes), w.mu.acked, len(w.mu.reads))
}
