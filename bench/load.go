package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/client"
)

// loadConfig is one producer load: producers records of recordSize bytes,
// as fast as the producers accept them (rate 0) or at a fixed total rate,
// for duration or until records have been sent.
type loadConfig struct {
	topic      string
	partitions int
	recordSize int
	rate       float64       // records/s over all producers; 0: as fast as possible
	duration   time.Duration // ignored when records > 0
	records    int64
	// bodies are the record values' bodies (--payload); nil: a constant filler.
	bodies bodies
	// explicit assigns partitions round-robin per producer (so every partition
	// gets its share of a fixed rate); otherwise the producer's sticky partitioner picks.
	explicit bool
	// onAck, if set, is called for every acknowledged record (on producer goroutines).
	onAck func(d client.Delivery, id recordID, at time.Time)
	// onLatency, if set, is called with every acknowledged record's
	// acknowledgement time and produce latency (as lat records it).
	onLatency func(at time.Time, lat time.Duration)
	// progress, if set, is called about every 100ms with the records acknowledged so far.
	progress func(acked int64)
	// stop, if set, ends the load early when closed.
	stop <-chan struct{}
	// trace, if set, receives every acknowledged record (--latency-trace).
	trace *latencyTrace
}

// loadResult is what a load achieved.
type loadResult struct {
	sent, acked, failed int64
	ackedBytes          int64
	start, end          time.Time // first Produce call; last delivery
	lat                 *latency  // Produce call (or intended send time, when paced) to acknowledgement
	firstErr            error
}

func (r *loadResult) elapsed() time.Duration { return r.end.Sub(r.start) }

// pacingSlack is how far ahead of its schedule a paced sender may run
// before it sleeps; below the producer's linger, so batching is unchanged.
const pacingSlack = time.Millisecond

// loadRun is one runLoad's shared state, updated from the producers'
// delivery goroutines.
type loadRun struct {
	cfg                             *loadConfig
	res                             *loadResult
	sent, acked, failed, ackedBytes atomic.Int64
	lastAck                         atomic.Int64 // unix nanos
	errMu                           sync.Mutex
}

func (l *loadRun) fail(err error) {
	l.failed.Add(1)
	l.errMu.Lock()
	if l.res.firstErr == nil && !errors.Is(err, context.Canceled) {
		l.res.firstErr = err
	}
	l.errMu.Unlock()
}

// loadProducer is one producer goroutine's part of a run.
type loadProducer struct {
	run      *loadRun
	idx      uint32
	inflight sync.WaitGroup
	slab     []pendingRecord // handed out from the front
}

// pendingSlab is how many pendingRecords are allocated at once: a closure
// per record was the bench process's largest allocation (about a tenth of
// its CPU at full load, where it shares the machine with the nodes).
const pendingSlab = 1024

// pendingRecord is one produced record awaiting its delivery.
type pendingRecord struct {
	lp     *loadProducer
	t0     time.Time // latency counts from here (the intended send time when paced)
	called time.Time // when Produce was called
	seq    uint64
}

// next hands out a pendingRecord from the producer's slab.
func (lp *loadProducer) next() *pendingRecord {
	if len(lp.slab) == 0 {
		lp.slab = make([]pendingRecord, pendingSlab)
	}
	pr := &lp.slab[0]
	lp.slab = lp.slab[1:]
	return pr
}

// Delivered records the outcome of one record (client.DeliveryHandler).
func (pr *pendingRecord) Delivered(d client.Delivery) {
	lp := pr.lp
	l := lp.run
	defer lp.inflight.Done()
	at := time.Now()
	if d.Err != nil {
		l.fail(d.Err)
		return
	}
	cfg := l.cfg
	l.res.lat.record(at.Sub(pr.t0))
	if cfg.onLatency != nil {
		cfg.onLatency(at, at.Sub(pr.t0))
	}
	if cfg.trace != nil {
		cfg.trace.add(pr.t0, at, pr.called, d.Partition, lp.idx)
	}
	l.acked.Add(1)
	l.ackedBytes.Add(int64(cfg.recordSize))
	for {
		old := l.lastAck.Load()
		if at.UnixNano() <= old || l.lastAck.CompareAndSwap(old, at.UnixNano()) {
			break
		}
	}
	if cfg.onAck != nil {
		cfg.onAck(d, recordID{producer: lp.idx, seq: pr.seq}, at)
	}
}

// runLoad drives one producer per element of producers (each normally on its
// own client) and waits until every record is resolved.
func runLoad(ctx context.Context, producers []*client.Producer, cfg loadConfig) *loadResult {
	res := &loadResult{lat: newLatency()}
	l := &loadRun{cfg: &cfg, res: res}
	var wg sync.WaitGroup
	stopAll := make(chan struct{})
	var stopOnce sync.Once
	stopNow := func() { stopOnce.Do(func() { close(stopAll) }) }
	start := time.Now()
	res.start = start
	if cfg.records == 0 {
		t := time.AfterFunc(cfg.duration, stopNow)
		defer t.Stop()
	}
	if cfg.stop != nil {
		go func() {
			select {
			case <-cfg.stop:
				stopNow()
			case <-stopAll:
			}
		}()
	}
	progressDone := make(chan struct{})
	progressExited := make(chan struct{})
	go func() {
		defer close(progressExited)
		if cfg.progress == nil {
			return
		}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-progressDone:
				cfg.progress(l.acked.Load())
				return
			case <-t.C:
				cfg.progress(l.acked.Load())
			}
		}
	}()
	perProducer := cfg.rate / float64(len(producers))
	stopped := func() bool {
		select {
		case <-stopAll:
			return true
		case <-ctx.Done():
			return true
		default:
			return false
		}
	}
	for idx, p := range producers {
		wg.Add(1)
		go func(idx uint32, p *client.Producer) {
			defer wg.Done()
			lp := &loadProducer{run: l, idx: idx}
			pl := newPayloadOf(cfg.recordSize, cfg.bodies, idx)
			var interval time.Duration
			if perProducer > 0 {
				interval = time.Duration(float64(time.Second) / perProducer)
			}
			part := int32(idx) % int32(max(cfg.partitions, 1))
			for seq := uint64(0); !stopped(); seq++ {
				if n := l.sent.Add(1); cfg.records > 0 && n > cfg.records {
					l.sent.Add(-1)
					stopNow()
					break
				}
				t0 := time.Now()
				called := t0
				if interval > 0 {
					// Paced: latency counts from the intended send time
					// whenever the sender runs late (no coordinated omission),
					// else from the actual one. The sender sleeps only when it
					// is a whole pacingSlack ahead, so it releases records in
					// small bursts instead of waking for every record (at
					// 20k records/s that was 20k timer wakeups a second,
					// competing with the cluster for the same cores).
					intended := start.Add(time.Duration(seq) * interval)
					if d := intended.Sub(t0); d >= pacingSlack {
						time.Sleep(d)
						t0 = time.Now()
						called = t0
					}
					if intended.Before(t0) {
						t0 = intended
					}
				}
				// The timestamp is t0: one clock read less per record for the producer.
				rec := client.Record{Topic: cfg.topic, Value: pl.fill(t0, idx, seq), Timestamp: t0}
				if cfg.explicit {
					rec.Partition, rec.PartitionSet = part, true
					part = (part + 1) % int32(cfg.partitions)
				}
				pr := lp.next()
				pr.lp, pr.t0, pr.called, pr.seq = lp, t0, called, seq
				lp.inflight.Add(1)
				if err := p.ProduceTo(ctx, &rec, pr); err != nil {
					lp.inflight.Done()
					l.fail(err)
				}
			}
			p.Flush(ctx)
			lp.inflight.Wait()
		}(uint32(idx), p)
	}
	wg.Wait()
	close(progressDone)
	<-progressExited
	stopNow()
	res.sent, res.acked, res.failed, res.ackedBytes = l.sent.Load(), l.acked.Load(), l.failed.Load(), l.ackedBytes.Load()
	res.end = time.Unix(0, l.lastAck.Load())
	if res.acked == 0 {
		res.end = time.Now()
	}
	return res
}

// producerSet is one client and one producer per load producer.
type producerSet struct {
	clients   []*client.Client
	producers []*client.Producer
}

func newProducerSet(ctx context.Context, ccfg client.Config, pcfg client.ProducerConfig, n int) (*producerSet, error) {
	s := &producerSet{}
	for range n {
		c, err := client.New(ctx, ccfg)
		if err != nil {
			s.close()
			return nil, err
		}
		s.clients = append(s.clients, c)
		p, err := c.NewProducer(pcfg)
		if err != nil {
			s.close()
			return nil, err
		}
		s.producers = append(s.producers, p)
	}
	return s, nil
}

func (s *producerSet) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, p := range s.producers {
		p.Close(ctx)
	}
	for _, c := range s.clients {
		c.Close(ctx)
	}
}
