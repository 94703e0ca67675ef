package node_test

import (
	"context"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/quic"
	"paymentlog/wire"
)

// A Metadata request that names one topic many times gets one answer for
// it. Answering every repetition turned a few bytes per name into a full
// topic description (every partition, replica and ISR list): 9 MB of
// repeated names cost the node hundreds of MB to GBs, and the answer could
// not even be sent (larger than a frame).
func TestMetadataRepeatedTopicAnsweredOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 1)
	tc.waitAlive(1)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 8, ReplicationFactor: 1, MinISR: 1})
	waitFor(t, "the topic in the node's image", 15*time.Second, func() bool {
		_, ok := tc.node(1).Store().Image().Topic("payments")
		return ok
	})
	ep, err := quic.New(ctx, quic.Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	req := wire.MetadataRequest{Topics: make([]string, 100_000)}
	for i := range req.Topics {
		req.Topics[i] = "payments"
		if i%2 == 1 {
			req.Topics[i] = "nosuchtopic"
		}
	}
	var resp wire.MetadataResponse
	if err := ep.Call(ctx, tc.node(1).Addr(), wire.TypeMetadata, req, &resp); err != nil {
		t.Fatalf("metadata for one topic named 100k times: %v", err)
	}
	if len(resp.Topics) != 2 || resp.Topics[0].Name != "payments" || len(resp.Topics[0].Partitions) != 8 ||
		resp.Topics[1].Name != "nosuchtopic" || resp.Topics[1].Err != wire.UnknownTopicOrPartition {
		t.Fatalf("got %d topic entries, want payments (8 partitions) then nosuchtopic once each", len(resp.Topics))
	}
}
