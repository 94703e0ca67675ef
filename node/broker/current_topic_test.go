package broker

import (
	"context"
	"testing"
	"time"

	"paymentlog/wire"
)

// TestClientsRefusedByAReplicaOfAnotherTopic: a leader whose metadata names
// a re-created topic (a new id) or none (deleted) before its replica of the
// old topic is stopped refuses produce, fetch, ListOffsets and DeleteRecords on that
// replica with UnknownTopicOrPartition (DescribeProducers, DescribeReplica and
// BatchTimestampAt as for a partition not here too), and the old log is left as it was;
// once the new topic's replica is open, produce lands at its offset 0.
func TestClientsRefusedByAReplicaOfAnotherTopic(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, currentTopicIDs: true})
	c.createPartition(testKey.topic, testKey.partition, []int32{1}, 1, 1)
	old := []string{"old-0", "old-1", "old-2"}
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, old)); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	leader := c.node(1)
	oldP := leader.b.partition(testKey.topic, testKey.partition)

	// Re-created: the metadata has the new id, the broker not yet.
	st := c.recreate(testKey, "id-recreated")
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"lost"})); r.Err != wire.UnknownTopicOrPartition {
		t.Fatalf("produce to the old topic's replica after its re-creation: %+v; want UnknownTopicOrPartition", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := c.fetch(ctx, testKey, 0, 0); err != nil || r.Err != wire.UnknownTopicOrPartition {
		t.Fatalf("fetch from the old topic's replica after its re-creation: %+v, %v; want UnknownTopicOrPartition", r, err)
	}
	if r := listOffset(t, c, leader, wire.Latest); r.Err != wire.UnknownTopicOrPartition {
		t.Fatalf("ListOffsets on the old topic's replica after its re-creation: %+v; want UnknownTopicOrPartition", r)
	}
	if ts, ok := leader.b.BatchTimestampAt(testKey.topic, testKey.partition, 0); ok {
		t.Fatalf("BatchTimestampAt on the old topic's replica after its re-creation: %d; want none", ts)
	}
	if hw, _, _, ok := leader.b.PartitionInfo(testKey.topic, testKey.partition); ok {
		t.Fatalf("PartitionInfo of the old topic's replica after its re-creation: HW %d; want none (a Metadata answer would give it as the new topic's)", hw)
	}
	one := describeProducersOn(t, c, leader.id, wire.DescribeProducersRequest{Topic: testKey.topic, Partitions: []int32{testKey.partition}})
	if len(one.Parts) != 1 || one.Parts[0].Err != wire.UnknownTopicOrPartition {
		t.Fatalf("DescribeProducers of the old topic's replica after its re-creation: %+v; want UnknownTopicOrPartition", one)
	}
	if held := describeProducersOn(t, c, leader.id, wire.DescribeProducersRequest{Topic: testKey.topic}); held.Err != wire.None || len(held.Parts) != 0 {
		t.Fatalf("DescribeProducers of every partition held after the topic's re-creation: %+v; want none", held)
	}
	var rep wire.DescribeReplicaResponse
	if err := c.client.Call(ctx, leader.addr, wire.TypeDescribeReplica, wire.DescribeReplicaRequest{Topic: testKey.topic, Partition: testKey.partition}, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Err != wire.UnknownTopicOrPartition {
		t.Fatalf("DescribeReplica of the old topic's replica after its re-creation: %+v; want UnknownTopicOrPartition", rep)
	}

	var dr wire.DeleteRecordsResponse
	if err := c.client.Call(ctx, leader.addr, wire.TypeDeleteRecords, wire.DeleteRecordsRequest{Topic: testKey.topic,
		Parts: []wire.DeleteRecordsPartition{{Partition: testKey.partition, Offset: 2}}}, &dr); err != nil {
		t.Fatal(err)
	}
	if len(dr.Parts) != 1 || dr.Parts[0].Err != wire.UnknownTopicOrPartition {
		t.Fatalf("DeleteRecords on the old topic's replica after its re-creation: %+v; want UnknownTopicOrPartition", dr.Parts)
	}
	if start := oldP.log.LogStartOffset(); start != 0 {
		t.Fatalf("the old topic's log starts at %d after a refused DeleteRecords; want 0", start)
	}

	// Deleted: the metadata has no such partition.
	c.mu.Lock()
	delete(c.parts, testKey)
	c.mu.Unlock()
	var resp wire.ProduceResponse
	if err := c.client.Call(ctx, leader.addr, wire.TypeProduce, wire.ProduceRequest{Acks: wire.AcksAll, TimeoutMs: 5000, Topic: testKey.topic,
		Parts: []wire.ProducePartition{{Partition: testKey.partition, LeaderEpoch: -1, Batch: buildBatch(-1, -1, []string{"lost"})}}}, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Parts) != 1 || resp.Parts[0].Err != wire.UnknownTopicOrPartition {
		t.Fatalf("produce to a deleted topic's replica: %+v; want UnknownTopicOrPartition", resp.Parts)
	}
	if leo := oldP.log.LogEndOffset(); leo != int64(len(old)) {
		t.Fatalf("the old topic's log ends at %d after refused produce; want %d", leo, len(old))
	}

	c.mu.Lock()
	c.parts[testKey] = &st
	c.mu.Unlock()
	c.push(testKey)
	r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"new-0"}))
	if r.Err != wire.None || r.BaseOffset != 0 {
		t.Fatalf("produce to the re-created topic: %+v; want offset 0", r)
	}
}
