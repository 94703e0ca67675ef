package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// fetchedRecord is one record of a consumer fetch answer.
type fetchedRecord struct {
	offset int64
	value  string
	epoch  int32
}

func fetchedRecords(t *testing.T, raw []byte) []fetchedRecord {
	t.Helper()
	var out []fetchedRecord
	if _, err := segment.SplitBatches(raw, func(b segment.Batch) error {
		it := b.Iter()
		for it.Next() {
			r := it.Record()
			out = append(out, fetchedRecord{r.Offset, string(r.Value), b.LeaderEpoch()})
		}
		return it.Err()
	}); err != nil {
		t.Fatalf("fetched batches: %v", err)
	}
	return out
}

// consumerFetch sends one consumer fetch (no long poll) to node id.
func consumerFetch(t *testing.T, c *testCluster, id int32, offset int64, lastEpoch int32) wire.FetchPartitionResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp wire.FetchResponse
	err := c.client.Call(ctx, c.node(id).addr, wire.TypeFetch, wire.FetchRequest{MaxWaitMs: 0, MinBytes: 1, MaxBytes: 1 << 20,
		Topic: testKey.topic, Parts: []wire.FetchPartition{{Partition: testKey.partition, Offset: offset, LeaderEpoch: -1,
			LastFetchedEpoch: lastEpoch}}}, &resp)
	if err != nil {
		t.Fatalf("fetch from %d: %v", id, err)
	}
	if len(resp.Parts) != 1 {
		t.Fatalf("fetch from %d: %d parts", id, len(resp.Parts))
	}
	return resp.Parts[0]
}

// divergedCluster sets up an unclean election on two nodes: node 1 leads
// epoch 1 and makes a b c visible with its ISR shrunk to itself, while
// node 2, which has only a, is made leader of epoch 2 (node 1 has not
// heard of it) and writes vals in epoch 2, one batch each, all visible. It
// returns the controller's epoch-2 state, which node 1 has not applied.
func divergedCluster(t *testing.T, vals ...string) (*testCluster, PartitionState) {
	t.Helper()
	c := newTestCluster(t, clusterOptions{nodes: 2, maxWait: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	produceTo(t, c, 1, 1, wire.AcksAll, "a")
	waitFor(t, "node 2 has a", 10*time.Second, func() bool {
		_, _, leo, _ := c.node(2).b.PartitionInfo(testKey.topic, testKey.partition)
		return leo == 1
	})
	c.mu.Lock()
	st := c.parts[testKey]
	st.Leader, st.LeaderEpoch, st.PartitionEpoch, st.ISR = 2, 2, 3, []int32{2}
	epoch2 := *st
	epoch2.Replicas, epoch2.ISR = slices.Clone(st.Replicas), slices.Clone(st.ISR)
	c.mu.Unlock()
	if err := c.node(2).b.ApplyPartition(c.ctx, epoch2); err != nil {
		t.Fatal(err)
	}
	// Node 1 is left leading epoch 1 alone, with no other replica: the fake
	// controller (which says node 2 leads epoch 2) answers its proposals
	// FencedLeaderEpoch, and metadata never comes to settle them, so an
	// expansion proposed for node 2 (whose last fetch had caught up) would
	// stay pending and hold the HW at 1 for as long as it waits for node 2
	// — on a loaded machine the writes below then timed out.
	alone := PartitionState{Topic: testKey.topic, TopicID: "id-payments", Partition: testKey.partition, Leader: 1,
		LeaderEpoch: 1, PartitionEpoch: 2, Replicas: []int32{1}, ISR: []int32{1}, MinISR: 1}
	if err := c.node(1).b.ApplyPartition(c.ctx, alone); err != nil {
		t.Fatal(err)
	}
	produceTo(t, c, 1, 1, wire.AcksAll, "b")
	produceTo(t, c, 1, 1, wire.AcksAll, "c")
	for _, v := range vals {
		produceTo(t, c, 2, 2, wire.AcksAll, v)
	}
	waitFor(t, "both leaders' records visible", 10*time.Second, func() bool {
		hw1, _, _, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition)
		hw2, _, _, _ := c.node(2).b.PartitionInfo(testKey.topic, testKey.partition)
		return hw1 == 3 && hw2 == int64(1+len(vals))
	})
	return c, epoch2
}

// TestConsumerFetchDivergence: a consumer read a b c (epoch 1, position 3)
// from a leader that an unclean election replaced by one holding only a,
// which wrote x y z w in epoch 2. Fetching at 3 with its last fetched epoch
// it must be told that its history diverges from the leader's at offset 1,
// not be handed z w as if they followed c: from the new leader, and from
// the old one once its log has been truncated below the consumer's
// position, rewritten with the new leader's records, and it leads again.
func TestConsumerFetchDivergence(t *testing.T) {
	c, _ := divergedCluster(t, "x", "y", "z", "w")
	r := consumerFetch(t, c, 1, 0, -1)
	got := fetchedRecords(t, r.Records)
	if want := []fetchedRecord{{0, "a", 1}, {1, "b", 1}, {2, "c", 1}}; r.Err != wire.None || !slices.Equal(got, want) {
		t.Fatalf("node 1 answered %v %v, want %v", r.Err, got, want)
	}
	// Without the epoch, the new leader serves what it has at 3.
	if r := consumerFetch(t, c, 2, 3, -1); r.Err != wire.None || len(fetchedRecords(t, r.Records)) == 0 ||
		fetchedRecords(t, r.Records)[0].value != "z" {
		t.Fatalf("the scenario is not as planned: node 2 at 3 answered %v %v", r.Err, fetchedRecords(t, r.Records))
	}
	checkDiverged := func(id int32) {
		t.Helper()
		r := consumerFetch(t, c, id, 3, 1)
		if r.Err != wire.None || len(r.Records) > 0 || r.Diverging == nil ||
			*r.Diverging != (wire.EpochEndOffset{Epoch: 1, EndOffset: 1}) {
			t.Fatalf("node %d answered a fetch at 3 after epoch 1 with %v, %d bytes, diverging %+v; want the divergence "+
				"at epoch 1, end offset 1, and no records", id, r.Err, len(r.Records), r.Diverging)
		}
	}
	checkDiverged(2)

	// Node 1 learns of epoch 2: it truncates to 1 and copies x y z w;
	// back in the ISR, it is elected again.
	c.push(testKey)
	waitFor(t, "node 1 holds node 2's log", 10*time.Second, func() bool {
		_, _, leo, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition)
		return leo == 5
	})
	if got := readAll(t, c.node(1).b.partition(testKey.topic, testKey.partition).log, 5); got[1] != "x" || got[3] != "z" {
		t.Fatalf("node 1's log %v, want node 2's", got)
	}
	waitFor(t, "node 1 back in the ISR", 10*time.Second, func() bool {
		return slices.Contains(c.state(testKey).ISR, 1)
	})
	if id := c.elect(testKey, 2); id != 1 {
		t.Fatalf("elected %d", id)
	}
	checkDiverged(1)
}

// TestConsumerFetchAcrossCleanLeaderChange: a leader change that loses
// nothing is no divergence: the consumer that read a b in epoch 1 goes on
// with c from the new leader of epoch 2, from its position or from within
// epoch 1; an epoch newer than the leader's own is UnknownLeaderEpoch.
func TestConsumerFetchAcrossCleanLeaderChange(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, maxWait: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 2)
	for _, v := range []string{"a", "b"} {
		if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{v})); r.Err != wire.None {
			t.Fatalf("produce %s: %+v", v, r)
		}
	}
	waitInSync(t, c, testKey)
	if r := consumerFetch(t, c, 1, 0, -1); r.Err != wire.None || len(fetchedRecords(t, r.Records)) != 2 {
		t.Fatalf("node 1: %v %v", r.Err, fetchedRecords(t, r.Records))
	}
	if id := c.elect(testKey, -1); id != 2 {
		t.Fatalf("elected %d", id)
	}
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"c"})); r.Err != wire.None {
		t.Fatalf("produce c: %+v", r)
	}
	waitFor(t, "c visible on node 2", 10*time.Second, func() bool {
		hw, _, _, _ := c.node(2).b.PartitionInfo(testKey.topic, testKey.partition)
		return hw == 3
	})
	for _, tc := range []struct {
		offset int64
		epoch  int32
		want   []fetchedRecord
	}{
		{2, 1, []fetchedRecord{{2, "c", 2}}},
		{1, 1, []fetchedRecord{{1, "b", 1}, {2, "c", 2}}},
		{3, 2, nil},
		{2, -1, []fetchedRecord{{2, "c", 2}}},
	} {
		r := consumerFetch(t, c, 2, tc.offset, tc.epoch)
		if got := fetchedRecords(t, r.Records); r.Err != wire.None || r.Diverging != nil || !slices.Equal(got, tc.want) {
			t.Errorf("fetch at %d after epoch %d: %v, diverging %+v, %v; want %v", tc.offset, tc.epoch, r.Err,
				r.Diverging, got, tc.want)
		}
	}
	if r := consumerFetch(t, c, 2, 3, 3); r.Err != wire.UnknownLeaderEpoch {
		t.Errorf("fetch after epoch 3 from the leader of epoch 2: %v, diverging %+v; want UnknownLeaderEpoch", r.Err, r.Diverging)
	}
}

// TestConsumerFetchReadAfterLeadershipLost: the leader checks a consumer's
// fetch (epochs, divergence, range) and then reads, not atomically. In
// between it learns of an unclean election, truncates below the
// consumer's position and copies the new leader's records to the same
// offsets, below the HW it checked. The answer must not carry them: the
// consumer that read a b would take the new leader's y for the record
// after b.
func TestConsumerFetchReadAfterLeadershipLost(t *testing.T) {
	c, epoch2 := divergedCluster(t, "x", "y", "z", "w")
	n1 := c.node(1)
	hook := func(fp *wire.FetchPartition) {
		if fp.Offset != 2 || fp.LastFetchedEpoch != 1 {
			return
		}
		if err := n1.b.ApplyPartition(c.ctx, epoch2); err != nil {
			t.Error(err)
		}
		waitFor(t, "node 1 holds node 2's log", 10*time.Second, func() bool {
			_, _, leo, _ := n1.b.PartitionInfo(testKey.topic, testKey.partition)
			return leo == 5
		})
	}
	n1.b.hooks.beforeConsumerRead.Store(&hook)
	resp, views, _, _ := n1.b.buildFetch(&wire.FetchRequest{MaxBytes: 1 << 20, Topic: testKey.topic,
		Parts: []wire.FetchPartition{{Partition: testKey.partition, Offset: 2, LeaderEpoch: -1, LastFetchedEpoch: 1}}},
		[]*partition{n1.b.partition(testKey.topic, testKey.partition)})
	defer releaseAll(views)
	n1.b.hooks.beforeConsumerRead.Store(nil)
	if got := readAll(t, n1.b.partition(testKey.topic, testKey.partition).log, 5); got[2] != "y" {
		t.Fatalf("the hook did not run as planned: node 1's log %v", got)
	}
	if pr := resp.Parts[0]; pr.Err == wire.None && len(pr.Records) > 0 {
		t.Fatalf("node 1, no longer leader of epoch 1, answered a consumer at 2 after epoch 1 with %v: "+
			"the consumer would read a b y", fetchedRecords(t, pr.Records))
	} else {
		t.Logf("answer: %v", pr.Err)
	}
}

// epochList is an EpochSource over (epoch, start offset) entries, as
// segment's epoch cache answers.
type epochList struct {
	entries [][2]int64 // epoch, start offset; both increasing
	leo     int64
}

func (l epochList) EndOffsetForEpoch(epoch int32) (int32, int64) {
	i := 0
	for i < len(l.entries) && l.entries[i][0] <= int64(epoch) {
		i++
	}
	switch {
	case i == 0:
		return -1, -1
	case i == len(l.entries):
		return int32(l.entries[i-1][0]), l.leo
	}
	return int32(l.entries[i-1][0]), l.entries[i][1]
}

func TestConsumerDivergenceRule(t *testing.T) {
	log := epochList{entries: [][2]int64{{1, 0}, {3, 10}}, leo: 20}
	trimmed := epochList{entries: [][2]int64{{3, 10}}, leo: 20} // retention: log start 10
	none := wire.EpochEndOffset{}
	for _, tc := range []struct {
		log      epochList
		logStart int64
		epoch    int32
		offset   int64
		want     wire.EpochEndOffset
		diverged bool
	}{
		{log, 0, -1, 15, none, false},                                       // not checked
		{log, 0, 3, 15, none, false},                                        // within the latest epoch
		{log, 0, 3, 20, none, false},                                        // at the log end
		{log, 0, 3, 25, wire.EpochEndOffset{Epoch: 3, EndOffset: 20}, true}, // past it: records lost
		{log, 0, 1, 10, none, false},                                        // epoch 1 ends at 10
		{log, 0, 1, 11, wire.EpochEndOffset{Epoch: 1, EndOffset: 10}, true},
		{log, 0, 2, 8, wire.EpochEndOffset{Epoch: 1, EndOffset: 10}, true}, // epoch 2 is not in this log
		{log, 0, 0, 5, wire.EpochEndOffset{Epoch: -1, EndOffset: 0}, true}, // all here is newer
		{log, 0, 0, 0, none, false},
		{trimmed, 10, 1, 10, none, false}, // retention removed epoch 1: nothing to compare
		{trimmed, 10, 1, 8, none, false},  // below the log start: out of range, not divergence
	} {
		got, ok := consumerDivergence(tc.log, tc.logStart, tc.epoch, tc.offset)
		if ok != tc.diverged || (ok && got != tc.want) {
			t.Errorf("epoch %d offset %d (log start %d): %+v %v, want %+v %v", tc.epoch, tc.offset, tc.logStart, got, ok, tc.want, tc.diverged)
		}
	}
}
