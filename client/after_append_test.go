package client

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// A leader answers NotEnoughReplicasAfterAppend when the ISR fell below the
// minimum ISR after it appended the batch: the batch is in its log and may
// yet be committed. The producer retries it and never reports it as
// certainly not written, whatever the later attempts are told: the retry
// accepted as a duplicate acknowledges the first copy (once, at its
// offset); retries refused before their append (NotEnoughReplicas) until
// the delivery timeout, or a terminal refusal, end in a DeliveryError that
// says it may have been written.
func TestNotEnoughReplicasAfterAppendOutcomeIsUnknown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		later clienttest.Action // every attempt after the first
		ok    bool              // the record is acknowledged
	}{
		{"retry accepted as a duplicate", clienttest.Action{}, true},
		{"retries refused until the delivery timeout", clienttest.Action{Kind: clienttest.Refuse, Code: wire.NotEnoughReplicas}, false},
		{"retry refused for good", clienttest.Action{Kind: clienttest.Refuse, Code: wire.InvalidRequest}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := clienttest.New(3)
			fc.CreateTopic("t", 1)
			var attempts atomic.Int32
			fc.SetIntercept(func(_ string, ty quic.FrameType, _ any) clienttest.Action {
				if ty != wire.TypeProduce {
					return clienttest.Action{}
				}
				if attempts.Add(1) == 1 {
					return clienttest.Action{Kind: clienttest.HandleThenRefuse, Code: wire.NotEnoughReplicasAfterAppend}
				}
				return tc.later
			})
			c := mustFakeClient(t, fc)
			p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond, RetryBackoff: time.Millisecond,
				RetryBackoffMax: 5 * time.Millisecond, DeliveryTimeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			d := produceN(t, p, "t", 1, 0)
			recs := fc.Records("t", 0)
			if len(recs) != 1 || string(recs[0].Value) != "v0" {
				t.Fatalf("log holds %d records; want the first attempt's copy only", len(recs))
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			got := d.got[0]
			if d.n[0] != 1 || attempts.Load() < 2 {
				t.Fatalf("%d deliveries after %d attempts; want one, after a retry", d.n[0], attempts.Load())
			}
			var de *DeliveryError
			switch {
			case tc.ok && (got.Err != nil || got.Offset != 0):
				t.Fatalf("delivery %+v; want acknowledged at offset 0", got)
			case !tc.ok && (!errors.As(got.Err, &de) || !de.Unknown):
				t.Fatalf("delivery error %v; the record is in the log: want a DeliveryError saying it may have been written", got.Err)
			}
		})
	}
}
