package metadata

import (
	"slices"
	"testing"

	"paymentlog/wire"
)

func topicRF(t *testing.T, img *Image, name string) int32 {
	t.Helper()
	tp, ok := img.Topic(name)
	if !ok {
		t.Fatalf("topic %s missing", name)
	}
	return tp.RF
}

// Raising the replication factor adds a replica at the end of the
// preference order; the partition keeps its leader and its three in-sync
// replicas until the new one has caught up, and the AlterPartition that
// brings it into the ISR completes the change.
func TestReplicationFactorRaised(t *testing.T) {
	img := reassignFixture(t)
	recs, err := DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "payments", RF: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got := FormatRecord(recs[0]); got != "TopicConfigChanged payments id=payments-id rf=4" {
		t.Fatalf("first record %s", got)
	}
	img = mustApply(t, img, recs)
	if rf := topicRF(t, img, "payments"); rf != 4 {
		t.Fatalf("topic RF %d", rf)
	}
	wantPartition(t, img, "payments", "payments-0 replicas=[1,2,3,4] isr=[1,2,3] leader=1 epoch=0 pepoch=1 adding=[4] removing=[]")
	if recs, err := DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "payments", RF: 4}); err != nil || recs != nil {
		t.Fatalf("retry: %v %v", recs, err)
	}
	img = decide(t, img)(alterISR(t, img, "payments", 1, 2, 3, 4))
	wantPartition(t, img, "payments", "payments-0 replicas=[1,2,3,4] isr=[1,2,3,4] leader=1 epoch=0 pepoch=2")
}

// Lowering it drops, in order, a replica whose broker is not live, one out
// of the ISR, the last in preference order, never the leader; with the
// kept replicas in sync it completes at once.
func TestReplicationFactorLowered(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, img *Image) *Image
		want  string
	}{
		{"the last replica goes", func(t *testing.T, img *Image) *Image { return img },
			"payments-0 replicas=[1,2] isr=[1,2] leader=1 epoch=1 pepoch=1"},
		{"a replica out of sync goes first", func(t *testing.T, img *Image) *Image {
			return decide(t, img)(alterISR(t, img, "payments", 1, 3))
		}, "payments-0 replicas=[1,3] isr=[1,3] leader=1 epoch=1 pepoch=2"},
		{"a fenced replica goes first", func(t *testing.T, img *Image) *Image {
			return mustApply(t, img, DecideFence(img, 2, 1))
		}, "payments-0 replicas=[1,3] isr=[1,3] leader=1 epoch=1 pepoch=2"},
		{"never the leader", func(t *testing.T, img *Image) *Image {
			img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{2, 3, 1}}))
			return img
		}, "payments-0 replicas=[2,1] isr=[2,1] leader=1 epoch=1 pepoch=2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			img := c.setup(t, reassignFixture(t))
			img = decide(t, img)(DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "payments", RF: 2}))
			wantPartition(t, img, "payments", c.want)
			if rf := topicRF(t, img, "payments"); rf != 2 {
				t.Fatalf("topic RF %d", rf)
			}
		})
	}
}

// A kept replica out of sync holds the change until it catches up: the
// dropped replica stays a full member until then.
func TestReplicationFactorLoweredWaitsForKeptReplicas(t *testing.T) {
	img := reassignFixture(t)
	img = mustApply(t, img, []Record{BrokerRegistered{ID: 5, Addr: "127.0.0.1:7105", Incarnation: 1, MetadataVersion: MetadataVersion}})
	img = mustApply(t, img, []Record{BrokerUnfenced{ID: 5, Incarnation: 1}})
	img = decide(t, img)(DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "payments", RF: 5}))
	img = decide(t, img)(alterISR(t, img, "payments", 1, 2, 3, 4, 5))
	img = decide(t, img)(alterISR(t, img, "payments", 1, 2, 3)) // 4 and 5 fall behind
	img = decide(t, img)(DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "payments", RF: 4}))
	wantPartition(t, img, "payments", "payments-0 replicas=[1,2,3,4,5] isr=[1,2,3] leader=1 epoch=0 pepoch=4 adding=[] removing=[5]")
	img = decide(t, img)(alterISR(t, img, "payments", 1, 2, 3, 4))
	wantPartition(t, img, "payments", "payments-0 replicas=[1,2,3,4] isr=[1,2,3,4] leader=1 epoch=1 pepoch=5")
}

// Refusals name what is wrong.
func TestReplicationFactorRefusals(t *testing.T) {
	img := reassignFixture(t)
	for _, c := range []struct {
		ev   ReplicationFactorEvent
		code wire.ErrorCode
		msg  string
	}{
		{ReplicationFactorEvent{Topic: "nope", RF: 3}, wire.UnknownTopicOrPartition, `topic "nope" does not exist`},
		{ReplicationFactorEvent{Topic: "payments", RF: 0}, wire.InvalidReplicationFactor, "must be 1-16"},
		{ReplicationFactorEvent{Topic: "payments", RF: 17}, wire.InvalidReplicationFactor, "must be 1-16"},
		{ReplicationFactorEvent{Topic: "payments", RF: 1}, wire.InvalidReplicationFactor, "below topic \"payments\"'s min.insync.replicas 2"},
		{ReplicationFactorEvent{Topic: "payments", RF: 5}, wire.InvalidReplicationFactor, "payments-0 can have at most 4 replicas on the live brokers (it has [1,2,3])"},
	} {
		_, err := DecideReplicationFactor(img, c.ev)
		wantCode(t, err, c.code, c.msg)
	}
	// A fenced broker is not a candidate.
	img = mustApply(t, img, DecideFence(img, 4, 1))
	_, err := DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "payments", RF: 4})
	wantCode(t, err, wire.InvalidReplicationFactor, "payments-0 can have at most 3 replicas")
}

// Added replicas spread over the brokers holding the fewest of the topic's
// replicas, and partitions added later get the new replication factor.
func TestReplicationFactorSpreadsAndNewPartitionsFollow(t *testing.T) {
	img := upImage(t, 4)
	img = decide(t, img)(DecideCreateTopic(img, CreateTopicEvent{Name: "t", ID: "t-id", Partitions: 4, RF: 2, MinISR: 1, Seed: 1}))
	img = decide(t, img)(DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "t", RF: 3}))
	held := map[int32]int{}
	tp, _ := img.Topic("t")
	for _, p := range tp.Partitions {
		if len(p.Target()) != 3 || p.Leader != p.Original()[0] {
			t.Fatalf("%s", p)
		}
		for _, r := range p.Target() {
			held[r]++
		}
	}
	for id := int32(1); id <= 4; id++ {
		if held[id] != 3 {
			t.Fatalf("replicas per broker %v, want 3 each", held)
		}
	}
	img = decide(t, img)(DecideCreatePartitions(img, CreatePartitionsEvent{Name: "t", Count: 5}))
	if p, _ := img.Partition("t", 4); len(p.Replicas) != 3 {
		t.Fatalf("new partition %s", p)
	}
}

// Cancelling a partition's part of a change leaves it with its original
// replicas; min ISR cannot then be raised above their number.
func TestReplicationFactorCancelledPartitionBoundsMinISR(t *testing.T) {
	img := reassignFixture(t)
	img = decide(t, img)(DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "u", RF: 4}))
	img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "u", Cancel: true}))
	wantPartition(t, img, "u", "u-0 replicas=[1,2,3] isr=[1,2,3] leader=1 epoch=1 pepoch=2")
	_, err := DecideAlterConfigs(img, AlterConfigsEvent{Topic: "u", Set: map[string]string{ConfigMinInsyncReplicas: "4"}})
	wantCode(t, err, wire.InvalidConfig, "exceeds the 3 replicas of u-0")
	img = decide(t, img)(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "u", Set: map[string]string{ConfigMinInsyncReplicas: "3"}}))
	// The same RF again reassigns the partition left behind.
	img = decide(t, img)(DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "u", RF: 4}))
	wantPartition(t, img, "u", "u-0 replicas=[1,2,3,4] isr=[1,2,3] leader=1 epoch=1 pepoch=3 adding=[4] removing=[]")
}

// The apply checks the record's replication factor against its range and
// the min ISR.
func TestReplicationFactorRecordValidated(t *testing.T) {
	img := reassignFixture(t)
	for _, r := range []TopicConfigChanged{
		{Name: "payments", ID: "payments-id", RF: 17},
		{Name: "payments", ID: "payments-id", RF: -1},
		{Name: "payments", ID: "payments-id", RF: 1},            // below min ISR 2
		{Name: "payments", ID: "payments-id", RF: 2, MinISR: 3}, // min ISR above the new RF
	} {
		if _, _, err := img.ApplyEntry(img.Offset()+1, []Record{r}); err == nil {
			t.Fatalf("applied %s", FormatRecord(r))
		}
	}
	img = mustApply(t, img, []Record{TopicConfigChanged{Name: "payments", ID: "payments-id", RF: 4, MinISR: 4}})
	if tp, _ := img.Topic("payments"); tp.RF != 4 || tp.MinISR != 4 {
		t.Fatalf("rf %d min ISR %d", tp.RF, tp.MinISR)
	}
}

// TestWriteReplicationFactorFuzzSeeds keeps the fuzz seeds of a replication
// factor change in sync (run with -rewrite): the entry raising a 3-replica
// topic to 4 replicas on four brokers, and the image with it under way.
func TestWriteReplicationFactorFuzzSeeds(t *testing.T) {
	img := upImage(t, 4) // this build on every broker
	img = decide(t, img)(DecideCreateTopic(img, CreateTopicEvent{Name: "payments", ID: "0f3a", Partitions: 3, RF: 3, Seed: 5}))
	tp, _ := img.Topic("payments")
	recs, err := DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "payments", RF: tp.RF + 1})
	if err != nil {
		t.Fatal(err)
	}
	entry, err := EncodeEntry(recs...)
	if err != nil {
		t.Fatal(err)
	}
	checkSeedFiles(t, "seed-rf", entry, "seed-image-rf", mustApply(t, img, recs).MarshalSnapshot())
}

// A replica that a reassignment in progress is removing is the first one
// a raise keeps: it holds a copy, and it is no longer removed.
func TestReplicationFactorRaisedKeepsAReplicaBeingRemoved(t *testing.T) {
	img := reassignFixture(t)
	img = mustApply(t, img, []Record{BrokerRegistered{ID: 5, Addr: "127.0.0.1:7105", Incarnation: 1, MetadataVersion: MetadataVersion}})
	img = mustApply(t, img, []Record{BrokerUnfenced{ID: 5, Incarnation: 1}})
	img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{4, 2, 3}}))
	img = decide(t, img)(DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "payments", RF: 4}))
	wantPartition(t, img, "payments", "payments-0 replicas=[4,2,3,1] isr=[2,3,1] leader=1 epoch=0 pepoch=2 adding=[4] removing=[]")
}

// A replication factor change with every partition's replicas given (a
// reassignment plan that changes the count) moves each partition straight
// to them, in one entry; an assignment that misses a partition, has
// another size, or names an unregistered broker is refused whole.
func TestReplicationFactorWithAssignment(t *testing.T) {
	img := upImage(t, 5)
	img = decide(t, img)(DecideCreateTopic(img, CreateTopicEvent{Name: "payments", ID: "0f3a", Partitions: 2, RF: 3}))
	assignment := [][]int32{{5, 1, 2, 3}, {4, 5, 1, 2}}
	recs, err := DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "payments", RF: 4, Assignment: assignment})
	if err != nil || len(recs) != 3 {
		t.Fatalf("%v %v", recs, err)
	}
	next := mustApply(t, img, recs)
	for i, want := range assignment {
		p, _ := next.Partition("payments", int32(i))
		if !slices.Equal(p.Target(), want) {
			t.Fatalf("partition %d: target %v, want %v (%s)", i, p.Target(), want, p)
		}
	}
	if tp, _ := next.Topic("payments"); tp.RF != 4 {
		t.Fatalf("RF %d", tp.RF)
	}
	if recs, err := DecideReplicationFactor(next, ReplicationFactorEvent{Topic: "payments", RF: 4, Assignment: assignment}); err != nil || recs != nil {
		t.Fatalf("a retry: %v %v", recs, err)
	}
	for _, c := range []struct {
		assignment [][]int32
		code       wire.ErrorCode
		msg        string
	}{
		{[][]int32{{5, 1, 2, 3}}, wire.InvalidRequest, "the assignment names 1 partitions; topic \"payments\" has 2"},
		{[][]int32{{5, 1, 2, 3}, {4, 5, 1}}, wire.InvalidReplicationFactor, "payments-1: 3 replicas given"},
		{[][]int32{{5, 1, 2, 3}, {4, 5, 1, 9}}, wire.InvalidRequest, "payments-1: broker 9 is not registered"},
		{[][]int32{{5, 1, 2, 5}, {4, 5, 1, 2}}, wire.InvalidRequest, "payments-0: broker 5 listed twice"},
	} {
		_, err := DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "payments", RF: 4, Assignment: c.assignment})
		wantCode(t, err, c.code, c.msg)
	}
}
