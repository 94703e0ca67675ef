package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"paymentlog/wire"
)

// deleteRecords sends a DeleteRecords for testKey's partition to node id.
func deleteRecords(t *testing.T, c *testCluster, id int32, off int64) wire.DeleteRecordsPartitionResponse {
	t.Helper()
	return deleteRecordsWithin(t, c, id, off, 0)
}

// deleteRecordsWithin is deleteRecords with the request's TimeoutMs: the
// leader answers once every in-sync replica deleted the records.
func deleteRecordsWithin(t *testing.T, c *testCluster, id int32, off int64, timeout time.Duration) wire.DeleteRecordsPartitionResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp wire.DeleteRecordsResponse
	err := c.client.Call(ctx, c.node(id).addr, wire.TypeDeleteRecords, wire.DeleteRecordsRequest{Topic: testKey.topic,
		Parts: []wire.DeleteRecordsPartition{{Partition: testKey.partition, Offset: off}}, TimeoutMs: int32(timeout / time.Millisecond)}, &resp)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Parts) != 1 || resp.Parts[0].Partition != testKey.partition {
		t.Fatalf("answer %+v", resp)
	}
	return resp.Parts[0]
}

// DeleteRecords moves the leader's log start to the offset asked, deleting
// the whole segments below it, and each follower's at its next fetch;
// consumers then start there. Only committed records may go; a follower
// refuses (NotLeader); -1 means the high watermark; an offset at or below
// the log start changes nothing; a compact-only topic refuses.
func TestDeleteRecords(t *testing.T) {
	c := retentionCluster(t, 3, nil)
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	produceN(t, c, 40, wire.AcksAll)
	waitInSync(t, c, testKey)
	segsBefore := len(logOf(c, 1).Segments())

	if r := deleteRecords(t, c, 2, 10); r.Err != wire.NotLeader || r.LeaderHint != 1 {
		t.Fatalf("at a follower: %+v", r)
	}
	if r := deleteRecords(t, c, 1, 41); r.Err != wire.OffsetOutOfRange || !strings.Contains(r.Message, "high watermark 40") {
		t.Fatalf("above the HW: %+v", r)
	}
	if r := deleteRecords(t, c, 1, -2); r.Err != wire.OffsetOutOfRange {
		t.Fatalf("offset -2: %+v", r)
	}
	r := deleteRecords(t, c, 1, 25)
	if r.Err != wire.None || r.LowWatermark != 25 {
		t.Fatalf("delete below 25: %+v", r)
	}
	if _, start, _ := infoOf(t, c, 1); start != 25 {
		t.Fatalf("leader's log start %d, want 25", start)
	}
	if segs := logOf(c, 1).Segments(); len(segs) >= segsBefore || segs[0] > 25 {
		t.Fatalf("segments %v (were %d): want the ones wholly below 25 gone", segs, segsBefore)
	}
	if e := listEarliest(t, c); e.Err != wire.None || e.Offset != 25 {
		t.Fatalf("earliest offset after the deletion: %+v", e)
	}
	// The followers follow at their next fetch (a record to fetch makes it
	// come at once).
	produceN(t, c, 1, wire.AcksAll)
	for _, id := range []int32{2, 3} {
		waitFor(t, "the follower's log start at 25", 10*time.Second, func() bool {
			_, start, _ := infoOf(t, c, id)
			return start == 25
		})
	}
	if r := deleteRecords(t, c, 1, 10); r.Err != wire.None || r.LowWatermark != 25 {
		t.Fatalf("below the log start: %+v", r)
	}
	if r := deleteRecords(t, c, 1, wire.DeleteRecordsLatest); r.Err != wire.None || r.LowWatermark != 41 {
		t.Fatalf("up to the HW: %+v", r)
	}
	if hw, start, leo := infoOf(t, c, 1); start != 41 || hw != 41 || leo != 41 {
		t.Fatalf("after deleting everything: HW %d, log [%d, %d)", hw, start, leo)
	}
	produceN(t, c, 1, wire.AcksAll)
	if hw, _, _ := infoOf(t, c, 1); hw != 42 {
		t.Fatalf("HW %d after the next record, want 42", hw)
	}

	c.setCleanup(testKey, CleanupCompact, CompactionConfig{})
	if r := deleteRecords(t, c, 1, 42); r.Err != wire.PolicyViolation || !strings.Contains(r.Message, "cleanup.policy=compact") {
		t.Fatalf("on a compacted topic: %+v", r)
	}
	c.setCleanup(testKey, CleanupCompactDelete, CompactionConfig{})
	if r := deleteRecords(t, c, 1, 42); r.Err != wire.None || r.LowWatermark != 42 {
		t.Fatalf("on a topic that compacts and deletes: %+v", r)
	}
}

// After a restart the deletion holds: the log start was made durable
// before the answer, with the producer state the deleted batches held.
func TestDeleteRecordsSurvivesARestart(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, memFS: true, segBytes: retentionSegBytes, maxIndexBytes: 4096})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	produceN(t, c, 30, wire.AcksAll)
	if r := deleteRecords(t, c, 1, 20); r.Err != wire.None || r.LowWatermark != 20 {
		t.Fatalf("delete below 20: %+v", r)
	}
	dir := c.node(1).dir
	fs := c.crashNode(1)
	c.startNodeFS(1, dir, fs)
	c.electNode(testKey, 1)
	waitFor(t, "the restarted leader", 10*time.Second, func() bool {
		hw, start, leo, ok := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition)
		return ok && hw == 30 && start == 20 && leo == 30
	})
}

// With a timeout, the leader answers DeleteRecords once every in-sync
// replica has moved its log start there (the low watermark, Kafka's); a
// follower in the ISR that does not fetch makes it answer Timeout with the
// low watermark reached and the replica named; once the ISR drops that
// follower, the deletion completes.
func TestDeleteRecordsWaitsForTheISR(t *testing.T) {
	c := retentionCluster(t, 3, nil)
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	produceN(t, c, 40, wire.AcksAll)
	waitInSync(t, c, testKey)
	r := deleteRecordsWithin(t, c, 1, 25, 10*time.Second)
	if r.Err != wire.None || r.LowWatermark != 25 {
		t.Fatalf("delete below 25: %+v", r)
	}
	for _, id := range []int32{2, 3} {
		if _, start, _ := infoOf(t, c, id); start < 25 {
			t.Fatalf("answered while node %d's log start was %d", id, start)
		}
	}

	c.stopNode(3) // still in the ISR: the lag time is a minute
	r = deleteRecordsWithin(t, c, 1, 30, 300*time.Millisecond)
	if r.Err != wire.Timeout || r.LowWatermark != 25 || !strings.Contains(r.Message, "in-sync replica(s) 3 (log start 25) have not deleted them yet") {
		t.Fatalf("delete below 30 with node 3 stopped: %+v", r)
	}
	if _, start, _ := infoOf(t, c, 1); start != 30 {
		t.Fatalf("leader's log start %d after the timed-out wait, want 30", start)
	}
	c.setISR(testKey, 1, 2)
	if r := deleteRecordsWithin(t, c, 1, 30, 10*time.Second); r.Err != wire.None || r.LowWatermark != 30 {
		t.Fatalf("delete below 30 once node 3 left the ISR: %+v", r)
	}
}

// While a DeleteRecords waits for the followers, their parked fetches are
// answered within startNudge rather than at the end of the long poll (here
// 30 s, longer than the request's 8 s): each learns the leader's log start,
// raises its own and reports it, and the request completes.
func TestDeleteRecordsNudgesParkedFollowers(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 3, segBytes: retentionSegBytes, maxIndexBytes: 4096,
		maxWait: 30 * time.Second, lagTime: time.Minute})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	produceN(t, c, 40, wire.AcksAll)
	waitInSync(t, c, testKey)
	r := deleteRecordsWithin(t, c, 1, 25, 8*time.Second)
	if r.Err != wire.None || r.LowWatermark != 25 {
		t.Fatalf("delete below 25 with followers parked for 30 s: %+v", r)
	}
	for _, id := range []int32{2, 3} {
		if _, start, _ := infoOf(t, c, id); start < 25 {
			t.Fatalf("node %d's log start %d", id, start)
		}
	}
	p := c.node(1).b.partition("payments", 0)
	p.mu.Lock()
	left := len(p.mu.startWaits)
	p.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d log start waits left after the answer", left)
	}
}
