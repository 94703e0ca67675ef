package broker

import (
	"log/slog"
	"testing"
	"time"

	"paymentlog/wire"
)

// A shrink says which follower it leaves out and why: how far behind it is,
// when it last caught up and when it last fetched (Kafka's "Shrinking ISR"
// line).
func TestShrinkLogsTheOutOfSyncFollower(t *testing.T) {
	logs := &syncBuffer{}
	c := newTestCluster(t, clusterOptions{nodes: 2, lagTime: 300 * time.Millisecond, maxWait: 50 * time.Millisecond,
		logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 2)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	c.stopNode(2)
	waitFor(t, "ISR shrink", 10*time.Second, func() bool { return len(c.state(testKey).ISR) == 1 })
	const line = "shrinking ISR: follower out of sync"
	if n := logs.count(line, "node=1", "follower=2", "leader_leo=1", "behind=0", "caught_up_ago=", "fetched_ago=", "lag_time=300ms", "proposed_isr=[1]"); n == 0 {
		t.Fatalf("no %q line naming follower 2 with its lag; the log:\n%s", line, logs.buf.String())
	}
	if n := logs.count(line, "follower=1"); n != 0 {
		t.Fatalf("the leader named itself out of sync %d times", n)
	}
}
