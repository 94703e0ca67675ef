package broker

import (
	"context"

	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

// Produce order without idempotence. A producer without idempotence (its
// batches carry producer id -1 and no sequence) may keep several requests
// for a partition in flight. Each travels on a QUIC stream of its own and
// the producer opens a partition's streams in the order it sends the
// requests (quic.WriteAfter), so they are accepted in that order; but each
// is served on its own goroutine, and without sequence numbers reorder.go
// cannot tell that a batch overtook another. Kafka keeps such requests in
// order because a broker reads one connection's requests one at a time;
// here the produce handler is registered with quic.HandleOrdered and each
// batch without a sequence is appended only once every earlier stream of
// its connection has settled the partition: the stream was not a produce
// request, carried no unsequenced batch for the partition, or has appended
// its batch (or failed it). So a producer's pipelined requests are
// appended in the order it sent them unless one is retried.
//
// A request declares its unsequenced partitions as soon as it is decoded
// (before its quota hold and validation), and an earlier produce request
// that declared the partition is waited for as long as the request's own
// timeout: it is here and on its way to the append. An earlier stream whose
// request has not been read yet (its bytes are late, or the peer never
// sends them) is waited for at most streamOrderWait; the batch is then
// appended anyway, and if that request later carries a batch for the
// partition, it lands after this one: counted in
// paymentlog_produce_reorder_stream_skipped_total.
//
// Batches with a sequence (idempotent producers) are not ordered here:
// their requests release their place as soon as they are decoded, and a
// batch ahead of its sequence waits as reorder.go says.

// streamOrderWait bounds how long an unsequenced batch waits for an earlier
// stream of its connection whose request has not been read yet. A
// connection's streams arrive side by side, so a large request opened
// first can finish arriving after a small one opened after it by more than
// DefaultReorderWait on a busy machine (see DefaultReorderWaitFirst); a stream the peer
// reset releases its place at once.
const streamOrderWait = DefaultReorderWaitFirst

// produceOrder is a produce request's place in its connection's stream
// order (quic.StreamOrder). Its methods do nothing on a nil *produceOrder:
// a request whose batches all carry sequences.
type produceOrder struct {
	o    *quic.StreamOrder
	keys []any // per part: its partition (a tp) if ordered here, else nil
}

// orderUnsequenced declares to the request's stream order the partitions
// whose batches carry no sequence, and releases the stream's place at once
// when there are none (returning nil).
func orderUnsequenced(ctx context.Context, req *wire.ProduceRequest) *produceOrder {
	o := quic.StreamOrderOf(ctx)
	if o == nil {
		return nil
	}
	var po *produceOrder
	var declared []any
	for i := range req.Parts {
		if !unsequenced(req.Parts[i].Batch) {
			continue
		}
		if po == nil {
			po = &produceOrder{o: o, keys: make([]any, len(req.Parts))}
		}
		po.keys[i] = tp{req.Topic, req.Parts[i].Partition}
		declared = append(declared, po.keys[i])
	}
	o.Declare(declared) // none: released
	if orderDeclaredHook != nil {
		orderDeclaredHook(req)
	}
	return po
}

// orderDeclaredHook, when set (package tests only), sees each produce
// request once its order is declared, before its quota hold and appends.
var orderDeclaredHook func(*wire.ProduceRequest)

// unsequenced says whether a produced batch carries no producer sequence
// (tryAppendLeader checks none). A batch whose header does not parse is
// refused anyway: it is not ordered.
func unsequenced(batch []byte) bool {
	h, err := segment.ParseHeader(batch)
	return err == nil && (h.ProducerID < 0 || h.BaseSequence < 0)
}

// await waits until part i's batch may be appended: no earlier stream of
// the connection still holds its partition.
func (po *produceOrder) await(ctx context.Context, c *counters, i int) {
	if po == nil || po.keys[i] == nil {
		return
	}
	c.orderAwaiting.Add(1)
	waited, skipped := po.o.Await(ctx, po.keys[i], streamOrderWait)
	c.orderAwaiting.Add(-1)
	if waited {
		c.orderWaits.Add(1)
	}
	if skipped {
		c.orderSkipped.Add(1)
	}
}

// done says that part i's batch was appended, or failed.
func (po *produceOrder) done(i int) {
	if po != nil && po.keys[i] != nil {
		po.o.Done(po.keys[i])
	}
}
