package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"paymentlog/node/metadata"
	"paymentlog/quic"
	"paymentlog/wire"
)

// A Metadata request may name at most wire.MaxMetadataTopics distinct
// topics, none longer than a topic name can be; beyond, it is refused whole
// with InvalidRequest (not retriable) instead of building an answer echoing
// every unknown name, which grew larger than a frame and was refused only
// by the encoder after being built. Up to the limit, every name is answered.
func TestMetadataRequestTopicLimits(t *testing.T) {
	if wire.MaxTopicNameLen != metadata.MaxTopicNameLen {
		t.Fatalf("wire.MaxTopicNameLen %d, metadata.MaxTopicNameLen %d", wire.MaxTopicNameLen, metadata.MaxTopicNameLen)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 1)
	tc.waitAlive(1)
	ep, err := quic.New(ctx, quic.Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	names := func(n, size int) []string {
		out := make([]string, n)
		for i := range out {
			s := fmt.Sprintf("nosuch-%d-", i)
			out[i] = s + strings.Repeat("x", size-len(s))
		}
		return out
	}
	call := func(topics []string) wire.MetadataResponse {
		t.Helper()
		var resp wire.MetadataResponse
		if err := ep.Call(ctx, tc.node(1).Addr(), wire.TypeMetadata, wire.MetadataRequest{Topics: topics}, &resp); err != nil {
			t.Fatalf("metadata for %d names: %v", len(topics), err)
		}
		return resp
	}

	// At the limit, with the longest names: answered, every name once.
	atLimit := names(wire.MaxMetadataTopics, wire.MaxTopicNameLen)
	resp := call(append(atLimit, atLimit[0]))
	if resp.Err != wire.None || len(resp.Topics) != wire.MaxMetadataTopics || resp.Topics[0].Err != wire.UnknownTopicOrPartition {
		t.Fatalf("%d distinct unknown names: err %v, %d topic entries; want every one answered UnknownTopicOrPartition",
			wire.MaxMetadataTopics, resp.Err, len(resp.Topics))
	}

	// Refused whole, named, not retriable.
	for what, topics := range map[string][]string{
		"one distinct name too many": names(wire.MaxMetadataTopics+1, 20),
		"100 000 distinct names":     names(100_000, 20),
		"a name longer than a topic": append(names(1, 20), strings.Repeat("y", wire.MaxTopicNameLen+1)),
	} {
		resp := call(topics)
		if resp.Err != wire.InvalidRequest || resp.Err.Retriable() || resp.Message == "" || len(resp.Topics) != 0 {
			t.Errorf("%s: err %v (%q), %d topic entries; want InvalidRequest with a reason and no entries",
				what, resp.Err, resp.Message, len(resp.Topics))
		}
	}
}
