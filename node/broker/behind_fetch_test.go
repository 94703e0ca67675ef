package broker

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"paymentlog/wire"
)

// fetchErrorHook reports the codes of the follower fetch errors logged.
type fetchErrorHook struct{ codes chan string }

func (h fetchErrorHook) Enabled(context.Context, slog.Level) bool { return true }
func (h fetchErrorHook) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "fetch error" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "code" {
				select {
				case h.codes <- a.Value.String():
				default:
				}
			}
			return true
		})
	}
	return nil
}
func (h fetchErrorHook) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h fetchErrorHook) WithGroup(string) slog.Handler      { return h }

// A follower that learns of a new leader before the new leader itself does
// is answered UnknownLeaderEpoch, sits out only a moment, and rejoins the
// next request without waiting for the long poll of the other partitions
// it fetches from that leader: an acks=all write on the new leader
// completes although the other partition's long poll lasts an hour.
func TestFollowerAheadOfItsNewLeaderRejoinsSoon(t *testing.T) {
	hook := fetchErrorHook{codes: make(chan string, 64)}
	c := newTestCluster(t, clusterOptions{nodes: 3, lagTime: time.Minute, maxWait: time.Hour, logger: slog.New(hook)})
	idle := tp{"idle", 0}
	c.createPartition(idle.topic, idle.partition, []int32{2, 3}, 2, 1) // node 3 long-polls node 2 for it; nothing arrives
	c.createPartition(testKey.topic, testKey.partition, []int32{1, 2, 3}, 1, 2)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	waitInSync(t, c, testKey)
	c.crashNode(1)

	// The controller makes node 2 the leader; node 3 applies it first.
	c.mu.Lock()
	st := c.parts[testKey]
	st.Leader, st.LeaderEpoch, st.PartitionEpoch = 2, st.LeaderEpoch+1, st.PartitionEpoch+1
	st.ISR = []int32{2, 3}
	next := *st
	next.Replicas, next.ISR = slices.Clone(st.Replicas), slices.Clone(st.ISR)
	c.mu.Unlock()
	if err := c.node(3).b.ApplyPartition(c.ctx, next); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for seen := false; !seen; {
		select {
		case code := <-hook.codes:
			seen = code == wire.UnknownLeaderEpoch.String()
		case <-deadline:
			t.Fatal("node 3's fetch from the leader-to-be was never answered UnknownLeaderEpoch")
		}
	}
	if err := c.node(2).b.ApplyPartition(c.ctx, next); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	r, err := c.produceWithin(ctx, testKey, wire.AcksAll, 20000, buildBatch(-1, -1, []string{"b"}))
	if err != nil || r.Err != wire.None {
		t.Fatalf("acks=all produce on the new leader: %+v %v (node 3 never fetched it: sitting out behind the idle partition's long poll?)", r, err)
	}
}
