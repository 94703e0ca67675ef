package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// holdPartitionIO makes the slow file operations in dir (fsyncs of
// anything but segment data, directory fsyncs, renames, unlinks) wait one
// at a time, as holdIO does. Segment data flushes pass, so that a
// produce's own flush is never held.
func holdPartitionIO(fs *segment.MemFS, dir string) (held chan string, release chan struct{}, disarm func()) {
	return holdIO(fs, func(op segment.FaultOp, path string) bool {
		switch {
		case filepath.Dir(path) != dir && path != dir:
			return false
		case op == segment.OpSync && strings.HasSuffix(path, ".log"):
			return false
		}
		return op == segment.OpSync || op == segment.OpSyncDir || op == segment.OpRename || op == segment.OpRemove
	})
}

// holdIO makes the file operations pick chooses wait one at a time: each
// is sent on held (as "op name") and waits for a value on release; while
// one is held the others pass (the test produces meanwhile), as they all
// do after disarm().
func holdIO(fs *segment.MemFS, pick func(op segment.FaultOp, path string) bool) (held chan string, release chan struct{}, disarm func()) {
	var mu sync.Mutex
	armed, busy := true, false
	held, release = make(chan string), make(chan struct{})
	fs.SetFault(func(op segment.FaultOp, path string) error {
		if !pick(op, path) {
			return nil
		}
		mu.Lock()
		hit := armed && !busy
		busy = busy || hit
		mu.Unlock()
		if hit {
			held <- fmt.Sprintf("%s %s", op, filepath.Base(path))
			<-release
			mu.Lock()
			busy = false
			mu.Unlock()
		}
		return nil
	})
	return held, release, func() {
		mu.Lock()
		armed = false
		mu.Unlock()
	}
}

// TestProduceDoesNotWaitForRetentionIO: while a retention pass on the
// leader is held in each of its slow file operations in turn (the
// producer snapshot's and the log-start checkpoint's fsyncs and renames,
// the deleted segments' renames, unlinks and directory fsync), a produce
// to the same partition completes. The pass used to hold the partition's
// append lock across all of them, so every retention pass paused produce
// for as long as the disk took.
func TestProduceDoesNotWaitForRetentionIO(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, memFS: true, segBytes: retentionSegBytes, maxIndexBytes: 4096,
		maxWait: 50 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	// An idempotent batch: the pass writes a producer snapshot.
	wantOffset(t, "producer 9", mustProduce(t, c, wire.AcksAll, buildBatch(9, 0, []string{bigValue})), 0)
	produceN(t, c, 30, wire.AcksAll)
	c.setRetention(testKey, nil, ptr(retentionSegBytes))
	n := c.node(1)
	held, release, disarm := holdPartitionIO(n.fs, logOf(c, 1).Dir())
	defer n.fs.SetFault(nil)
	done := make(chan int, 1)
	go func() { done <- n.b.ApplyRetention(context.Background()) }()
	ops := 0
	for {
		var what string
		select {
		case d := <-done:
			n.fs.SetFault(nil)
			if d == 0 {
				t.Fatalf("the pass deleted nothing (%d failures)", n.b.Stats().RetentionFailures)
			}
			if ops < 5 {
				t.Fatalf("only %d slow operations held: the test tests little", ops)
			}
			t.Logf("%d slow operations held, a produce completed during each", ops)
			if _, start, _ := infoOf(t, c, 1); start == 0 {
				t.Fatal("log start still 0")
			}
			wantOffset(t, "retry of producer 9 after the pass", mustProduce(t, c, wire.AcksAll, buildBatch(9, 0, []string{bigValue})), 0)
			return
		case what = <-held:
		}
		ops++
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r, err := c.produce(ctx, testKey, 1, buildBatch(0, 0, []string{"during retention"}))
		cancel()
		if err != nil || r.Err != wire.None {
			disarm()
			release <- struct{}{}
			<-done
			t.Fatalf("a produce during the retention pass's %q (slow operation %d): %v %v; it waited for the pass", what, ops, err, r.Err)
		}
		release <- struct{}{}
	}
}

// holdDeletionIO makes the fsyncs, renames and unlinks of a deletion in
// dir (the producer snapshot, the log-start checkpoint, *.deleted files)
// wait, one at a time, as holdIO does; the follower's own appends (rolls
// included) are never held.
func holdDeletionIO(fs *segment.MemFS, dir string) (held chan string, release chan struct{}, disarm func()) {
	return holdIO(fs, func(op segment.FaultOp, path string) bool {
		name := filepath.Base(path)
		switch {
		case filepath.Dir(path) != dir:
			return false
		case op != segment.OpSync && op != segment.OpRename && op != segment.OpRemove:
			return false
		}
		return strings.HasPrefix(name, ProducerSnapshotFile) || strings.HasPrefix(name, "log-start-offset") ||
			strings.HasSuffix(name, ".deleted")
	})
}

// TestAcksAllDoesNotWaitForAFollowersDeletion: while a follower raising
// its log start to its leader's is held in each slow file operation of
// its deletion in turn, acks=all produce on the leader completes: the
// follower keeps fetching (the HW keeps moving). It used to raise the log
// start on its fetch loop, which then stopped fetching from that leader,
// for every partition, for as long as the deletion's disk I/O took.
func TestAcksAllDoesNotWaitForAFollowersDeletion(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, memFS: true, segBytes: retentionSegBytes, maxIndexBytes: 4096,
		maxWait: 50 * time.Millisecond, lagTime: time.Minute})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	wantOffset(t, "producer 9", mustProduce(t, c, wire.AcksAll, buildBatch(9, 0, []string{bigValue})), 0)
	produceN(t, c, 30, wire.AcksAll)
	waitInSync(t, c, testKey)
	c.setRetention(testKey, nil, ptr(retentionSegBytes))
	f := c.node(2)
	held, release, disarm := holdDeletionIO(f.fs, logOf(c, 2).Dir())
	defer f.fs.SetFault(nil)
	if n := c.node(1).b.ApplyRetention(context.Background()); n == 0 {
		t.Fatal("the leader's pass deleted nothing")
	}
	_, start, _ := infoOf(t, c, 1)
	k := 0 // the follower's segments to delete
	for _, base := range logOf(c, 2).Segments()[1:] {
		if base <= start {
			k++
		}
	}
	// The producer snapshot's and the log-start checkpoint's fsync and
	// rename, then a rename and an unlink of each file of each segment.
	want := 4 + 6*k
	ops := 0
	for ops < want {
		var what string
		select {
		case what = <-held:
		case <-time.After(5 * time.Second):
			t.Fatalf("after %d of %d operations held, the follower's deletion held nothing more for 5 s (log start %d, the leader's %d)",
				ops, want, logOf(c, 2).LogStartOffset(), start)
		}
		ops++
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r, err := c.produce(ctx, testKey, wire.AcksAll, buildBatch(0, 0, []string{"during the follower's deletion"}))
		cancel()
		if err != nil || r.Err != wire.None {
			disarm()
			release <- struct{}{}
			t.Fatalf("acks=all produce during the follower's %q (slow operation %d): %v %v; the follower stopped fetching",
				what, ops, err, r.Err)
		}
		release <- struct{}{}
	}
	disarm()
	waitFor(t, "the follower's log start at the leader's", 10*time.Second, func() bool {
		_, s, _ := infoOf(t, c, 2)
		return s == start && logOf(c, 2).LogStartOffset() == start
	})
	t.Logf("%d slow operations held, an acks=all produce completed during each", ops)
}

// TestReplayTriesAgainWhenRetentionMovesTheLogStart: a follower's
// producer-state replay (after a truncation, appendMu held) can overlap a
// retention pass's deletion, which no longer takes appendMu: when the log
// start moved while it read, the replay runs again (with the snapshot the
// pass wrote before moving it) instead of keeping a state built from an
// older snapshot that lacks the deleted batches' producers.
func TestReplayTriesAgainWhenRetentionMovesTheLogStart(t *testing.T) {
	_, _, lg := openSnapshotTestLog(t)
	for range 3 {
		if _, err := lg.Append(context.Background(), segment.Batch(buildBatch(-1, -1, []string{bigValue})), 1); err != nil {
			t.Fatal(err)
		}
	}
	stale, fresh := newProducerState(), newProducerState()
	tries := 0
	got, err := replayUntilStartHolds(lg, func() (*producerState, error) {
		tries++
		if tries == 1 {
			// A pass moves the log start while this replay reads.
			if err := lg.DeleteBefore(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
			return stale, nil
		}
		return fresh, nil
	})
	if err != nil || got != fresh || tries != 2 {
		t.Fatalf("replay tried %d times and kept the stale state: %v (err %v); want 2 tries, the fresh state",
			tries, got == stale, err)
	}
}
