package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"paymentlog/node/metadata"
	"paymentlog/raftnode"
	"paymentlog/wire"
)

// partitionsUp makes node 1 the active controller with brokers 1-3 alive
// and a topic t of two partitions (rf 3).
func partitionsUp(t *testing.T, h *harness, term uint64) {
	t.Helper()
	h.raft.setLeader(1, term)
	h.tick()
	ctx := h.ctx()
	for id := int32(1); id <= 3; id++ {
		h.c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: id, Addr: fmt.Sprintf("127.0.0.1:71%02d", id), Incarnation: 1, ControllerEligible: true,
			MetadataVersion: metadata.MetadataVersion})
		h.c.Heartbeat(ctx, wire.BrokerHeartbeatRequest{BrokerID: id, Incarnation: 1, MetadataOffset: int64(h.store.Image().Offset())})
	}
	if r := h.c.CreateTopic(ctx, wire.CreateTopicRequest{Name: "t", Partitions: 2, ReplicationFactor: 3}); r.Err != wire.None {
		t.Fatalf("create: %+v", r)
	}
}

func partitionCount(h *harness, topic string) int {
	tp, _ := h.store.Image().Topic(topic)
	return len(tp.Partitions)
}

// TestCreatePartitionsThroughTheController: the request commits
// PartitionCreated records for the new partitions only, answers with the
// topic's id and new count, and is refused (with the current count) for a
// count that does not grow, an unknown topic, or too few live brokers.
func TestCreatePartitionsThroughTheController(t *testing.T) {
	h := newHarness(t)
	partitionsUp(t, h, 1)
	ctx := h.ctx()
	tp, _ := h.store.Image().Topic("t")
	h.raft.takeCommitted()
	r := h.c.CreatePartitions(ctx, wire.CreatePartitionsRequest{Name: "t", Count: 5})
	if r.Err != wire.None || r.Count != 5 || r.TopicID != tp.ID || r.ControllerID != 1 {
		t.Fatalf("create partitions: %+v", r)
	}
	var created []string
	for _, rec := range h.raft.takeCommitted() {
		if !strings.HasPrefix(rec, "ControllerMarker") {
			created = append(created, rec)
		}
	}
	if len(created) != 3 || !strings.HasPrefix(created[0], "PartitionCreated t-2 ") || !strings.HasPrefix(created[2], "PartitionCreated t-4 ") {
		t.Fatalf("committed %q, want PartitionCreated t-2..t-4", created)
	}
	for _, tc := range []struct {
		req  wire.CreatePartitionsRequest
		code wire.ErrorCode
		msg  string
		n    int32
	}{
		{wire.CreatePartitionsRequest{Name: "t", Count: 5}, wire.InvalidPartitions, `topic "t" already has 5 partitions`, 5},
		{wire.CreatePartitionsRequest{Name: "t", Count: 4}, wire.InvalidPartitions, "can only grow", 5},
		{wire.CreatePartitionsRequest{Name: "t", Count: metadata.MaxPartitions + 1}, wire.InvalidPartitions, "must be 1-10000", 5},
		{wire.CreatePartitionsRequest{Name: "nope", Count: 3}, wire.UnknownTopicOrPartition, `topic "nope" does not exist`, 0},
	} {
		r := h.c.CreatePartitions(ctx, tc.req)
		if r.Err != tc.code || !strings.Contains(r.Message, tc.msg) || r.Count != tc.n {
			t.Errorf("%+v: got %+v, want %v %q count %d", tc.req, r, tc.code, tc.msg, tc.n)
		}
	}
	// One broker fenced: an rf-3 topic cannot grow over two.
	h.c.submit(ctx, "fence", func(m *metadata.Image) ([]metadata.Record, error) {
		return metadata.DecideFence(m, 3, 1), nil
	})
	r = h.c.CreatePartitions(ctx, wire.CreatePartitionsRequest{Name: "t", Count: 6})
	if r.Err != wire.InvalidReplicationFactor || !strings.Contains(r.Message, "exceeds the 2 available brokers") {
		t.Fatalf("grow with 2 of 3 brokers: %+v", r)
	}
	if got := partitionCount(h, "t"); got != 5 {
		t.Fatalf("%d partitions, want 5", got)
	}
}

// TestCreatePartitionsRetriedAcrossControllerFailover: controller 2 decided
// and committed the new partitions, then died before answering; the client
// retries at controller 1, which took over. Controller 1 decides on the
// image with controller 2's entry (applied before its own marker), so the
// retry is refused with the count in place and nothing is created twice;
// controller 2's entry proposed again later (a paused old controller) is
// rejected whole on apply.
func TestCreatePartitionsRetriedAcrossControllerFailover(t *testing.T) {
	h := newHarness(t)
	partitionsUp(t, h, 1)
	ctx := h.ctx()
	tp, _ := h.store.Image().Topic("t")

	// Controller 2 (term 2) decides on the same image and commits; this
	// node applies that entry only when it next commits (as leader).
	recs, err := metadata.DecideCreatePartitions(h.store.Image(), metadata.CreatePartitionsEvent{Name: "t", Count: 5, Seed: 77})
	if err != nil {
		t.Fatal(err)
	}
	old, err := metadata.EncodeEntry(append([]metadata.Record{metadata.ControllerMarker{ControllerID: 2, Term: 2}}, recs...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.raft.setLeader(2, 2)
	h.tick()
	h.raft.commitForeignLate(old)
	h.raft.setLeader(1, 3)
	h.tick()
	if !h.c.Active() {
		t.Fatal("node 1 did not take over")
	}
	before := h.store.Image().Offset()
	r := h.c.CreatePartitions(ctx, wire.CreatePartitionsRequest{Name: "t", Count: 5})
	if r.Err != wire.InvalidPartitions || r.Count != 5 || r.TopicID != tp.ID {
		t.Fatalf("retried request: %+v, want InvalidPartitions with count 5", r)
	}
	if got := partitionCount(h, "t"); got != 5 || h.store.Image().Offset() != before {
		t.Fatalf("%d partitions at offset %d after the retry, want 5 at %d", got, h.store.Image().Offset(), before)
	}
	want := h.store.Image().Hash()
	// The old controller's entry again: rejected, the image unchanged.
	h.raft.commitForeign(old)
	if got := partitionCount(h, "t"); got != 5 || h.store.Image().Hash() != want {
		t.Fatalf("a replayed entry changed the image: %d partitions", got)
	}
	// And the topic still grows afterwards, from partition 5 on.
	if r := h.c.CreatePartitions(ctx, wire.CreatePartitionsRequest{Name: "t", Count: 6}); r.Err != wire.None || r.Count != 6 {
		t.Fatalf("grow to 6: %+v", r)
	}
	if p, ok := h.store.Image().Partition("t", 5); !ok || p.TopicID != tp.ID || p.Leader <= 0 {
		t.Fatalf("partition 5: %v %t", p, ok)
	}
}

// TestCreatePartitionsProposalLostThenRetried: the first proposal is
// dropped (raft lost it: the client sees NotController, retriable), the
// retry creates the partitions, and a second retry is refused: the
// partitions exist once.
func TestCreatePartitionsProposalLostThenRetried(t *testing.T) {
	h := newHarness(t)
	partitionsUp(t, h, 1)
	ctx := h.ctx()
	h.raft.setProposeErr(raftnode.ErrProposalDropped)
	if r := h.c.CreatePartitions(ctx, wire.CreatePartitionsRequest{Name: "t", Count: 4}); r.Err != wire.NotController || strings.Contains(r.Message, LostAfterProposing) {
		t.Fatalf("dropped proposal: %+v", r)
	}
	// A proposal whose wait timed out may be in raft's log: the answer
	// says so (the audit trail records it).
	h.raft.setProposeErr(nil)
	h.tick() // re-activates with a fresh marker
	h.raft.setProposeErr(context.DeadlineExceeded)
	if r := h.c.CreatePartitions(ctx, wire.CreatePartitionsRequest{Name: "t", Count: 4}); r.Err != wire.NotController || !strings.Contains(r.Message, LostAfterProposing) {
		t.Fatalf("timed-out proposal: %+v", r)
	}
	h.raft.setProposeErr(nil)
	h.tick() // re-activates with a fresh marker
	if r := h.c.CreatePartitions(ctx, wire.CreatePartitionsRequest{Name: "t", Count: 4}); r.Err != wire.None || r.Count != 4 {
		t.Fatalf("retry: %+v", r)
	}
	if r := h.c.CreatePartitions(ctx, wire.CreatePartitionsRequest{Name: "t", Count: 4}); r.Err != wire.InvalidPartitions || r.Count != 4 {
		t.Fatalf("second retry: %+v", r)
	}
	if got := partitionCount(h, "t"); got != 4 {
		t.Fatalf("%d partitions, want 4", got)
	}
}

// TestReassignThroughTheController: a reassignment commits one
// PartitionChange and answers with the partition's state after it; a retry
// commits nothing and succeeds; a refusal answers with the current state.
func TestReassignThroughTheController(t *testing.T) {
	h := newHarness(t)
	partitionsUp(t, h, 1)
	ctx := h.ctx()
	h.c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: 4, Addr: "127.0.0.1:7104", Incarnation: 1})
	h.c.Heartbeat(ctx, wire.BrokerHeartbeatRequest{BrokerID: 4, Incarnation: 1, MetadataOffset: int64(h.store.Image().Offset())})
	p, _ := h.store.Image().Partition("t", 0)
	target := []int32{4, p.Replicas[1], p.Replicas[2]}
	h.raft.takeCommitted()
	r := h.c.ReassignPartition(ctx, wire.ReassignPartitionRequest{Topic: "t", Partition: 0, Replicas: target})
	if r.Err != wire.None || r.ControllerID != 1 || !slices.Equal(r.Partition.Replicas, append(slices.Clone(target), p.Replicas[0])) ||
		!slices.Equal(r.Partition.AddingReplicas, []int32{4}) || !slices.Equal(r.Partition.RemovingReplicas, p.Replicas[:1]) {
		t.Fatalf("reassign: %+v", r)
	}
	changes := func() (out []string) {
		for _, rec := range h.raft.takeCommitted() {
			if !strings.HasPrefix(rec, "ControllerMarker") {
				out = append(out, rec)
			}
		}
		return out
	}
	if got := changes(); len(got) != 1 || !strings.HasPrefix(got[0], "PartitionChange t-0 ") {
		t.Fatalf("committed %q, want one PartitionChange", got)
	}
	if r := h.c.ReassignPartition(ctx, wire.ReassignPartitionRequest{Topic: "t", Partition: 0, Replicas: target}); r.Err != wire.None {
		t.Fatalf("retry: %+v", r)
	}
	if got := changes(); len(got) != 0 {
		t.Fatalf("a retry committed %q", got)
	}
	r = h.c.ReassignPartition(ctx, wire.ReassignPartitionRequest{Topic: "t", Partition: 0, Replicas: []int32{4, 4, 1}})
	if r.Err != wire.InvalidRequest || !strings.Contains(r.Message, "broker 4 listed twice") || len(r.Partition.AddingReplicas) != 1 {
		t.Fatalf("refusal: %+v", r)
	}
	// The original replicas come back in the target's order where they
	// are in it (as in Kafka), then the removed ones.
	if r := h.c.ReassignPartition(ctx, wire.ReassignPartitionRequest{Topic: "t", Partition: 0, Cancel: true}); r.Err != wire.None ||
		!slices.Equal(r.Partition.Replicas, append(slices.Clone(p.Replicas[1:]), p.Replicas[0])) || len(r.Partition.AddingReplicas) != 0 {
		t.Fatalf("cancel: %+v (replicas before %v)", r, p.Replicas)
	}
}

// TestCreateTopicAndPartitionsAnswerTheOffset: both answer the offset of the
// image that holds the new partitions (the client waits for every node's
// broker to reach it), and 0 on a refusal.
func TestCreateTopicAndPartitionsAnswerTheOffset(t *testing.T) {
	h := newHarness(t)
	partitionsUp(t, h, 1)
	ctx := h.ctx()
	before := h.store.Image().Offset()
	ct := h.c.CreateTopic(ctx, wire.CreateTopicRequest{Name: "u", Partitions: 1, ReplicationFactor: 3})
	if now := h.store.Image().Offset(); ct.Err != wire.None || now <= before || ct.MetadataOffset != int64(now) {
		t.Fatalf("create topic: %+v; image offset %d before, %d after", ct, before, now)
	}
	if r := h.c.CreateTopic(ctx, wire.CreateTopicRequest{Name: "u", Partitions: 1, ReplicationFactor: 3}); r.Err != wire.TopicAlreadyExists || r.MetadataOffset != 0 {
		t.Fatalf("create topic again: %+v", r)
	}
	before = h.store.Image().Offset()
	cp := h.c.CreatePartitions(ctx, wire.CreatePartitionsRequest{Name: "t", Count: 3})
	if now := h.store.Image().Offset(); cp.Err != wire.None || now <= before || cp.MetadataOffset != int64(now) {
		t.Fatalf("create partitions: %+v; image offset %d before, %d after", cp, before, now)
	}
	if r := h.c.CreatePartitions(ctx, wire.CreatePartitionsRequest{Name: "t", Count: 3}); r.Err != wire.InvalidPartitions || r.MetadataOffset != 0 {
		t.Fatalf("create partitions again: %+v", r)
	}
}
