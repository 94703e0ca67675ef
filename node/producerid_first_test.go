package node_test

import (
	"context"
	"testing"
	"time"

	"paymentlog/quic"
	"paymentlog/wire"
)

// The first producer ids a new cluster hands out are not 0 (nor negative):
// segment.Builder stores a zero ProducerID as "not idempotent", so the
// producer given it had its retries written twice and out of order (found
// by e2e chaos seed 1; TestRegressionProducerIDZero). The controller's first
// block starts at 0 and the broker skips it (producerIDs.take). Asked
// directly, not through client.Producer, which refuses an id <= 0 itself:
// with that check, the e2e scenario passed with the broker handing out 0.
func TestFirstProducerIDIsNotZero(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 1)
	tc.waitAlive(1)
	ep, err := quic.New(ctx, quic.Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	seen := map[int64]bool{}
	for i := range 3 {
		var resp wire.InitProducerIDResponse
		if err := ep.Call(ctx, tc.node(1).Addr(), wire.TypeInitProducerID, wire.InitProducerIDRequest{}, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Err != wire.None || resp.ProducerID <= 0 || seen[resp.ProducerID] {
			t.Fatalf("producer id %d of a new cluster: %d (err %v); want a new id > 0 (ids so far %v)", i+1, resp.ProducerID, resp.Err, seen)
		}
		seen[resp.ProducerID] = true
	}
}
