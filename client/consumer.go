package client

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"paymentlog/segment"
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
	// Rack is the consumer's rack (Kafka's client.rack, KIP-392): a
	// partition with an in-sync follower in it is read from that follower
	// (the leader names it) instead of the leader, for
	// PreferredReplicaMaxAge, then the leader is asked again; any error
	// from the follower also sends the consumer back to the leader. "":
	// always the leader.
	Rack string
}

// PreferredReplicaMaxAge is how long a consumer keeps reading a partition
// from the follower its leader named before asking the leader again
// (Kafka's metadata.max.age.ms plays this part).
const PreferredReplicaMaxAge = 5 * time.Minute

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
	// LogAppendTime: Timestamp is the time the leader appended the record
	// (its topic's message.timestamp.type is LogAppendTime), not the
	// producer's.
	LogAppendTime bool
}

// Consumer reads assigned partitions from their leaders. It is not safe for
// concurrent use: one goroutine calls Assign, Unassign, Seek, Poll and Close.
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
	owed error
	// committed is, by group, the offset this consumer last committed on
	// each partition or read in SeekCommitted (consumer_groups.go).
	committed map[string]map[TopicPartition]int64
	// missingChecked is, by topic, when Poll last asked a node about an
	// assigned topic the metadata does not list (checkMissingTopics).
	missingChecked map[string]time.Time
	// rackOffUntil: after a failed fetch from a follower, the consumer
	// reads from the leaders only (sends no rack) until then
	// (consumer_rack.go).
	rackOffUntil time.Time
	closed       bool
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

// Unassign drops partitions (those not assigned are ignored): Poll fetches
// them no more, and the records of fetches in flight for them are dropped,
// also once a partition is assigned again (it starts afresh, at the offset
// the new Assign gives). A fetch in flight for dropped partitions only is
// abandoned. The offsets this consumer committed for them or read in
// SeekCommitted are forgotten: another consumer may commit them meanwhile.
func (cs *Consumer) Unassign(tps []TopicPartition) {
	dropped := false
	for _, tp := range tps {
		if _, ok := cs.parts[tp]; !ok {
			continue
		}
		// apply drops the answers of fetches for a cpart that is no
		// longer the partition's: a later Assign makes a new one.
		delete(cs.parts, tp)
		for _, committed := range cs.committed {
			delete(committed, tp)
		}
		dropped = true
	}
	if !dropped {
		return
	}
	cs.order = slices.DeleteFunc(cs.order, func(cp *cpart) bool { return cs.parts[cp.tp] != cp })
	cs.owed = nil // it may be a dropped partition's; another's comes again with its next fetch
	for call := range cs.inflight {
		live := false
		for p := range call.epochs {
			if _, ok := cs.parts[TopicPartition{call.topic, p}]; ok {
				live = true
			}
		}
		if !live {
			call.cancel()
		}
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
