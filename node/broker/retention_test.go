package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// Retention tests: small segments (retentionSegBytes, about seven 1 KB
// batches each), retention limits pushed as topic configs, passes run with
// Broker.ApplyRetention (the loop's interval is the default 5 minutes, so it
// never runs on its own here) and time from an injected clock.

const retentionSegBytes = 8 << 10

var bigValue = strings.Repeat("v", 1000)

func retentionCluster(t *testing.T, nodes int, now func() time.Time) *testCluster {
	return newTestCluster(t, clusterOptions{nodes: nodes, segBytes: retentionSegBytes, maxIndexBytes: 4096,
		maxWait: 50 * time.Millisecond, lagTime: time.Minute, now: now})
}

// setRetention sets the partition's retention.ms and retention.bytes (nil:
// the broker's default) and pushes it, as a topic config would.
func (c *testCluster) setRetention(key tp, ms, bytes *int64) {
	c.mu.Lock()
	st := c.parts[key]
	st.RetentionMs, st.RetentionBytes = ms, bytes
	c.mu.Unlock()
	c.push(key)
}

func ptr(v int64) *int64 { return &v }

// produceN appends n non-idempotent batches of one 1 KB record with acks.
func produceN(t *testing.T, c *testCluster, n int, acks int8) {
	t.Helper()
	for range n {
		if r := mustProduce(t, c, acks, buildBatch(0, 0, []string{bigValue})); r.Err != wire.None {
			t.Fatalf("produce: %v", r.Err)
		}
	}
}

// logOf is node id's log of testKey.
func logOf(c *testCluster, id int32) *segment.Log {
	return c.node(id).b.partition(testKey.topic, testKey.partition).log
}

// infoOf is node id's HW, log start and log end of testKey.
func infoOf(t *testing.T, c *testCluster, id int32) (hw, start, leo int64) {
	t.Helper()
	hw, start, leo, ok := c.node(id).b.PartitionInfo(testKey.topic, testKey.partition)
	if !ok {
		t.Fatalf("node %d has no replica", id)
	}
	return hw, start, leo
}

func listEarliest(t *testing.T, c *testCluster) wire.ListOffsetsPartitionResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp wire.ListOffsetsResponse
	err := c.client.Call(ctx, c.node(c.state(testKey).Leader).addr, wire.TypeListOffsets, wire.ListOffsetsRequest{
		Topic: testKey.topic, Parts: []wire.ListOffsetsPartition{{Partition: testKey.partition, Timestamp: wire.Earliest}}}, &resp)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Parts[0]
}

// TestRetentionBytesKeepsNewestSegmentsOnEveryReplica: with retention.bytes
// set, a pass on the leader deletes its oldest sealed segments (keeping at
// least the limit), the followers raise their log start to the leader's,
// and consumers see the new start: ListOffsets earliest answers it and a
// fetch below it is OffsetOutOfRange naming it. A pass on each follower
// then keeps it within the limit too.
func TestRetentionBytesKeepsNewestSegmentsOnEveryReplica(t *testing.T) {
	c := retentionCluster(t, 3, nil)
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	produceN(t, c, 60, wire.AcksAll)
	waitInSync(t, c, testKey)
	if n := c.node(1).b.ApplyRetention(context.Background()); n != 0 {
		t.Fatalf("a pass without retention limits deleted %d segments", n)
	}
	const limit = 3 * retentionSegBytes
	c.setRetention(testKey, nil, ptr(limit))
	if n := c.node(1).b.ApplyRetention(context.Background()); n == 0 {
		t.Fatal("the leader's pass deleted nothing")
	}
	_, start, leo := infoOf(t, c, 1)
	lg := logOf(c, 1)
	if start == 0 || start != lg.LogStartOffset() || leo != 60 || !slices.Contains(lg.Segments(), start) {
		t.Fatalf("leader: log start %d (log %d), end %d, segments %v", start, lg.LogStartOffset(), leo, lg.Segments())
	}
	if size := lg.Size(); size < limit || size >= limit+retentionSegBytes {
		t.Fatalf("leader keeps %d bytes; want at least %d and less than a segment more", size, limit)
	}
	for _, id := range []int32{2, 3} {
		waitFor(t, "follower log start raised to the leader's", 10*time.Second, func() bool {
			_, s, _ := infoOf(t, c, id)
			return s == start && logOf(c, id).LogStartOffset() == start
		})
	}
	// A follower's log start moves in memory first; its segments are
	// deleted (and counted) right after, beside its appends.
	for _, id := range []int32{1, 2, 3} {
		waitFor(t, fmt.Sprintf("node %d counts its deleted segments", id), 10*time.Second, func() bool {
			return c.node(id).b.Stats().RetentionDeletedSegments > 0
		})
		if st := c.node(id).b.Stats(); st.RetentionFailures != 0 {
			t.Fatalf("node %d stats: %d segments deleted, %d failures", id, st.RetentionDeletedSegments, st.RetentionFailures)
		}
	}
	if e := listEarliest(t, c); e.Err != wire.None || e.Offset != start {
		t.Fatalf("ListOffsets earliest: %v %d, want %d", e.Err, e.Offset, start)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fr, err := c.fetch(ctx, testKey, 0, 0)
	if err != nil || fr.Err != wire.OffsetOutOfRange || fr.LogStart != start {
		t.Fatalf("fetch at 0: %v %v, log start %d; want OffsetOutOfRange at %d", err, fr.Err, fr.LogStart, start)
	}
	if fr, err = c.fetch(ctx, testKey, start, 0); err != nil || fr.Err != wire.None || len(fr.Records) == 0 {
		t.Fatalf("fetch at the log start: %v %v, %d bytes", err, fr.Err, len(fr.Records))
	}
	for _, id := range []int32{2, 3} {
		c.node(id).b.ApplyRetention(context.Background())
		if size := logOf(c, id).Size(); size >= limit+retentionSegBytes {
			t.Fatalf("node %d keeps %d bytes after its pass (limit %d)", id, size, limit)
		}
	}
	produceN(t, c, 5, wire.AcksAll)
	waitInSync(t, c, testKey)
	for _, id := range []int32{1, 2, 3} {
		if got := readAll(t, logOf(c, id), 65); len(got) != int(65-logOf(c, id).LogStartOffset()) {
			t.Fatalf("node %d holds %d records from %d", id, len(got), logOf(c, id).LogStartOffset())
		}
	}
}

// TestRetentionMsUsesLargestTimestamp: a segment goes once its newest
// record is older than retention.ms by the broker's clock, the active
// segment too once nothing in it is younger, and a segment with a record
// younger than that stays.
func TestRetentionMsUsesLargestTimestamp(t *testing.T) {
	base := time.UnixMilli(1_800_000_000_000)
	var clock atomic.Int64
	clock.Store(base.UnixMilli())
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	c := retentionCluster(t, 1, now)
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	for i := range 30 { // offset i has timestamp base + i minutes
		bd := segment.NewBuilder(segment.BuilderOptions{})
		bd.Add(base.Add(time.Duration(i)*time.Minute).UnixMilli(), nil, []byte(bigValue), nil)
		if r := mustProduce(t, c, wire.AcksAll, slices.Clone([]byte(bd.Build()))); r.Err != wire.None {
			t.Fatal(r.Err)
		}
	}
	c.setRetention(testKey, ptr((10 * time.Minute).Milliseconds()), nil)
	b := c.node(1).b
	clock.Store(base.Add(15 * time.Minute).UnixMilli()) // everything is younger than 10 minutes... but offsets 0-4
	if n := b.ApplyRetention(context.Background()); n != 0 {
		t.Fatalf("deleted %d segments whose newest record is younger than retention.ms", n)
	}
	clock.Store(base.Add(25 * time.Minute).UnixMilli()) // records 0-14 are older than 10 minutes
	if n := b.ApplyRetention(context.Background()); n == 0 {
		t.Fatal("deleted nothing")
	}
	_, start, _ := infoOf(t, c, 1)
	// The segment before the log start ended with a record older than the
	// cut-off (offset <= 14), the first kept one holds a younger one.
	if start == 0 || start > 15 {
		t.Fatalf("log start %d: want some but only segments of records 0-14 deleted", start)
	}
	segs := logOf(c, 1).Segments()
	if len(segs) < 2 || segs[1] <= 15 {
		t.Fatalf("segments %v: the first kept segment holds only records older than the cut-off", segs)
	}
	// A day later the active segment is past retention.ms too: as in
	// Kafka it is sealed and deleted, and the partition, no longer
	// written, holds nothing; its offsets go on from where they were.
	clock.Store(base.Add(24 * time.Hour).UnixMilli())
	b.ApplyRetention(context.Background())
	segs = logOf(c, 1).Segments()
	if _, start, leo := infoOf(t, c, 1); len(segs) != 1 || start != 30 || leo != 30 || segs[0] != 30 {
		t.Fatalf("a day later: segments %v, log [%d, %d); want one empty segment at 30", segs, start, leo)
	}
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(0, 0, []string{"next"})); r.Err != wire.None || r.BaseOffset != 30 {
		t.Fatalf("next record: %+v, want offset 30", r)
	}
}

// removeFromISR commits an ISR without id (as the controller does for a
// fenced broker) and pushes it.
func (c *testCluster) removeFromISR(key tp, id int32) {
	c.mu.Lock()
	st := c.parts[key]
	st.ISR = slices.DeleteFunc(slices.Clone(st.ISR), func(x int32) bool { return x == id })
	st.PartitionEpoch++
	c.mu.Unlock()
	c.push(key)
}

// TestRetentionNeverPastHW: with an ISR member down, the leader's HW stays
// where that member left it while acks=1 records pile up above. Retention
// of 0 bytes then deletes only segments wholly below the HW, on the leader
// and on the caught-up follower (whose HW is the leader's); once the member
// is back and the HW moves, the next pass deletes up to it.
func TestRetentionNeverPastHW(t *testing.T) {
	c := retentionCluster(t, 3, nil)
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	produceN(t, c, 10, wire.AcksAll)
	waitInSync(t, c, testKey)
	dir3 := c.node(3).dir
	c.stopNode(3)
	produceN(t, c, 40, 1)
	waitFor(t, "node 2 has the leader's log end", 10*time.Second, func() bool {
		_, _, leo := infoOf(t, c, 2)
		return leo == 50
	})
	c.setRetention(testKey, ptr(0), ptr(0))
	for _, id := range []int32{1, 2} {
		c.node(id).b.ApplyRetention(context.Background())
		hw, start, leo := infoOf(t, c, id)
		lg := logOf(c, id)
		if hw != 10 || leo != 50 {
			t.Fatalf("node %d: HW %d, log end %d; want 10, 50", id, hw, leo)
		}
		if start > hw {
			t.Fatalf("node %d: retention moved the log start to %d, past the HW %d", id, start, hw)
		}
		// The first segment kept holds the HW: every one after it was kept.
		segs := lg.Segments()
		if len(segs) < 2 || segs[0] > hw || segs[1] <= hw {
			t.Fatalf("node %d: segments %v with the HW at %d", id, segs, hw)
		}
	}
	c.startNode(3, dir3)
	c.push(testKey)
	waitInSync(t, c, testKey)
	c.node(1).b.ApplyRetention(context.Background())
	_, start, leo := infoOf(t, c, 1)
	if segs := logOf(c, 1).Segments(); start <= 10 || len(segs) != 1 || segs[0] != start || leo != 50 {
		t.Fatalf("after the HW moved: log [%d, %d), segments %v; want only the active segment", start, leo, segs)
	}
}

// TestFollowerBelowLeaderLogStartRestartsThere: a follower that was away
// while retention deleted everything it has not got restarts at the
// leader's log start (its fetch is OffsetOutOfRange), catches up and agrees
// with the leader on where the partition starts.
func TestFollowerBelowLeaderLogStartRestartsThere(t *testing.T) {
	c := retentionCluster(t, 3, nil)
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	produceN(t, c, 5, wire.AcksAll)
	waitInSync(t, c, testKey)
	dir3 := c.node(3).dir
	c.stopNode(3)
	c.removeFromISR(testKey, 3)
	produceN(t, c, 40, wire.AcksAll)
	c.setRetention(testKey, nil, ptr(retentionSegBytes))
	c.node(1).b.ApplyRetention(context.Background())
	_, start, _ := infoOf(t, c, 1)
	if start <= 5 {
		t.Fatalf("leader log start %d: want past the stopped follower's end (5)", start)
	}
	c.startNode(3, dir3)
	c.push(testKey)
	waitInSync(t, c, testKey)
	_, s3, leo3 := infoOf(t, c, 3)
	if s3 != start || logOf(c, 3).LogStartOffset() != start || leo3 != 45 {
		t.Fatalf("node 3: log [%d, %d), want [%d, 45)", s3, leo3, start)
	}
	if got, want := logBytes(t, logOf(c, 3), 45), logBytes(t, logOf(c, 1), 45); !slices.Equal(got, want) {
		t.Fatal("node 3's log differs from the leader's")
	}
}

// TestIdempotentRetryAfterRetentionDeletedItsBatches: producer 9's batches
// are in segments that retention deletes on both replicas. A retry of its
// last batch is still a duplicate answered with the original offsets, and
// its next batch is accepted in sequence: on the leader (producer state in
// memory), and after the follower crashes (keeping only synced bytes),
// restarts from the producer snapshot written before the deletion, and
// leads.
func TestIdempotentRetryAfterRetentionDeletedItsBatches(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, memFS: true, segBytes: retentionSegBytes, maxIndexBytes: 4096,
		maxWait: 50 * time.Millisecond, lagTime: time.Minute})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	const pid = 9
	var batches [][]byte
	for i := range 3 {
		b := buildBatch(pid, int32(i), []string{bigValue})
		batches = append(batches, b)
		wantOffset(t, "producer 9", mustProduce(t, c, wire.AcksAll, b), int64(i))
	}
	produceN(t, c, 40, wire.AcksAll)
	waitInSync(t, c, testKey)
	c.setRetention(testKey, nil, ptr(2*retentionSegBytes))
	for _, id := range []int32{1, 2} {
		c.node(id).b.ApplyRetention(context.Background())
		if _, start, _ := infoOf(t, c, id); start <= 3 {
			t.Fatalf("node %d: log start %d, want producer 9's batches (0-2) deleted", id, start)
		}
	}
	wantOffset(t, "retry on the leader after retention", mustProduce(t, c, wire.AcksAll, batches[2]), 2)
	waitInSync(t, c, testKey)
	_, start2, _ := infoOf(t, c, 2)
	dir2 := c.node(2).dir
	fs2 := c.crashNode(2)
	n2 := c.startNodeFS(2, dir2, fs2)
	c.push(testKey)
	waitInSync(t, c, testKey)
	if _, s, _ := infoOf(t, c, 2); s != start2 {
		t.Fatalf("restarted node 2: log start %d, was %d", s, start2)
	}
	if got := producerStateOf(n2); !strings.Contains(got, "pid 9 ") {
		t.Fatalf("restarted node 2 forgot producer 9: %s", got)
	}
	wantSameProducerState(t, c)
	c.electNode(testKey, 2)
	wantOffset(t, "retry on the restarted node", mustProduce(t, c, wire.AcksAll, batches[2]), 2)
	wantOffset(t, "producer 9's next batch", mustProduce(t, c, wire.AcksAll, buildBatch(pid, 3, []string{"n"})), 43)
	wantSameProducerState(t, c)
}

// TestRetentionSurvivesACrash: after retention on both replicas the leader
// crashes (only synced bytes survive) and restarts: its log start, log end
// and records are what they were, its HW comes back from the checkpoint no
// lower than the log start, the time index still answers (a timestamp older
// than every record kept finds the log start), and it leads again.
func TestRetentionSurvivesACrash(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, memFS: true, segBytes: retentionSegBytes, maxIndexBytes: 4096,
		maxWait: 50 * time.Millisecond, lagTime: time.Minute})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	t0 := time.UnixMilli(1_800_000_000_000)
	for i := range 40 {
		if r := mustProduce(t, c, wire.AcksAll, buildBatchAt(0, 0, t0.Add(time.Duration(i)*time.Minute), bigValue)); r.Err != wire.None {
			t.Fatal(r.Err)
		}
	}
	waitInSync(t, c, testKey)
	c.setRetention(testKey, nil, ptr(2*retentionSegBytes))
	for _, id := range []int32{1, 2} {
		c.node(id).b.ApplyRetention(context.Background())
	}
	hw, start, leo := infoOf(t, c, 1)
	if start == 0 {
		t.Fatal("retention deleted nothing")
	}
	want := readAll(t, logOf(c, 1), leo)
	c.electNode(testKey, 2)
	dir1 := c.node(1).dir
	fs1 := c.crashNode(1)
	c.startNodeFS(1, dir1, fs1)
	c.push(testKey)
	h1, s1, l1 := infoOf(t, c, 1)
	if s1 != start || l1 != leo || h1 < s1 || h1 > hw {
		t.Fatalf("after the crash: HW %d, log [%d, %d); want log [%d, %d), HW in [%d, %d]", h1, s1, l1, start, leo, s1, hw)
	}
	if got := readAll(t, logOf(c, 1), leo); len(got) != len(want) || got[start] != want[start] || got[leo-1] != want[leo-1] {
		t.Fatalf("after the crash: %d records from %d, want %d", len(got), s1, len(want))
	}
	waitInSync(t, c, testKey)
	c.electNode(testKey, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp wire.ListOffsetsResponse
	if err := c.client.Call(ctx, c.node(1).addr, wire.TypeListOffsets, wire.ListOffsetsRequest{Topic: testKey.topic,
		Parts: []wire.ListOffsetsPartition{{Partition: 0, Timestamp: t0.UnixMilli()}}}, &resp); err != nil {
		t.Fatal(err)
	}
	if r := resp.Parts[0]; r.Err != wire.None || r.Offset != start {
		t.Fatalf("offset for a timestamp older than every record kept: %v %d, want %d", r.Err, r.Offset, start)
	}
	if e := listEarliest(t, c); e.Offset != start {
		t.Fatalf("earliest %d, want %d", e.Offset, start)
	}
}

// TestRetentionKeepsSegmentsWhenTheProducerSnapshotFails: the producer
// snapshot is the only record, across a restart, of the producers whose
// batches retention deletes; when it cannot be written the pass keeps the
// segments (and counts a failure) instead, and the next pass deletes them.
func TestRetentionKeepsSegmentsWhenTheProducerSnapshotFails(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, memFS: true, segBytes: retentionSegBytes, maxIndexBytes: 4096,
		maxWait: 50 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	wantOffset(t, "producer 9", mustProduce(t, c, wire.AcksAll, buildBatch(9, 0, []string{bigValue})), 0)
	produceN(t, c, 30, wire.AcksAll)
	c.setRetention(testKey, nil, ptr(retentionSegBytes))
	n := c.node(1)
	var failing atomic.Bool
	failing.Store(true)
	n.fs.SetFault(func(op segment.FaultOp, path string) error {
		if failing.Load() && op == segment.OpWrite && strings.Contains(path, ProducerSnapshotFile) {
			return errors.New("injected write error")
		}
		return nil
	})
	if d := n.b.ApplyRetention(context.Background()); d != 0 {
		t.Fatalf("deleted %d segments without a producer snapshot", d)
	}
	if _, start, _ := infoOf(t, c, 1); start != 0 || n.b.Stats().RetentionFailures != 1 {
		t.Fatalf("log start %d, %d failures; want 0, 1", start, n.b.Stats().RetentionFailures)
	}
	failing.Store(false)
	if d := n.b.ApplyRetention(context.Background()); d == 0 {
		t.Fatal("the next pass deleted nothing")
	}
	wantOffset(t, "retry of producer 9", mustProduce(t, c, wire.AcksAll, buildBatch(9, 0, []string{bigValue})), 0)
}

// TestRetentionOnAFullDiskReleasesTheReserve: on a disk with no room left
// (a MemFS at its capacity) the producer snapshot and the log-start
// checkpoint that precede a deletion cannot be written; the broker then
// releases the disk reserve (Config.ReleaseDiskReserve) and deletes.
func TestRetentionOnAFullDiskReleasesTheReserve(t *testing.T) {
	var (
		reserveFS *segment.MemFS
		reserve   string
		released  atomic.Int32
	)
	c := newTestCluster(t, clusterOptions{nodes: 1, memFS: true, segBytes: retentionSegBytes, maxIndexBytes: 4096,
		maxWait: 50 * time.Millisecond, releaseDiskReserve: func() bool {
			if reserveFS.Remove(reserve) != nil {
				return false
			}
			released.Add(1)
			return true
		}})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	wantOffset(t, "producer 9", mustProduce(t, c, wire.AcksAll, buildBatch(9, 0, []string{bigValue})), 0)
	produceN(t, c, 30, wire.AcksAll)
	n := c.node(1)
	reserveFS, reserve = n.fs, filepath.Join(n.dir, ".disk-reserve")
	f, err := n.fs.OpenFile(reserve, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Allocate(0, 64<<10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	n.fs.SetCapacity(n.fs.Used()) // not one byte free
	c.setRetention(testKey, nil, ptr(retentionSegBytes))
	d := n.b.ApplyRetention(context.Background())
	if d == 0 || released.Load() != 1 {
		t.Fatalf("deleted %d segments on a full disk, released the reserve %d times; want some, once (failures: %d)",
			d, released.Load(), n.b.Stats().RetentionFailures)
	}
	if _, start, _ := infoOf(t, c, 1); start == 0 {
		t.Fatal("log start still 0")
	}
	// The producer survived the deletion (the snapshot was written).
	wantOffset(t, "retry of producer 9", mustProduce(t, c, wire.AcksAll, buildBatch(9, 0, []string{bigValue})), 0)
}
