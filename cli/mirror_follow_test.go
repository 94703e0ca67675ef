package cli

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/wire"
)

// targetHolds reports whether topic on c has partitions partitions whose
// high watermarks add up to n.
func targetHolds(c *client.Client, topic string, partitions int, n int64) func() bool {
	return func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, err := c.Admin().DescribeTopic(ctx, topic) // fresh metadata: partitions added
		if err != nil || len(d.Partitions) != partitions {
			return false
		}
		var sum int64
		for _, p := range d.Partitions {
			sum += p.HighWatermark
		}
		return sum == n
	}
}

// A running mirror with --topic-pattern mirrors a matching topic created
// on the source meanwhile, and partitions added to a mirrored topic, each
// within a group heartbeat; a topic that does not match is left alone. At
// the interrupt it commits everything and exits cleanly.
func TestMirrorFollowsNewTopicsAndPartitions(t *testing.T) {
	e := startMirrorEnv(t)
	createTopicN(t, e, "pay-a", 1)
	produceRecords(t, e.srcC, "pay-a", 0, 0, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := e.options()
	opts.topics, opts.pattern, opts.commitInterval = nil, "pay-.*", 20*time.Millisecond
	var errb lockedBuffer
	done := make(chan error, 1)
	go func() { done <- runMirror(ctx, opts, &errb) }()
	waitForCLI(t, "pay-a mirrored", targetHolds(e.dstC, "pay-a", 1, 3))

	createTopicN(t, e, "pay-b", 2)
	createTopicN(t, e, "other", 1)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	if err := e.srcC.Admin().CreatePartitions(ctx2, "pay-a", 2); err != nil {
		t.Fatal(err)
	}
	produceRecords(t, e.srcC, "pay-a", 1, 0, 4)
	produceRecords(t, e.srcC, "pay-b", 0, 0, 2)
	produceRecords(t, e.srcC, "pay-b", 1, 0, 5)
	produceRecords(t, e.srcC, "other", 0, 0, 1)
	waitForCLI(t, "pay-a grown and pay-b created and mirrored", func() bool {
		return targetHolds(e.dstC, "pay-a", 2, 7)() && targetHolds(e.dstC, "pay-b", 2, 7)()
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("mirror after its interrupt: %v; stderr %q", err, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("mirror still running 30 s after its interrupt; stderr %q", errb.String())
	}
	for _, topic := range []string{"pay-a", "pay-b"} {
		src, dst := readPartitions(t, e.srcC, topic), readPartitions(t, e.dstC, topic)
		for p := range src {
			checkCopies(t, topic, p, src[p], dst[p])
		}
		if got, want := groupOffsets(t, e.srcC, defaultMirrorGroup, topic), highWatermarks(t, e.srcC, topic); !maps.Equal(got, want) {
			t.Fatalf("%s: committed %v; want the source HWs %v", topic, got, want)
		}
	}
	ctx3, cancel3 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel3()
	if _, err := e.dstC.Admin().DescribeTopic(ctx3, "other"); err == nil || !strings.Contains(err.Error(), wire.UnknownTopicOrPartition.String()) {
		t.Fatalf("topic other on the target: %v; want it missing", err)
	}
	out := errb.String()
	if !strings.Contains(out, "created topic pay-b on the target: 2 partitions") ||
		!strings.Contains(out, "topic pay-a on the target grown from 1 to 2 partitions") ||
		lastLine(out) != "paymentlog: mirror: 14 records (640 B) mirrored, 4 partitions owned, max lag 0" {
		t.Fatalf("stderr %q", out)
	}
}
