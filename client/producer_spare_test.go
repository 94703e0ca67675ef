package client

import (
	"testing"

	"paymentlog/segment"
)

// builderOfCap returns a builder whose buffer holds n bytes.
func builderOfCap(n int) *segment.Builder {
	b := segment.NewBuilder(segment.BuilderOptions{})
	b.Recycle(segment.BuilderOptions{}, n)
	return b
}

func TestKeepBuilderBoundsSparesByCountAndBytes(t *testing.T) {
	p := &Producer{cfg: ProducerConfig{BufferBytes: 10 << 20, BatchBytes: 1 << 20, MaxInFlight: 5}}
	pp := newPartProducer(p, "t", 0)
	for range spareBuilders + 2 {
		pp.keepBuilder(builderOfCap(1 << 20))
	}
	if got := len(pp.mu.spare); got != spareBuilders {
		t.Fatalf("spares %d, want %d", got, spareBuilders)
	}
	if got, want := p.spareBytes.Load(), int64(spareBuilders<<20); got != want {
		t.Fatalf("spareBytes %d, want %d", got, want)
	}
	// A second partition may keep only what is left of half the budget (5 MiB).
	pp2 := newPartProducer(p, "t", 1)
	for range spareBuilders {
		pp2.keepBuilder(builderOfCap(1 << 20))
	}
	if got := len(pp2.mu.spare); got != 1 {
		t.Fatalf("second partition kept %d spares, want 1 (budget)", got)
	}
	if got := p.spareBytes.Load(); got > p.cfg.BufferBytes/2 {
		t.Fatalf("spareBytes %d over half the budget %d", got, p.cfg.BufferBytes/2)
	}
}

func TestNewBatchReusesTheSpareBuilder(t *testing.T) {
	p := &Producer{c: &Client{meta: &metadata{}}, cfg: ProducerConfig{BufferBytes: 10 << 20, BatchBytes: 1 << 20, MaxInFlight: 5, Linger: 1 << 40}}
	pp := newPartProducer(p, "t", 0)
	spare := builderOfCap(1 << 20)
	pp.keepBuilder(spare)
	r := &Record{Topic: "t", Value: make([]byte, 1000)}
	pp.append(r, 0, recordSize(r), 0, nil)
	b := pp.mu.open
	if b == nil || b.bld != spare {
		t.Fatal("the open batch does not use the spare builder")
	}
	if len(pp.mu.spare) != 0 || p.spareBytes.Load() != 0 {
		t.Fatalf("spare still counted: %d builders, %d bytes", len(pp.mu.spare), p.spareBytes.Load())
	}
	// A batch resolved while a request may still write its bytes gives
	// nothing back; otherwise its builder comes back as a spare.
	b.inFlight = true
	if b.release() != nil {
		t.Fatal("release returned the builder of a batch still in flight")
	}
	b2 := newBatch(nil, 4096, 1<<20, 8, b.created, b.deadline.Sub(b.created))
	if bld := b2.release(); bld == nil {
		t.Fatal("release returned no builder for a resolved batch")
	}
}

// A batch filled to BatchBytes sits in a buffer of BatchBytes (plus the
// header), not in one doubled past it.
func TestBatchBufferStopsAtBatchBytes(t *testing.T) {
	const batchBytes = 300_000
	p := &Producer{c: &Client{meta: &metadata{}}, cfg: ProducerConfig{BufferBytes: 10 << 20, BatchBytes: batchBytes, MaxInFlight: 5, Linger: 1 << 40}}
	pp := newPartProducer(p, "t", 0)
	pp.keepBuilder(builderOfCap(4096)) // not one from the shared pool, which may be larger
	r := &Record{Topic: "t", Value: make([]byte, 1000)}
	for len(pp.mu.closed) == 0 {
		pp.append(r, 0, recordSize(r), 0, nil)
	}
	b := pp.mu.closed[0]
	if c := b.bld.Cap(); c > batchBytes+segment.HeaderSize {
		t.Fatalf("a batch of %d bytes (limit %d) sits in a buffer of %d", b.bld.Size(), batchBytes, c)
	}
}
