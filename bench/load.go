package bench

import (
	"context"
	"sync"
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
