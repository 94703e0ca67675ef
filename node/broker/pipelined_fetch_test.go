package broker

import (
	"context"
	"testing"
	"time"

	"paymentlog/quic"
	"paymentlog/wire"
)

// TestPipelinedFollowerHWWaitsForItsFlush: a follower (fsync always) has
// appended b and its flush of b is stuck. Pipelined, it fetches on from
// b's end and copies c meanwhile, and the leader's HW stays below b: only
// the follower's durable end counts. When the flush ends, the follower's
// durable report moves the HW at once, while its next fetch is held by the
// leader's long-poll (a minute here), and the acks=all produce of b is
// answered. Serial, the follower does not fetch again until b is durable.
func TestPipelinedFollowerHWWaitsForItsFlush(t *testing.T) {
	for _, serial := range []bool{false, true} {
		t.Run(map[bool]string{false: "pipelined", true: "serial"}[serial], func(t *testing.T) {
			c := newTestCluster(t, clusterOptions{nodes: 2, memFS: true, maxWait: time.Minute, serialFetch: serial})
			c.createPartition("payments", 0, []int32{1, 2}, 1, 2)
			if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
				t.Fatalf("produce a: %+v", r)
			}
			waitInSync(t, c, testKey)
			leader := c.node(1).b.partition(testKey.topic, testKey.partition)
			follower := func() (fetched, durable int64) {
				leader.mu.Lock()
				defer leader.mu.Unlock()
				return leader.mu.r.FollowerFetched(2), leader.mu.r.FollowerLEO(2)
			}
			hw := func() int64 {
				hw, _, _, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition)
				return hw
			}

			gate := gateSyncs(t, c.node(2).fs, "payments-0")
			gate.arm()
			done := make(chan wire.ProducePartitionResponse, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				r, err := c.produce(ctx, testKey, wire.AcksAll, buildBatch(-1, -1, []string{"b"}))
				if err != nil {
					r.Err, r.Message = wire.Unknown, err.Error()
				}
				done <- r
			}()
			gate.waitBlocked(t, "node 2 never flushed b")
			if serial {
				if f, d := follower(); f != 1 || d != 1 {
					t.Fatalf("serial follower flushing b: the leader saw a fetch at %d, durable to %d; want 1 and 1", f, d)
				}
			} else {
				waitFor(t, "node 2 fetches from b's end while b's flush is stuck", 10*time.Second, func() bool {
					f, _ := follower()
					return f == 2
				})
				if _, d := follower(); d != 1 || hw() != 1 {
					t.Fatalf("node 2 fetched at 2 with b not durable: the leader counts it durable to %d, HW %d; want 1 and 1", d, hw())
				}
				// c is copied too (the fetch loop runs up to two answers
				// past a stuck flush round).
				if r := mustProduce(t, c, wire.AcksLeader, buildBatch(-1, -1, []string{"c"})); r.Err != wire.None {
					t.Fatalf("produce c: %+v", r)
				}
				waitFor(t, "node 2 copies c", 10*time.Second, func() bool {
					return c.node(2).b.partition(testKey.topic, testKey.partition).log.LogEndOffset() == 3
				})
				if _, d := follower(); d != 1 || hw() != 1 {
					t.Fatalf("node 2 copied c with b not durable: the leader counts it durable to %d, HW %d; want 1 and 1", d, hw())
				}
			}
			select {
			case r := <-done:
				t.Fatalf("b acknowledged while node 2's copy is not durable: %+v", r)
			default:
			}
			before := c.node(1).b.counters.replicaDurableReports.Load()
			gate.open()
			select {
			case r := <-done:
				if r.Err != wire.None || r.BaseOffset != 1 {
					t.Fatalf("produce b: %+v", r)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("b not acknowledged 20 s after node 2's flush (the leader's long-poll is a minute)")
			}
			if got := crashedLog(t, c, 2, c.node(2).fs.CrashClone()); got[1] != "b" {
				t.Fatalf("node 2's log after a crash holds %v; b was acknowledged", got)
			}
			reports := c.node(1).b.counters.replicaDurableReports.Load() - before
			switch {
			case serial && reports != 0:
				t.Fatalf("a serial follower sent %d durable reports", reports)
			case !serial && reports == 0:
				t.Fatal("b was acknowledged without a durable report from the pipelined follower")
			}
			if !serial {
				waitFor(t, "the HW covers c", 10*time.Second, func() bool { return hw() == 3 })
			}
		})
	}
}

// TestFetchSessionClosesOnAFrameItCannotTake: a durable report that does not
// decode, or a frame of another type, closes that fetch session (and only
// it). A well-formed report for an epoch the leader does not have changes
// nothing, and the session goes on answering fetches.
func TestFetchSessionClosesOnAFrameItCannotTake(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, maxWait: 20 * time.Millisecond})
	// Replica 9 is played by this test.
	c.createPartition("payments", 0, []int32{1, 9}, 1, 1)
	if r := mustProduce(t, c, wire.AcksLeader, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	leader := c.node(1)
	open := func() *quic.Session {
		s, err := c.client.OpenSession(ctx, leader.addr, wire.TypeReplicaFetch, wire.ReplicaFetchOpen{FollowerID: 9, Incarnation: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	fetch := wire.ReplicaFetchRequest{MaxWaitMs: 10, MaxBytes: 1 << 20, Parts: []wire.ReplicaFetchPartition{{Topic: "payments",
		TopicID: "id-payments", Partition: 0, FetchOffset: 0, Durable: 0, LastFetchedEpoch: -1, CurrentLeaderEpoch: 1, HighWatermark: -1}}}

	s := open()
	if err := s.Send(ctx, wire.TypeReplicaDurable, wire.ReplicaDurableReport{Parts: []wire.ReplicaDurablePartition{{
		Topic: "payments", TopicID: "id-payments", Partition: 0, CurrentLeaderEpoch: 7, Durable: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(ctx, wire.TypeReplicaFetch, fetch); err != nil {
		t.Fatal(err)
	}
	var resp wire.ReplicaFetchResponse
	if fr, err := s.Recv(ctx); err != nil {
		t.Fatalf("a fetch after a report for another epoch: %v", err)
	} else if err := fr.Decode(&resp); err != nil || len(resp.Parts) != 1 || resp.Parts[0].Err != wire.None || len(resp.Parts[0].Records) == 0 {
		t.Fatalf("a fetch after a report for another epoch: %+v, %v", resp, err)
	}
	if got := leader.b.counters.replicaDurableReports.Load(); got != 1 {
		t.Fatalf("%d durable reports counted, want 1", got)
	}
	p := leader.b.partition("payments", 0)
	p.mu.Lock()
	durable := p.mu.r.FollowerLEO(9)
	p.mu.Unlock()
	if durable != 0 {
		t.Fatalf("replica 9 counted durable to %d after a report for epoch 7 and a fetch durable to 0", durable)
	}

	for _, c := range []struct {
		name string
		typ  quic.FrameType
		body []byte
	}{
		{"a durable report that does not decode", wire.TypeReplicaDurable, []byte{0xc1}},
		{"a durable report with a bad list length", wire.TypeReplicaDurable, []byte{0x81, 0xa5, 'p', 'a', 'r', 't', 's', 0xdd, 0x7f, 0xff, 0xff, 0xff}},
		{"a produce", wire.TypeProduce, []byte{0x80}},
	} {
		s := open()
		if err := s.Send(ctx, c.typ, quic.Raw(c.body)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(ctx); err == nil || ctx.Err() != nil {
			t.Fatalf("%s on a fetch session: the session goes on (%v)", c.name, err)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
	if r := mustProduce(t, c, wire.AcksLeader, buildBatch(-1, -1, []string{"b"})); r.Err != wire.None {
		t.Fatalf("produce after the closed sessions: %+v", r)
	}
}
