package broker

import (
	"context"
	"time"

	"paymentlog/quic"
	"paymentlog/wire"
)

// Quotas (Config.Quotas) meters client traffic against the principals'
// byte-rate quotas (wire/quotas.go, node/quota): Wait says how long to hold
// a request of peer back before serving it (its debt), Record counts the
// bytes the request moved and returns how long peer's next request should
// wait. A nil Quotas throttles nothing.
type Quotas interface {
	Wait(peer quic.Peer, key string) time.Duration
	Record(peer quic.Peer, key string, n int64) time.Duration
}

// Throttled requests, by the index of counters.throttled.
const (
	throttledProduce = iota
	throttledFetch
	throttledKinds
)

// holdBack waits out peer's debt for key (until ctx ends) before its
// request is served, and returns how long it held it. Kafka answers at once
// and then mutes the connection; here the request is served late, which
// slows a client the same way: it has a bounded number of requests in
// flight. A consumer that honours a fetch answer's ThrottleMs is never held.
func (b *Broker) holdBack(ctx context.Context, peer quic.Peer, key string) time.Duration {
	if b.cfg.Quotas == nil {
		return 0
	}
	d := b.cfg.Quotas.Wait(peer, key)
	if d <= 0 {
		return 0
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	return d
}

// countThrottle counts one answer throttled for d in all (held back, or
// told to wait before the next request).
func (b *Broker) countThrottle(kind int, d time.Duration) {
	if d > 0 {
		b.counters.throttled[kind].Add(1)
		b.counters.throttledNanos[kind].Add(uint64(d))
	}
}

// recordQuota counts n bytes of peer against its quota for key and
// returns how long peer's next request should wait.
func (b *Broker) recordQuota(peer quic.Peer, key string, n int64) time.Duration {
	if b.cfg.Quotas == nil {
		return 0
	}
	return b.cfg.Quotas.Record(peer, key, n)
}

// producedBytes is the batch bytes of a produce request.
func producedBytes(req *wire.ProduceRequest) int64 {
	var n int64
	for i := range req.Parts {
		n += int64(len(req.Parts[i].Batch))
	}
	return n
}

// fetchedBytes is the record bytes of a fetch answer.
func fetchedBytes(resp *wire.FetchResponse) int64 {
	var n int64
	for i := range resp.Parts {
		n += int64(len(resp.Parts[i].Records))
	}
	return n
}
