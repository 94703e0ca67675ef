package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"paymentlog/wire"
)

// rackFetch sends a consumer fetch naming rack to node id.
func rackFetch(t *testing.T, c *testCluster, id int32, rack string, fp wire.FetchPartition) wire.FetchPartitionResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fp.Partition = testKey.partition
	var resp wire.FetchResponse
	if err := c.client.Call(ctx, c.node(id).addr, wire.TypeFetch, wire.FetchRequest{MaxWaitMs: 0, MinBytes: 1, MaxBytes: 1 << 20,
		Topic: testKey.topic, Parts: []wire.FetchPartition{fp}, Rack: rack}, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Parts[0]
}

// The node side of reads from the consumer's rack: a leader in another rack
// names the in-sync follower in the consumer's, and answers itself when
// none is there, when it shares the rack, or when the fetch names no rack;
// a follower serves a fetch naming the epoch it follows, below its own HW
// only, and refuses another epoch or a consumer whose history parts from
// its log (the leader answers that one).
func TestFollowerReads(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 3, racks: map[int32]string{1: "az1", 2: "az2", 3: "az2"}})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	produceN(t, c, 5, wire.AcksAll)
	waitInSync(t, c, testKey)
	epoch := c.state(testKey).LeaderEpoch

	if r := rackFetch(t, c, 1, "az2", wire.FetchPartition{Offset: 0, LeaderEpoch: epoch, LastFetchedEpoch: -1}); r.PreferredReplica != 2 || len(r.Records) != 0 || r.Err != wire.None {
		t.Fatalf("leader, consumer in az2: %s; want node 2 named, no records", descFetch(r))
	}
	for _, rack := range []string{"az1", "az9", ""} {
		if r := rackFetch(t, c, 1, rack, wire.FetchPartition{Offset: 0, LeaderEpoch: epoch, LastFetchedEpoch: -1}); r.PreferredReplica != 0 || len(r.Records) == 0 {
			t.Fatalf("leader, consumer in %q: %s; want the records", rack, descFetch(r))
		}
	}

	r := rackFetch(t, c, 2, "az2", wire.FetchPartition{Offset: 0, LeaderEpoch: epoch, LastFetchedEpoch: -1})
	if r.Err != wire.None || len(r.Records) == 0 || r.HighWatermark != 5 {
		t.Fatalf("follower: %s; want records below its HW 5", descFetch(r))
	}
	if r := rackFetch(t, c, 2, "", wire.FetchPartition{Offset: 0, LeaderEpoch: epoch, LastFetchedEpoch: -1}); r.Err != wire.NotLeader {
		t.Fatalf("follower, no rack named: %s; want NotLeader", descFetch(r))
	}
	if r := rackFetch(t, c, 2, "az2", wire.FetchPartition{Offset: 0, LeaderEpoch: epoch + 1, LastFetchedEpoch: -1}); r.Err == wire.None {
		t.Fatalf("follower, another epoch: %s; want a refusal", descFetch(r))
	}
	if r := rackFetch(t, c, 2, "az2", wire.FetchPartition{Offset: 3, LeaderEpoch: epoch, LastFetchedEpoch: epoch + 5}); r.Err == wire.None {
		t.Fatalf("follower, a last fetched epoch it does not know: %s; want a refusal", descFetch(r))
	}
	// A truncation that begins while the read runs: the read is refused.
	p := c.node(2).b.partition("payments", 0)
	bump := func(*wire.FetchPartition) { p.truncations.Add(1) }
	c.node(2).b.hooks.beforeConsumerRead.Store(&bump)
	if r := rackFetch(t, c, 2, "az2", wire.FetchPartition{Offset: 0, LeaderEpoch: epoch, LastFetchedEpoch: -1}); r.Err != wire.NotLeader || len(r.Records) != 0 {
		t.Fatalf("follower, a truncation during the read: %s; want NotLeader", descFetch(r))
	}
	c.node(2).b.hooks.beforeConsumerRead.Store(nil)

}

// A follower serves only below its own HW, which moves a fetch round after
// the leader's: with the HW news held back (an hour), the follower holds
// the last record but does not serve it; the leader does.
func TestFollowerReadsStopAtTheFollowersHW(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, hwDelay: time.Hour, racks: map[int32]string{1: "az1", 2: "az2"}})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 2)
	produceN(t, c, 3, wire.AcksAll)
	var fhw, fleo int64
	waitFor(t, "the follower holding every record, its HW behind", 10*time.Second, func() bool {
		lhw, _, lleo := infoOf(t, c, 1)
		var ok bool
		fhw, _, fleo, ok = c.node(2).b.PartitionInfo(testKey.topic, testKey.partition)
		return ok && lhw == 3 && lleo == 3 && fleo == 3 && fhw < 3
	})
	epoch := c.state(testKey).LeaderEpoch
	if r := rackFetch(t, c, 2, "az2", wire.FetchPartition{Offset: fhw, LeaderEpoch: epoch, LastFetchedEpoch: -1}); r.Err != wire.None || len(r.Records) != 0 || r.HighWatermark != fhw {
		t.Fatalf("follower (HW %d, LEO %d) at its HW: %s; want no records", fhw, fleo, descFetch(r))
	}
	if r := rackFetch(t, c, 1, "az1", wire.FetchPartition{Offset: fhw, LeaderEpoch: epoch, LastFetchedEpoch: -1}); r.Err != wire.None || len(r.Records) == 0 {
		t.Fatalf("leader at offset %d: %s; want the records", fhw, descFetch(r))
	}
}

// descFetch describes a fetch answer without its records' bytes.
func descFetch(r wire.FetchPartitionResponse) string {
	return fmt.Sprintf("err %v, %d record bytes, HW %d, preferred %d", r.Err, len(r.Records), r.HighWatermark, r.PreferredReplica)
}
