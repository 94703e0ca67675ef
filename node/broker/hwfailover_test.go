package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/quic"
	"paymentlog/wire"
)

// serveMetadata makes node n answer Metadata from the fake controller's
// state, so that a real client can find the partitions' leaders.
func (c *testCluster) serveMetadata(n *testNode) {
	n.ep.Handle(wire.TypeMetadata, func(ctx context.Context, _ quic.Peer, fr quic.Frame) (quic.FrameType, any, error) {
		var req wire.MetadataRequest
		if err := fr.Decode(&req); err != nil {
			return 0, nil, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		resp := wire.MetadataResponse{ControllerID: -1}
		for _, m := range c.liveNodesLocked() {
			resp.Brokers = append(resp.Brokers, wire.BrokerInfo{ID: m.id, Addr: m.addr, State: "alive"})
		}
		topics := map[string]*wire.TopicMetadata{}
		var names []string
		for key, st := range c.parts {
			t := topics[key.topic]
			if t == nil {
				t = &wire.TopicMetadata{Name: key.topic, ID: st.TopicID, ReplicationFactor: int32(len(st.Replicas)), MinISR: st.MinISR}
				topics[key.topic] = t
				names = append(names, key.topic)
			}
			t.Partitions = append(t.Partitions, wire.PartitionMetadata{Partition: key.partition, Leader: st.Leader,
				LeaderEpoch: st.LeaderEpoch, PartitionEpoch: st.PartitionEpoch, Replicas: slices.Clone(st.Replicas),
				ISR: slices.Clone(st.ISR), HighWatermark: -1, LogStartOffset: -1})
			resp.MetadataOffset += int64(st.LeaderEpoch + st.PartitionEpoch)
		}
		slices.Sort(names)
		for _, name := range names {
			if len(req.Topics) == 0 || slices.Contains(req.Topics, name) {
				resp.Topics = append(resp.Topics, *topics[name])
			}
		}
		return wire.TypeMetadata, &resp, nil
	})
}

// TestConsumeToEndAfterFailover (KIP-207): a new leader starts with the HW
// it learnt as a follower, which lags the HW its predecessor had made
// visible until its followers fetch from it. A consumer that reads from the
// beginning and stops at the end, whether it takes the end from ListOffsets
// (consume --exit-at-end) or from the HW fetch answers carry, must not stop
// before records that were acknowledged and visible before the failover.
func TestConsumeToEndAfterFailover(t *testing.T) {
	// A follower learns a new HW only from a fetch answer, and an answer
	// carrying nothing but the HW is held for a minute: the followers keep
	// HW 0 while the leader's is 3.
	c := newTestCluster(t, clusterOptions{hwDelay: time.Minute, maxWait: time.Minute, lagTime: time.Minute})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	for _, n := range c.liveNodes() {
		c.serveMetadata(n)
	}
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a", "b", "c"})); r.Err != wire.None || r.BaseOffset != 0 {
		t.Fatalf("produce: %+v", r)
	}
	want := []string{"a", "b", "c"}
	tps := []client.TopicPartition{{Topic: testKey.topic, Partition: testKey.partition}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got := consumeToHW(ctx, t, c.addrs(), tps[0]); !slices.Equal(got, want) {
		t.Fatalf("before the failover a consumer read %q, want %q", got, want)
	}
	if hw, _, leo, _ := c.node(2).b.PartitionInfo(testKey.topic, testKey.partition); hw != 0 || leo != 3 {
		t.Fatalf("node 2 has hw %d leo %d, want 0 and 3 (the test relies on the held HW answer)", hw, leo)
	}

	// Node 1 dies; node 2 leads epoch 2 with ISR {2, 3}. Only node 2
	// learns of it for now: node 3 does not fetch from it yet, so node 2's
	// HW stays at 0, below its epoch's start offset 3.
	c.stopNode(1)
	c.mu.Lock()
	st := c.parts[testKey]
	st.Leader, st.LeaderEpoch, st.PartitionEpoch, st.ISR = 2, st.LeaderEpoch+1, st.PartitionEpoch+1, []int32{2, 3}
	snap := *st
	snap.Replicas, snap.ISR = slices.Clone(st.Replicas), slices.Clone(st.ISR)
	c.mu.Unlock()
	n2 := c.node(2)
	if err := n2.b.ApplyPartition(c.ctx, snap); err != nil {
		t.Fatal(err)
	}
	// A timestamp lookup whose answer is not below node 2's HW cannot be
	// told from one whose record consumers have seen; one that finds no
	// record at all can.
	if r := listOffset(t, c, n2, 1700000000000); r.Err != wire.OffsetNotAvailable {
		t.Fatalf("ListOffsets(timestamp of a) on node 2 while its HW lags: %+v, want OffsetNotAvailable", r)
	}
	if r := listOffset(t, c, n2, 1800000000000); r.Err != wire.None || r.Offset != -1 {
		t.Fatalf("ListOffsets(timestamp after every record) on node 2 while its HW lags: %+v, want offset -1", r)
	}

	// Note node 2's first answers to ListOffsets(latest) and Fetch.
	listed := make(chan wire.ListOffsetsPartitionResponse, 1)
	fetched := make(chan wire.FetchPartitionResponse, 1)
	n2.ep.Handle(wire.TypeListOffsets, func(ctx context.Context, peer quic.Peer, fr quic.Frame) (quic.FrameType, any, error) {
		var req wire.ListOffsetsRequest
		if err := fr.Decode(&req); err != nil {
			return 0, nil, err
		}
		ty, resp, err := n2.b.handleListOffsets(ctx, peer, fr)
		if r, ok := resp.(wire.ListOffsetsResponse); ok && len(r.Parts) == 1 && req.Parts[0].Timestamp == wire.Latest {
			select {
			case listed <- r.Parts[0]:
			default:
			}
		}
		return ty, resp, err
	})
	n2.ep.Handle(wire.TypeFetch, func(ctx context.Context, peer quic.Peer, fr quic.Frame) (quic.FrameType, any, error) {
		ty, resp, err := n2.b.handleFetch(ctx, peer, fr)
		if r, ok := resp.(quic.Reply); ok {
			if fr, ok := r.Body.(*wire.FetchResponse); ok && len(fr.Parts) == 1 {
				select {
				case fetched <- fr.Parts[0]:
				default:
				}
			}
		}
		return ty, resp, err
	})

	byEnd, byHW := make(chan []string, 1), make(chan []string, 1)
	go func() { byEnd <- consumeToEndOffsets(ctx, t, c.addrs(), tps[0]) }()
	go func() { byHW <- consumeToHW(ctx, t, c.addrs(), tps[0]) }()
	select {
	case r := <-listed:
		t.Logf("node 2 answered ListOffsets(latest) with offset %d, err %v", r.Offset, r.Err)
	case <-ctx.Done():
		t.Fatal("node 2 was never asked for the latest offset")
	}
	select {
	case r := <-fetched:
		t.Logf("node 2 answered a fetch with hw %d, err %v, %d record bytes", r.HighWatermark, r.Err, len(r.Records))
	case <-ctx.Done():
		t.Fatal("node 2 was never asked for records")
	}
	// Node 3 follows node 2: node 2's HW passes its epoch's start.
	c.push(testKey)
	for name, ch := range map[string]chan []string{"end offsets": byEnd, "high watermark": byHW} {
		select {
		case got := <-ch:
			if !slices.Equal(got, want) {
				t.Errorf("after the failover a consumer reading up to the %s read %q, want %q", name, got, want)
			}
		case <-ctx.Done():
			t.Fatalf("the consumer reading up to the %s did not finish", name)
		}
	}
	if r := listOffset(t, c, n2, 1700000000000); r.Err != wire.None || r.Offset != 0 {
		t.Fatalf("ListOffsets(timestamp of a) on node 2 once its HW caught up: %+v, want offset 0", r)
	}
}

func listOffset(t *testing.T, c *testCluster, n *testNode, ts int64) wire.ListOffsetsPartitionResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp wire.ListOffsetsResponse
	if err := c.client.Call(ctx, n.addr, wire.TypeListOffsets, wire.ListOffsetsRequest{Topic: testKey.topic,
		Parts: []wire.ListOffsetsPartition{{Partition: testKey.partition, Timestamp: ts}}}, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Parts[0]
}

func (c *testCluster) addrs() []string {
	var out []string
	for _, n := range c.liveNodes() {
		out = append(out, n.addr)
	}
	return out
}

func newTestClient(ctx context.Context, t *testing.T, bootstrap []string) *client.Client {
	cl, err := client.New(ctx, client.Config{Bootstrap: bootstrap, Logger: testLogger(t)})
	if err != nil {
		t.Error(err)
		return nil
	}
	t.Cleanup(func() { cl.Close(context.Background()) })
	return cl
}

// consumeToEndOffsets reads tp as `consume --exit-at-end` does: from the
// beginning up to the end offset ListOffsets gave at the start.
func consumeToEndOffsets(ctx context.Context, t *testing.T, bootstrap []string, tp client.TopicPartition) []string {
	cl := newTestClient(ctx, t, bootstrap)
	if cl == nil {
		return nil
	}
	cons := cl.NewConsumer(client.ConsumerConfig{MaxWait: 50 * time.Millisecond})
	defer cons.Close()
	ends, err := cons.EndOffsets(ctx, []client.TopicPartition{tp})
	if err != nil {
		t.Errorf("end offsets: %v", err)
		return nil
	}
	cons.Assign([]client.TopicPartition{tp}, client.SeekBeginning)
	var got []string
	for {
		if pos, _ := cons.Position(tp); pos >= 0 && pos >= ends[tp] {
			return got
		}
		msgs, err := cons.Poll(ctx)
		if err != nil {
			t.Errorf("poll: %v", err)
			return got
		}
		for _, m := range msgs {
			if m.Offset < ends[tp] {
				got = append(got, string(m.Value))
			}
		}
	}
}

// consumeToHW reads tp from the beginning until its position reaches the
// high watermark fetch answers report.
func consumeToHW(ctx context.Context, t *testing.T, bootstrap []string, tp client.TopicPartition) []string {
	cl := newTestClient(ctx, t, bootstrap)
	if cl == nil {
		return nil
	}
	cons := cl.NewConsumer(client.ConsumerConfig{MaxWait: 50 * time.Millisecond})
	defer cons.Close()
	cons.Assign([]client.TopicPartition{tp}, client.SeekBeginning)
	var got []string
	for {
		msgs, err := cons.Poll(ctx)
		if err != nil {
			t.Errorf("poll: %v", err)
			return got
		}
		for _, m := range msgs {
			got = append(got, string(m.Value))
		}
		if pos, _ := cons.Position(tp); pos >= 0 && cons.HighWatermark(tp) >= 0 && pos >= cons.HighWatermark(tp) {
			return got
		}
	}
}
