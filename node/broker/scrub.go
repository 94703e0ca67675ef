package broker

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"paymentlog/segment"
)

// The scrubber (segment/scrub.go) reads every sealed segment of every
// partition this broker hosts, leader or follower, and checks each batch's
// CRC, so that silent corruption on the disk is found before a consumer
// reads it or a failover makes this replica the leader. One pass goes over
// all partitions, one at a time, at Config.ScrubBytesPerSec; the next
// starts Config.ScrubInterval after the previous one started (at once if a
// pass took longer). The first starts Config.ScrubDelay after the broker,
// or one ScrubInterval if that is shorter (not to compete with a restart's
// catching up).
//
// A corrupt batch fails the partition's log, which stops the node (its
// OnFailure, as for any storage failure): its leaderships move to in-sync
// replicas, and when it starts again the log is truncated at the bad batch
// and reported torn (it leaves the partition's eligible leader replicas),
// so the replica fetches the rest again from its leader.

// Scrub defaults.
const (
	// DefaultScrubInterval: a pass a day.
	DefaultScrubInterval = 24 * time.Hour
	// DefaultScrubDelay before the first pass.
	DefaultScrubDelay = 10 * time.Minute
	// scrubChunk is how much a Scrub call checks before the throttle.
	scrubChunk = 256 << 10
)

// ScrubSummary is what a pass did.
type ScrubSummary struct {
	Partitions int   // partitions scrubbed to their end
	Bytes      int64 // bytes checked
	// Corrupt names the partitions whose logs it found a corrupt batch in
	// (and failed).
	Corrupt []string
}

// scrubLoop runs ScrubNow passes.
func (b *Broker) scrubLoop() {
	defer b.wg.Done()
	wait := min(b.cfg.ScrubDelay, b.cfg.ScrubInterval)
	for {
		t := time.NewTimer(wait)
		select {
		case <-b.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		start := time.Now()
		s := b.ScrubNow(b.ctx)
		if b.ctx.Err() != nil {
			return
		}
		b.log.Info("log scrub pass done", "partitions", s.Partitions, "bytes", s.Bytes, "corrupt", s.Corrupt,
			"took", time.Since(start).Round(time.Millisecond))
		wait = max(b.cfg.ScrubInterval-time.Since(start), 0)
	}
}

// ScrubNow runs one pass now, at Config.ScrubBytesPerSec (unlimited when
// it is 0), and returns what it found. It stops early when ctx ends.
func (b *Broker) ScrubNow(ctx context.Context) ScrubSummary {
	parts := b.partitions()
	slices.SortFunc(parts, func(x, y *partition) int {
		return cmp.Or(cmp.Compare(x.key.topic, y.key.topic), cmp.Compare(x.key.partition, y.key.partition))
	})
	var s ScrubSummary
	for _, p := range parts {
		n, err := b.scrubPartition(ctx, p)
		s.Bytes += n
		switch {
		case ctx.Err() != nil:
			return s
		case errors.Is(err, segment.ErrScrubCorrupt):
			s.Corrupt = append(s.Corrupt, p.key.String())
			b.counters.scrubCorrupt.Add(1)
		case err != nil && !errors.Is(err, segment.ErrClosed):
			p.lg.Warn("log scrub of the partition stopped", "err", err)
		case err == nil:
			s.Partitions++
		}
	}
	b.counters.scrubPasses.Add(1)
	return s
}

// scrubPartition scrubs p's sealed segments to their end.
func (b *Broker) scrubPartition(ctx context.Context, p *partition) (int64, error) {
	var at segment.ScrubPoint
	var total int64
	for {
		if ctx.Err() != nil {
			return total, ctx.Err()
		}
		next, n, done, err := p.log.Scrub(at, scrubChunk)
		total += n
		b.counters.scrubBytes.Add(uint64(n))
		if err != nil || done {
			return total, err
		}
		at = next
		if rate := b.cfg.ScrubBytesPerSec; rate > 0 && n > 0 {
			t := time.NewTimer(time.Duration(float64(n) / float64(rate) * float64(time.Second)))
			select {
			case <-ctx.Done():
				t.Stop()
				return total, ctx.Err()
			case <-t.C:
			}
		}
	}
}
