package node_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// produceOne produces one record with its own producer (acks=all) and
// returns its offset or the delivery error.
func produceOne(ctx context.Context, t *testing.T, c *client.Client, topic, value string, deliveryTimeout time.Duration) (int64, error) {
	t.Helper()
	p, err := c.NewProducer(client.ProducerConfig{DeliveryTimeout: deliveryTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	done := make(chan client.Delivery, 1)
	if err := p.Produce(ctx, &client.Record{Topic: topic, Value: []byte(value)}, func(d client.Delivery) { done <- d }); err != nil {
		return 0, err
	}
	if err := p.Flush(ctx); err != nil {
		return 0, err
	}
	select {
	case d := <-done:
		return d.Offset, d.Err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// TestUncleanElectionTurnedOnBringsOfflinePartitionBack: a partition whose
// last ISR member is lost for good stays offline, also once its other
// replicas are back; turning unclean.leader.election.enable on for the
// topic (after creation, without a restart) makes the controller elect one
// of them, and writes resume. What only the lost member held is gone: the
// new leader's log continues from what it had.
//
// Five controllers, so that two replicas can be down (and be fenced, leaving
// the leader the only ISR member) while a quorum remains.
func TestUncleanElectionTurnedOnBringsOfflinePartitionBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 5)
	tc.waitAlive(5)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 1})
	leader := waitLeader(t, tc, "payments", 0)
	part, _ := tc.image().Partition("payments", 0)
	followers := slices.DeleteFunc(slices.Clone(part.Replicas), func(id int32) bool { return id == leader })
	const kept = 5
	for i := range kept {
		if _, err := produceOne(ctx, t, c, "payments", fmt.Sprintf("kept-%d", i), 30*time.Second); err != nil {
			t.Fatalf("produce kept-%d: %v", i, err)
		}
	}
	waitFor(t, "every replica holds the kept records", 15*time.Second, func() bool {
		for _, id := range part.Replicas {
			if leo, ok := replicaLEO(tc, id); !ok || leo < kept {
				return false
			}
		}
		return true
	})

	// The followers die: fenced, they leave the ISR; the leader alone
	// acknowledges a record (min ISR 1), which only it holds.
	for _, id := range followers {
		tc.kill(id)
	}
	waitFor(t, "the ISR is the leader alone", 15*time.Second, func() bool {
		p, ok := tc.image().Partition("payments", 0)
		return ok && slices.Equal(p.ISR, []int32{leader}) && p.Leader == leader
	})
	if _, err := produceOne(ctx, t, c, "payments", "lost", 30*time.Second); err != nil {
		t.Fatalf("produce on the leader alone: %v", err)
	}

	// The last ISR member is lost for good; the followers come back.
	tc.kill(leader)
	for _, id := range followers {
		tc.start(id)
	}
	var img *metadata.Image // the active controller's, which the others may lag
	waitFor(t, "the followers back and the old leader fenced", 30*time.Second, func() bool {
		a := tc.activeController()
		if a == 0 {
			return false
		}
		img = tc.node(a).Store().Image()
		b, _ := img.Broker(leader)
		return b.Fenced && img.Live(followers[0]) && img.Live(followers[1])
	})
	// Fencing the leader and unfencing the followers each decided the
	// partition's fate in the entry that made them: it stays offline.
	p, _ := img.Partition("payments", 0)
	if p.Leader != metadata.NoLeader || !slices.Equal(p.ISR, []int32{leader}) {
		t.Fatalf("with unclean election off: %s, want offline with ISR [%d]", p, leader)
	}

	c2 := tc.client(ctx)
	if err := c2.Admin().AlterTopicConfigs(ctx, "payments", client.ConfigChange{
		Set: map[string]string{metadata.ConfigUncleanLeaderElection: "true"}}); err != nil {
		t.Fatal(err)
	}
	newLeader := waitLeader(t, tc, "payments", 0)
	if !slices.Contains(followers, newLeader) {
		t.Fatalf("new leader %d is not one of the live replicas %v", newLeader, followers)
	}
	off, err := produceOne(ctx, t, c2, "payments", "after", 30*time.Second)
	if err != nil {
		t.Fatalf("produce after the unclean election: %v", err)
	}
	if off != kept {
		t.Fatalf("first record after the unclean election at offset %d, want %d (the new leader's log end)", off, kept)
	}
	cons := c2.NewConsumer(client.ConsumerConfig{MaxWait: 100 * time.Millisecond})
	defer cons.Close()
	cons.Assign([]client.TopicPartition{{Topic: "payments", Partition: 0}}, client.SeekBeginning)
	var got []string
	for len(got) < kept+1 {
		msgs, err := cons.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %v: %v", got, err)
		}
		for _, m := range msgs {
			if m.Offset != int64(len(got)) {
				t.Fatalf("read offset %d, want %d", m.Offset, len(got))
			}
			got = append(got, string(m.Value))
		}
	}
	want := []string{"kept-0", "kept-1", "kept-2", "kept-3", "kept-4", "after"}
	if !slices.Equal(got, want) {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// replicaLEO is node id's log end offset of payments-0.
func replicaLEO(tc *testCluster, id int32) (int64, bool) {
	n := tc.node(id)
	if n == nil {
		return 0, false
	}
	_, _, leo, ok := n.Broker().PartitionInfo("payments", 0)
	return leo, ok
}

// TestMinISRChangedAfterCreationAppliesAtOnce: with one follower of three
// down, raising min.insync.replicas to 3 makes acks=all produce fail with
// NotEnoughReplicas; lowering it to 2 makes it succeed again. No node
// restarts.
func TestMinISRChangedAfterCreationAppliesAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	leader := waitLeader(t, tc, "payments", 0)
	if _, err := produceOne(ctx, t, c, "payments", "first", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	part, _ := tc.image().Partition("payments", 0)
	down := part.Replicas[0]
	if down == leader {
		down = part.Replicas[1]
	}
	tc.kill(down)
	waitFor(t, "the ISR without the stopped follower", 15*time.Second, func() bool {
		p, ok := tc.image().Partition("payments", 0)
		return ok && len(p.ISR) == 2 && !p.InISR(down) && p.Leader > 0
	})
	alter := func(v string) {
		t.Helper()
		if err := c.Admin().AlterTopicConfigs(ctx, "payments", client.ConfigChange{
			Set: map[string]string{metadata.ConfigMinInsyncReplicas: v}}); err != nil {
			t.Fatalf("min.insync.replicas=%s: %v", v, err)
		}
	}
	alter("3")
	d, err := c.Admin().DescribeTopic(ctx, "payments")
	if err != nil || d.MinISR != 3 {
		t.Fatalf("describe after raising: min ISR %d, %v", d.MinISR, err)
	}
	// The leader's broker applies the image a moment after the image shows
	// it (its metadata watcher); no restart.
	waitFor(t, "the leader counts the partition under min ISR", 10*time.Second, func() bool {
		n := tc.node(waitLeader(t, tc, "payments", 0))
		return n != nil && n.Broker().Stats().UnderMinISR == 1
	})
	_, err = produceOne(ctx, t, c, "payments", "refused", time.Second)
	if client.ErrorCode(err) != wire.NotEnoughReplicas {
		t.Fatalf("acks=all with 2 in sync and min ISR 3: %v, want NotEnoughReplicas", err)
	}
	alter("2")
	if _, err := produceOne(ctx, t, c, "payments", "accepted", 30*time.Second); err != nil {
		t.Fatalf("acks=all with 2 in sync and min ISR 2: %v", err)
	}
}

// TestRetentionBytesChangedAfterCreationAppliedByTheNodes: retention.bytes
// set after creation is applied by every replica's next retention pass.
func TestRetentionBytesChangedAfterCreationAppliedByTheNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, func(cfg *node.Config) {
		cfg.SegmentBytes = 1 << 20
		cfg.RetentionCheckInterval = 100 * time.Millisecond
	})
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	value := []byte(strings.Repeat("p", 8<<10))
	const total = 320 // 2.5 MiB: two sealed 1 MiB segments and the active one
	for range total {
		if err := p.Produce(ctx, &client.Record{Topic: "payments", Value: value}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every replica at the HW", 30*time.Second, func() bool {
		for _, n := range tc.running() {
			if hw, _, _, ok := n.Broker().PartitionInfo("payments", 0); !ok || hw != total {
				return false
			}
		}
		return true
	})
	// Nothing is deleted without the config (the node default keeps all).
	for _, n := range tc.running() {
		if _, start, _, _ := n.Broker().PartitionInfo("payments", 0); start != 0 {
			t.Fatalf("node %d: log start %d before retention.bytes was set", n.ID(), start)
		}
	}
	if err := c.Admin().AlterTopicConfigs(ctx, "payments", client.ConfigChange{
		Set: map[string]string{metadata.ConfigRetentionBytes: "1048576"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every replica applied retention.bytes", 30*time.Second, func() bool {
		for _, n := range tc.running() {
			if _, start, _, ok := n.Broker().PartitionInfo("payments", 0); !ok || start == 0 {
				return false
			}
		}
		return true
	})
}

// TestAlterConfigsRefusals: an unknown key is refused by name on create and
// on alter; segment.bytes cannot change; the configs show in describe.
func TestAlterConfigsRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	tc.waitAlive(3)
	c := tc.client(ctx)
	_, err := c.Admin().CreateTopic(ctx, client.TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1,
		Configs: map[string]string{"foo": "bar"}})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.InvalidConfig || !strings.Contains(we.Message, "Unknown topic config name: foo") {
		t.Fatalf("create with foo=bar: %v", err)
	}
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 3,
		Configs: map[string]string{metadata.ConfigRetentionMs: "60000"}})
	err = c.Admin().AlterTopicConfigs(ctx, "t", client.ConfigChange{Set: map[string]string{"foo": "bar"}})
	if !errors.As(err, &we) || we.Code != wire.InvalidConfig || !strings.Contains(we.Message, "Unknown topic config name: foo") {
		t.Fatalf("alter with foo=bar: %v", err)
	}
	err = c.Admin().AlterTopicConfigs(ctx, "t", client.ConfigChange{Set: map[string]string{metadata.ConfigSegmentBytes: "2097152"}})
	if client.ErrorCode(err) != wire.InvalidConfig {
		t.Fatalf("alter segment.bytes: %v", err)
	}
	if err := c.Admin().AlterTopicConfigs(ctx, "t", client.ConfigChange{Set: map[string]string{metadata.ConfigRetentionBytes: "-1"},
		Delete: []string{metadata.ConfigRetentionMs}}); err != nil {
		t.Fatal(err)
	}
	d, err := c.Admin().DescribeTopic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Configs) != 1 || d.Configs[metadata.ConfigRetentionBytes] != "-1" {
		t.Fatalf("describe configs: %v", d.Configs)
	}
	if err := c.Admin().AlterTopicConfigs(ctx, "nosuch", client.ConfigChange{Set: map[string]string{metadata.ConfigRetentionMs: "1"}}); client.ErrorCode(err) != wire.UnknownTopicOrPartition {
		t.Fatalf("alter a missing topic: %v", err)
	}
}
