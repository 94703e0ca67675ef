package node_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/quic"
	"paymentlog/wire"
)

// A Metadata request with WaitAbove and MaxWaitMs is a long poll: without
// news it is answered after the wait with the node's offset (not above
// WaitAbove); with news (a topic created meanwhile) it is answered when the
// node applies it, long before the wait ends.
func TestMetadataLongPoll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 1)
	tc.waitAlive(1)
	c := tc.client(ctx)
	ep, err := quic.New(ctx, quic.Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	addr := tc.node(1).Addr()
	var now wire.MetadataResponse
	if err := ep.Call(ctx, addr, wire.TypeMetadata, wire.MetadataRequest{}, &now); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	var idle wire.MetadataResponse
	if err := ep.Call(ctx, addr, wire.TypeMetadata, wire.MetadataRequest{WaitAbove: now.MetadataOffset, MaxWaitMs: 200}, &idle); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 200*time.Millisecond || idle.MetadataOffset != now.MetadataOffset {
		t.Fatalf("no news: answered after %v at offset %d; want the 200ms wait, offset %d", waited, idle.MetadataOffset, now.MetadataOffset)
	}

	// The wait (5 s) outlasts each call's own deadline (4 s): only answers
	// on news pass. Other news than the topic (a registration) asks again
	// above it.
	hasTopic := func(r *wire.MetadataResponse) bool {
		return slices.ContainsFunc(r.Topics, func(tm wire.TopicMetadata) bool { return tm.Name == "payments" })
	}
	got := make(chan error, 1)
	var news wire.MetadataResponse
	go func() {
		above := now.MetadataOffset
		for {
			cctx, ccancel := context.WithTimeout(ctx, 4*time.Second)
			news = wire.MetadataResponse{}
			err := ep.Call(cctx, addr, wire.TypeMetadata, wire.MetadataRequest{WaitAbove: above, MaxWaitMs: wire.MaxMetadataWaitMs}, &news)
			ccancel()
			if err != nil || hasTopic(&news) || news.MetadataOffset <= above {
				got <- err
				return
			}
			above = news.MetadataOffset
		}
	}()
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 1, MinISR: 1})
	if err := <-got; err != nil {
		t.Fatalf("long poll across a topic creation: %v", err)
	}
	if news.MetadataOffset <= now.MetadataOffset || !hasTopic(&news) {
		t.Fatalf("news at offset %d (asked above %d), topics %d; want the new topic", news.MetadataOffset, now.MetadataOffset, len(news.Topics))
	}
}
