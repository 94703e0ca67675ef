package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// Record is one record to produce. Produce copies Key, Value and Headers;
// the caller may reuse them once Produce returns.
type Record struct {
	Topic string
	// Partition is used only when PartitionSet is true; otherwise the
	// partitioner chooses (murmur2 of Key, else sticky round-robin).
	Partition    int32
	PartitionSet bool
	Key          []byte // nil: no key
	// Value nil is null, a tombstone: on a compacted topic
	// (cleanup.policy=compact) it deletes Key; []byte{} is an empty value.
	Value     []byte
	Headers   []segment.RecordHeader
	Timestamp time.Time // zero: the time of Produce
}

// Delivery is the outcome of one record: Err is nil once the record is
// acknowledged at Offset. With AcksNone too the leader answers, as soon as
// it has appended the batch (before any flush or replication), with the
// offset it was written at; such a record may still be lost.
type Delivery struct {
	Topic     string
	Partition int32
	Offset    int64
	// LogAppendTime is the time the leader gave the record (and the rest
	// of its batch) on a topic with message.timestamp.type=LogAppendTime,
	// which consumers see as its timestamp (for a retried batch the leader
	// had already written, the time it gave it then); zero otherwise.
	LogAppendTime time.Time
	Err           error
}

// Errors.
var (
	ErrProducerClosed  = errors.New("client: producer closed")
	ErrDeliveryTimeout = errors.New("client: delivery timeout")
	// ErrDuplicateNoOffset: the leader says the batch is already written but
	// did not report where.
	ErrDuplicateNoOffset = errors.New("client: batch already written; leader did not report its offsets")
	errMalformedResponse = errors.New("client: malformed response")
)

// DeliveryError is the error a record's Delivery carries when it could not be
// acknowledged.
type DeliveryError struct {
	Topic     string
	Partition int32
	Attempts  int
	// Unknown is true when a leader may have written the batch anyway (an
	// attempt's answer was lost, or it timed out after the append).
	Unknown bool
	Err     error
}

func (e *DeliveryError) Error() string {
	s := fmt.Sprintf("client: %s/%d: not acknowledged after %d attempt(s)", e.Topic, e.Partition, e.Attempts)
	if e.Unknown {
		s += " (may have been written)"
	}
	return s + ": " + e.Err.Error()
}

func (e *DeliveryError) Unwrap() error { return e.Err }

// RecordTooLargeError is returned by Produce for a record above
// MaxRecordBytes: Size is the record's own bytes, its key, value and
// headers' keys and values (RecordBytes). With Topic set, the record alone
// in a batch would be larger than the topic takes (Max: its
// max.message.bytes, or the cluster's message.max.bytes): Size is then that
// batch's size.
//
// A delivery (inside a DeliveryError) carries one with Err set when the
// topic's leader refused a batch of the record alone (RecordTooLarge, after
// the producer split the batch that held it): Size is that batch as sent,
// Max the limit the producer's metadata shows (0: none), and Err the
// leader's refusal, which names the limit it applied and, for a batch its
// topic's compression.type stores in another codec, the size stored.
type RecordTooLargeError struct {
	Size, Max int
	Topic     string
	Err       error
}

func (e *RecordTooLargeError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("client: a batch of the record alone (%d bytes sent) is larger than topic %s takes: %v", e.Size, e.Topic, e.Err)
	}
	if e.Topic != "" {
		return fmt.Sprintf("client: record makes a batch of %d bytes, more than topic %s takes (%d: its max.message.bytes, or the cluster's message.max.bytes)", e.Size, e.Topic, e.Max)
	}
	return fmt.Sprintf("client: record of %d bytes (key, value and headers) exceeds the %d-byte limit", e.Size, e.Max)
}

func (e *RecordTooLargeError) Unwrap() error { return e.Err }

// Producer sends records to partition leaders in batches, idempotently by
// default. It is safe for concurrent use. See the package documentation for
// batching, ordering and retries.
//
// Lifecycle: NewProducer, Produce any number of times, Flush when needed,
// Close. Close refuses new records, flushes until ctx ends, then fails what is
// left with ErrProducerClosed and stops every goroutine. Delivery callbacks
// run on the producer's goroutines and must not block for long.
type Producer struct {
	c      *Client
	cfg    ProducerConfig
	budget *budget
	sticky *sticky

	ctx    context.Context // cancelled by Close: aborts in-flight requests
	cancel context.CancelFunc
	stop   chan struct{} // closed by Close after the flush

	flushing atomic.Int32 // > 0 while a Flush or Close waits: batches close at once

	stats producerStats // Stats

	// spareBytes is the capacity of the builders partitions keep as spares
	// (partProducer.keepBuilder), at most half of BufferBytes.
	spareBytes atomic.Int64

	closeMu sync.RWMutex // Produce holds R while appending; Close takes W to set closed
	closed  bool

	mu struct {
		sync.Mutex
		parts map[tp]*partProducer
	}
	wg sync.WaitGroup

	idMu struct {
		sync.Mutex
		pid   int64
		epoch int16
		have  bool
	}
}

type tp struct {
	topic string
	part  int32
}

// NewProducer creates a producer.
func (c *Client) NewProducer(cfg ProducerConfig) (*Producer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	p := &Producer{c: c, cfg: cfg, budget: newBudget(cfg.BufferBytes), sticky: newSticky(cfg.BatchBytes), stop: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.mu.parts = map[tp]*partProducer{}
	return p, nil
}

// Config returns the effective configuration (defaults applied).
func (p *Producer) Config() ProducerConfig { return p.cfg }

// RecordBytes is what MaxRecordBytes limits: the bytes of the record's key,
// value and headers' keys and values. The framing a batch adds around them
// (about 40 bytes a record, see recordSize) is not counted.
func RecordBytes(r *Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// maxEncodedRecord bounds a record's encoded size (recordSize): the
// largest batch a leader takes is 16 MiB - 1 KiB, and a record within
// MaxRecordBytes (at most 15 MiB) fits unless it has very many headers.
const maxEncodedRecord = 16<<20 - 64<<10

// recordSize estimates a record's encoded size in a batch (an upper bound:
// varint fields counted at their widest).
func recordSize(r *Record) int {
	n := 40 + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += 10 + len(h.Key) + len(h.Value)
	}
	return n
}

// Produce queues one record. It blocks while BufferBytes are outstanding or
// while the topic's metadata is unknown, until ctx ends. cb (may be nil) is
// called exactly once with the record's outcome, unless Produce returns an
// error, in which case the record was not queued and cb is never called.
// The producer keeps no reference to r or its slices once Produce returns.
func (p *Producer) Produce(ctx context.Context, r *Record, cb func(Delivery)) error {
	var h DeliveryHandler
	if cb != nil {
		h = deliveryFunc(cb)
	}
	return p.ProduceTo(ctx, r, h)
}

// ProduceTo is Produce with the outcome given to h (may be nil) instead of
// a function: a caller producing many records can hand out handlers it
// allocates in bulk, where a closure per record is one allocation each.
func (p *Producer) ProduceTo(ctx context.Context, r *Record, h DeliveryHandler) error {
	if r.Topic == "" {
		return errors.New("client: record has no topic")
	}
	if n := RecordBytes(r); n > p.cfg.MaxRecordBytes {
		return &RecordTooLargeError{Size: n, Max: p.cfg.MaxRecordBytes}
	}
	size := recordSize(r)
	if size > maxEncodedRecord {
		return fmt.Errorf("client: record with %d headers encodes to up to %d bytes, more than a batch may hold (%d)", len(r.Headers), size, maxEncodedRecord)
	}
	n, err := p.partitionCount(ctx, r.Topic)
	if err != nil {
		return err
	}
	if limit := p.c.meta.current().maxMessageBytes(r.Topic); limit > 0 {
		if alone := segment.RecordBatchSize(r.Key, r.Value, r.Headers); alone > limit {
			return &RecordTooLargeError{Size: alone, Max: limit, Topic: r.Topic}
		}
	}
	part := r.Partition
	switch {
	case r.PartitionSet:
		if part >= n {
			// The topic may have grown since the metadata was cached.
			if n, err = p.freshPartitionCount(ctx, r.Topic, n); err != nil {
				return err
			}
		}
		if part < 0 || part >= n {
			return wire.UnknownTopicOrPartition.Err(fmt.Sprintf("%s has %d partitions; no partition %d", r.Topic, n, part))
		}
	case p.cfg.Partitioner != nil:
		part = p.cfg.Partitioner(r.Topic, r.Key, n)
		if part < 0 || part >= n {
			return fmt.Errorf("client: partitioner chose partition %d of %d", part, n)
		}
	case r.Key != nil:
		part = KeyPartition(r.Key, n)
	default:
		part = p.sticky.pick(r.Topic, size, n)
	}
	gen, err := p.budget.acquire(ctx, int64(size))
	if err != nil {
		return err
	}
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closed {
		p.budget.release(int64(size), []genCount{{gen, 1}})
		return ErrProducerClosed
	}
	ts := r.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	p.partition(r.Topic, part).append(r, ts.UnixMilli(), size, gen, h)
	return nil
}

// ProduceSync produces one record and waits for its delivery. If ctx ends
// first, the record stays queued and may still be written: the error is
// then a *DeliveryError with Unknown set, wrapping ctx's error.
func (p *Producer) ProduceSync(ctx context.Context, r *Record) (Delivery, error) {
	ch := make(chan Delivery, 1)
	if err := p.Produce(ctx, r, func(d Delivery) { ch <- d }); err != nil {
		return Delivery{Topic: r.Topic, Partition: -1, Offset: -1, Err: err}, err
	}
	p.flushing.Add(1)
	p.wakeAll()
	defer p.flushing.Add(-1)
	select {
	case d := <-ch:
		return d, d.Err
	case <-ctx.Done():
		part := int32(-1)
		if r.PartitionSet {
			part = r.Partition
		}
		err := &DeliveryError{Topic: r.Topic, Partition: part, Unknown: true,
			Err: fmt.Errorf("stopped waiting; the record stays queued: %w", ctx.Err())}
		return Delivery{Topic: r.Topic, Partition: part, Offset: -1, Err: err}, err
	}
}

// partitionCount returns the topic's partition count from the metadata,
// refreshing while the topic is unknown, for up to MetadataWait (not for
// one the client's principal may not describe, which will not appear:
// wire.TopicAuthorizationFailed at once). Metadata older than the client's
// MetadataMaxAge is refreshed in the background (the count of this record
// stays the cached one): partitions added to the topic get records within
// that interval, and keyed records then go to hash(key) % the new count.
func (p *Producer) partitionCount(ctx context.Context, topic string) (int32, error) {
	if s := p.c.meta.current(); s != nil {
		if t, ok := s.topics[topic]; ok && len(t.Partitions) > 0 {
			p.c.meta.refreshIfOlder(p.c.cfg.MetadataMaxAge)
			return int32(len(t.Partitions)), nil
		}
	}
	deadline := time.Now().Add(p.cfg.MetadataWait)
	backoff := 50 * time.Millisecond
	var lastErr error
	asked := false
	for {
		if err := p.c.meta.refresh(ctx); err != nil {
			lastErr = err
		} else if t, ok := p.c.meta.current().topics[topic]; ok && len(t.Partitions) > 0 {
			return int32(len(t.Partitions)), nil
		} else {
			lastErr = nil
			if !asked {
				// One the principal may not describe will not appear:
				// no need to wait for it.
				asked = true
				if err := p.c.missingTopic(ctx, topic); ErrorCode(err) == wire.TopicAuthorizationFailed {
					return 0, err
				}
			}
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if time.Now().Add(backoff).After(deadline) {
			if lastErr != nil {
				return 0, lastErr
			}
			return 0, p.c.missingTopic(ctx, topic)
		}
		if err := sleepCtx(ctx, backoff); err != nil {
			return 0, err
		}
		backoff = min(2*backoff, time.Second)
	}
}

// partition returns (starting if needed) the sender of one partition.
func (p *Producer) partition(topic string, part int32) *partProducer {
	k := tp{topic, part}
	p.mu.Lock()
	defer p.mu.Unlock()
	pp, ok := p.mu.parts[k]
	if !ok {
		pp = newPartProducer(p, topic, part)
		p.mu.parts[k] = pp
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			pp.run()
		}()
	}
	return pp
}

func (p *Producer) wakeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pp := range p.mu.parts {
		pp.signal()
	}
}

// Flush sends every buffered record at once (ignoring Linger) and waits
// until all records produced before the call are resolved (their callbacks
// have returned) or ctx ends. Records produced meanwhile are not waited for.
func (p *Producer) Flush(ctx context.Context) error {
	p.flushing.Add(1)
	defer p.flushing.Add(-1)
	p.wakeAll()
	return p.budget.waitAcquired(ctx)
}

// Outstanding is the number of records produced but not yet resolved.
func (p *Producer) Outstanding() int64 { return p.budget.outstanding() }

// Close refuses new records, flushes until ctx ends, then fails whatever is
// still outstanding with ErrProducerClosed and stops the producer. Requests
// still in flight then are cancelled and their outcomes awaited: a success
// already answered is delivered as one, and a record that may have been
// written (a request was in flight, or an earlier attempt's answer was lost)
// fails with a *DeliveryError whose Unknown is true, wrapping
// ErrProducerClosed. It returns ctx's error if the flush did not complete.
// Later calls return nil.
func (p *Producer) Close(ctx context.Context) error {
	p.closeMu.Lock()
	if p.closed {
		p.closeMu.Unlock()
		return nil
	}
	p.closed = true
	p.closeMu.Unlock()
	err := p.Flush(ctx)
	p.budget.close()
	close(p.stop)
	p.cancel()
	p.wg.Wait()
	return err
}

// producerID returns the producer's id, asking the cluster the first time.
func (p *Producer) producerID(ctx context.Context) (int64, int16, error) {
	p.idMu.Lock()
	defer p.idMu.Unlock()
	if p.idMu.have {
		return p.idMu.pid, p.idMu.epoch, nil
	}
	pid, epoch, err := p.c.initProducerID(ctx)
	if err != nil {
		return 0, 0, err
	}
	p.idMu.pid, p.idMu.epoch, p.idMu.have = pid, epoch, true
	return pid, epoch, nil
}

// initProducerID asks any node for a fresh producer id. A refusal that is
// not retriable (ClusterAuthorizationFailed: the principal may write to no
// topic) is every node's answer: it is returned without asking the others.
func (c *Client) initProducerID(ctx context.Context) (int64, int16, error) {
	type idResp struct {
		pid     int64
		epoch   int16
		refusal error
	}
	r, _, err := hedged(ctx, c.meta.candidates(), c.cfg.HedgeDelay, func(ctx context.Context, addr string) (idResp, error) {
		var r wire.InitProducerIDResponse
		if err := c.call(ctx, addr, wire.TypeInitProducerID, &wire.InitProducerIDRequest{}, &r); err != nil {
			return idResp{}, err
		}
		if r.Err != wire.None {
			msg := "InitProducerID refused by " + addr
			if r.Err == wire.ClusterAuthorizationFailed {
				msg += ": an idempotent producer needs an ACL allowing this client's principal write on some topic"
			}
			if r.Err.Retriable() || r.Err == wire.Unknown {
				return idResp{}, r.Err.Err(msg)
			}
			return idResp{refusal: r.Err.Err(msg)}, nil
		}
		if r.ProducerID <= 0 {
			// segment.BuilderOptions reads a zero id as "not idempotent".
			return idResp{}, fmt.Errorf("client: %s handed out producer id %d", addr, r.ProducerID)
		}
		return idResp{pid: r.ProducerID, epoch: r.ProducerEpoch}, nil
	})
	if err == nil {
		err = r.refusal
	}
	if err != nil {
		return 0, 0, fmt.Errorf("client: producer id: %w", err)
	}
	return r.pid, r.epoch, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// freshPartitionCount refreshes the metadata and returns the topic's
// partition count then; n (the cached count) when the refresh fails or the
// topic is gone.
func (p *Producer) freshPartitionCount(ctx context.Context, topic string, n int32) (int32, error) {
	if err := p.c.meta.refresh(ctx); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return n, nil
	}
	if t, ok := p.c.meta.current().topics[topic]; ok && len(t.Partitions) > 0 {
		return int32(len(t.Partitions)), nil
	}
	return n, nil
}
