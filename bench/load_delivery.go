package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/client"
)

// The load's bookkeeping of its records' deliveries: a handler per record
// from a slab, not a closure per record.

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
// its profile's samples at full load, where it shares the machine with the
// nodes; its CPU per payload MB fell about 5% without it).
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
