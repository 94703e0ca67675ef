package client

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/metrics"
	"paymentlog/wire"
)

// ProducerStats is what a producer has done since it was created: the
// client side of its records' latency, as Kafka's producer reports it in
// record-queue-time and request-latency. A record's produce latency is
// about its batch's queue time (less for the batch's later records) plus
// its last request's round trip; the leader's share of the round trip is
// the brokers' paymentlog_produce_latency_seconds.
type ProducerStats struct {
	// Batches counts batches sent at least once; Requests counts every
	// produce request sent (first sends and retries), FailedRequests those
	// that ended in a transport error or an error answer.
	Batches, Requests, FailedRequests uint64
	// FailedByCause splits FailedRequests by cause: the leader's error
	// code (NotLeader, NotEnoughReplicas, OutOfOrderSequence, ...: its
	// wire.ErrorCode name) or NoAnswer (no answer: the connection or the
	// request failed, timed out, or was abandoned for a new leader). Every
	// failed request counts, those retried to success too. Nil when none
	// failed.
	FailedByCause map[string]uint64
	// QueueTime is how long each batch waited in the producer before its
	// first send: from its first record, through Linger and any wait for a
	// free in-flight slot or a leader. One observation per batch.
	QueueTime metrics.HistogramSnapshot
	// RequestLatency is each produce request's round trip, from its send
	// to its answer (or failure): the request's transfer both ways and the
	// leader's time (its flush, and with acks=all the followers'), and any
	// time the leader held the answer back for a quota (ThrottleTime).
	RequestLatency metrics.HistogramSnapshot
	// ThrottledRequests counts the produce answers a leader held back
	// because this client's principal was over its producer_byte_rate
	// quota (paymentlog quota); ThrottleTime is their delays summed, as
	// the answers reported them (ThrottleMs).
	ThrottledRequests uint64
	ThrottleTime      time.Duration
	// EncodedBytes and SentBytes are the bytes of the batches counted in
	// Batches, as encoded before compression and as sent: with
	// ProducerConfig.Compression, SentBytes/EncodedBytes is the compression
	// ratio (Kafka's compression-rate-avg); without, they are equal.
	EncodedBytes, SentBytes uint64
	// Splits counts batches split into smaller ones because their topic
	// takes no batch that large: refused by their leader (RecordTooLarge,
	// a piece refused again counts again) or, not sent yet, larger than a
	// max.message.bytes lowered since they were built. Pieces of a batch
	// that was sent are not counted again in Batches.
	Splits uint64
}

// producerStats is the producer's side of ProducerStats.
type producerStats struct {
	batches, requests, failed atomic.Uint64
	queue, request            metrics.Histogram
	throttled                 atomic.Uint64
	throttledMs               atomic.Int64
	encoded, sent             atomic.Uint64
	splits                    atomic.Uint64

	causes struct {
		sync.Mutex
		m map[string]uint64 // FailedByCause; nil until a request fails
	}
}

// CauseNoAnswer is FailedByCause's key for a request that got no answer.
const CauseNoAnswer = "NoAnswer"

// batchSent counts a batch's first send at now.
func (s *producerStats) batchSent(b *pbatch, now time.Time) {
	s.batches.Add(1)
	s.queue.Observe(now.Sub(b.created))
	s.encoded.Add(uint64(b.bld.Size()))
	s.sent.Add(uint64(len(b.encoded)))
}

// requestDone counts one request sent at start that ended in err (no
// answer) or in an answer with code.
func (s *producerStats) requestDone(start time.Time, err error, code wire.ErrorCode) {
	s.request.Since(start)
	s.requests.Add(1)
	if err == nil && code == wire.None {
		return
	}
	s.failed.Add(1)
	cause := CauseNoAnswer
	if err == nil {
		cause = code.String()
	}
	s.causes.Lock()
	if s.causes.m == nil {
		s.causes.m = map[string]uint64{}
	}
	s.causes.m[cause]++
	s.causes.Unlock()
}

// failedByCause copies the counts of failed requests by cause.
func (s *producerStats) failedByCause() map[string]uint64 {
	s.causes.Lock()
	defer s.causes.Unlock()
	return maps.Clone(s.causes.m)
}

// throttledAnswer counts an answer held back ms for a quota.
func (s *producerStats) throttledAnswer(ms int32) {
	if ms > 0 {
		s.throttled.Add(1)
		s.throttledMs.Add(int64(ms))
	}
}

// Stats returns the producer's counts and latency histograms so far. Two
// readings' difference (metrics.HistogramSnapshot.Sub) is a period's.
func (p *Producer) Stats() ProducerStats {
	return ProducerStats{
		Batches: p.stats.batches.Load(), Requests: p.stats.requests.Load(), FailedRequests: p.stats.failed.Load(),
		QueueTime: p.stats.queue.Snapshot(), RequestLatency: p.stats.request.Snapshot(),
		ThrottledRequests: p.stats.throttled.Load(), ThrottleTime: time.Duration(p.stats.throttledMs.Load()) * time.Millisecond,
		EncodedBytes: p.stats.encoded.Load(), SentBytes: p.stats.sent.Load(), Splits: p.stats.splits.Load(),
		FailedByCause: p.stats.failedByCause(),
	}
}
