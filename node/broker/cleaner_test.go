package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// Compaction tests: the topic's cleanup.policy and compaction configs are
// pushed as PartitionState, as the node does from the metadata image
// (setCleanup); cleaner passes run with Broker.CompactNow, and the tests of
// the broker's part replace segment.Log.Compact with the compact hook.

// setCleanup sets the partition's cleanup.policy and compaction configs and
// pushes them, as an AlterConfigs would.
func (c *testCluster) setCleanup(key tp, pol CleanupPolicy, cc CompactionConfig) {
	c.mu.Lock()
	st := c.parts[key]
	st.Cleanup, st.Compaction = pol, cc
	c.mu.Unlock()
	c.push(key)
}

// kv is a record's key and value (nil: null).
type kv struct{ key, value []byte }

func rec(key, value string) kv { return kv{[]byte(key), []byte(value)} }

// keyedBatch encodes recs as one batch compressed with codec.
func keyedBatch(codec segment.Codec, recs ...kv) []byte {
	bd := segment.NewBuilder(segment.BuilderOptions{Compression: codec})
	for _, r := range recs {
		bd.Add(1700000000000, r.key, r.value, nil)
	}
	return slices.Clone([]byte(bd.Build()))
}

// A compacted topic's leader refuses a batch holding a record without a key
// (InvalidRecord, Kafka's words), whole, compressed or not, and writes
// nothing of it; an empty key and a tombstone (null value) are fine. Its
// records are still checked for corruption. A topic whose policy drops
// compact takes keyless records again. A batch with the compacted
// attribute, which only the log cleaner sets, is refused from a producer
// on any topic.
func TestProduceCompactedTopicNeedsKeys(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, cleanerInterval: -1})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	produce := func(b []byte) wire.ProducePartitionResponse {
		t.Helper()
		return mustProduce(t, c, wire.AcksAll, b)
	}
	keyless := keyedBatch(segment.CodecNone, kv{nil, []byte("v")})
	if r := produce(keyless); r.Err != wire.None {
		t.Fatalf("keyless record on a delete topic: %+v", r)
	}
	const msg = "compacted topic payments cannot accept a record without a key"
	for _, pol := range []CleanupPolicy{CleanupCompact, CleanupCompactDelete} {
		c.setCleanup(testKey, pol, CompactionConfig{})
		_, _, leo := infoOf(t, c, 1)
		for name, b := range map[string][]byte{
			"keyless":        keyless,
			"keyless middle": keyedBatch(segment.CodecNone, rec("a", "1"), kv{nil, []byte("2")}, rec("c", "3")),
			"keyless zstd":   keyedBatch(segment.CodecZstd, rec("a", "1"), rec("b", "2"), kv{nil, []byte("3")}),
			"keyless lz4":    keyedBatch(segment.CodecLZ4, kv{nil, []byte("1")}),
		} {
			if r := produce(b); r.Err != wire.InvalidRecord || r.Message != msg || r.BaseOffset != -1 {
				t.Errorf("%v: %s batch: %+v", pol, name, r)
			}
		}
		if _, _, now := infoOf(t, c, 1); now != leo {
			t.Fatalf("%v: refused batches moved the log end from %d to %d", pol, leo, now)
		}
		for name, b := range map[string][]byte{
			"keyed":     keyedBatch(segment.CodecNone, rec("a", "1"), rec("b", "2")),
			"empty key": keyedBatch(segment.CodecNone, kv{[]byte{}, []byte("1")}),
			"tombstone": keyedBatch(segment.CodecNone, kv{[]byte("a"), nil}),
			"zstd":      keyedBatch(segment.CodecZstd, rec("a", "1"), rec("b", "2")),
		} {
			if r := produce(b); r.Err != wire.None {
				t.Errorf("%v: %s batch: %+v", pol, name, r)
			}
		}
		bad := keyedBatch(segment.CodecNone, rec("a", "1"), rec("b", "2"))
		bad[len(bad)-1] = 0x7f // the last record's header count
		recrc(bad)
		if r := produce(bad); r.Err != wire.CorruptMessage {
			t.Errorf("%v: corrupt keyed batch: %+v", pol, r)
		}
	}
	c.setCleanup(testKey, CleanupDelete, CompactionConfig{})
	if r := produce(keyless); r.Err != wire.None {
		t.Fatalf("keyless record once the topic is delete again: %+v", r)
	}

	for _, pol := range []CleanupPolicy{CleanupDelete, CleanupCompact} {
		c.setCleanup(testKey, pol, CompactionConfig{})
		cleaned := keyedBatch(segment.CodecNone, rec("a", "1"))
		cleaned[22] |= byte(segment.AttrCompacted) // Attributes' low byte
		recrc(cleaned)
		if !segment.Batch(cleaned).Compacted() || segment.Batch(cleaned).Validate() != nil {
			t.Fatal("the test batch is not a valid compacted batch")
		}
		if r := produce(cleaned); r.Err != wire.CorruptMessage || !strings.Contains(r.Message, "only the log cleaner sets") {
			t.Errorf("%v: batch with the compacted attribute: %+v", pol, r)
		}
	}
}

// With cleanup.policy compact alone retention deletes nothing, whatever
// retention.bytes says; with compact,delete it applies as with delete.
func TestRetentionSkipsCompactOnlyTopics(t *testing.T) {
	c := retentionCluster(t, 1, nil)
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	produceN(t, c, 60, wire.AcksAll)
	b := c.node(1).b
	c.setRetention(testKey, ptr(-1), ptr(2*retentionSegBytes))
	c.setCleanup(testKey, CleanupCompact, CompactionConfig{MinDirtyRatio: 0.5})
	if n := b.ApplyRetention(context.Background()); n != 0 {
		t.Fatalf("retention deleted %d segments of a compact topic", n)
	}
	c.setRetention(testKey, ptr(0), ptr(-1)) // retention.ms 0: every sealed segment
	if n := b.ApplyRetention(context.Background()); n != 0 {
		t.Fatalf("retention.ms deleted %d segments of a compact topic", n)
	}
	if _, start, _ := infoOf(t, c, 1); start != 0 || logOf(c, 1).LogStartOffset() != 0 {
		t.Fatalf("log start %d on a compact topic", start)
	}
	c.setRetention(testKey, ptr(-1), ptr(2*retentionSegBytes))
	c.setCleanup(testKey, CleanupCompactDelete, CompactionConfig{MinDirtyRatio: 0.5})
	if n := b.ApplyRetention(context.Background()); n == 0 {
		t.Fatal("retention deleted nothing of a compact,delete topic")
	}
	if _, start, _ := infoOf(t, c, 1); start == 0 {
		t.Fatal("the log start did not move")
	}
}

// syncBuffer is a log sink safe for concurrent writes and reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) count(substrs ...string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, line := range strings.Split(b.buf.String(), "\n") {
		all := true
		for _, s := range substrs {
			all = all && strings.Contains(line, s)
		}
		if all {
			n++
		}
	}
	return n
}

// compactCall is one Compact call the compact hook saw.
type compactCall struct {
	key tp
	o   segment.CompactOptions
}

// hookCompact replaces node n's Compact with fn, recording every call.
func hookCompact(n *testNode, fn func(tp, segment.CompactOptions) (segment.CompactResult, error)) *[]compactCall {
	var mu sync.Mutex
	calls := &[]compactCall{}
	h := func(key tp, o segment.CompactOptions) (segment.CompactResult, error) {
		if o.Throttle == nil {
			panic("a pass without the cleaner's throttle")
		}
		mu.Lock()
		*calls = append(*calls, compactCall{key, o})
		mu.Unlock()
		return fn(key, o)
	}
	n.b.hooks.compact.Store(&h)
	return calls
}

// A cleaner pass calls Compact on each compacted partition a node hosts,
// leader or follower, and on no other: below the replica's HW (not its log
// end: a leader whose follower lags), with the topic's knobs and the
// broker's clock. It sums what the calls did into the summary and the
// counters; a failure is counted each time, sets the partition aside
// (skipped 1 pass, then 2, then 4) and is logged at Error once while it
// repeats, and at Info when a try succeeds; a closed log, a pass another
// caller is running and a stopped replica are skipped quietly.
func TestCompactNowCallsCompactBelowTheHW(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	logs := &syncBuffer{}
	c := newTestCluster(t, clusterOptions{nodes: 3, lagTime: time.Minute, cleanerInterval: -1,
		now:    func() time.Time { return now },
		logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	c.createPartition("plain", 0, []int32{1, 2, 3}, 1, 2)
	cc := CompactionConfig{MinDirtyRatio: 0.2, MinLag: time.Minute, MaxLag: 3 * time.Hour, DeleteRetention: 2 * time.Hour}
	c.setCleanup(testKey, CleanupCompactDelete, cc)
	for i := range 10 {
		if r := mustProduce(t, c, wire.AcksAll, keyedBatch(segment.CodecNone, rec(fmt.Sprint("k", i%3), "v"))); r.Err != wire.None {
			t.Fatal(r.Err)
		}
	}
	waitInSync(t, c, testKey)
	// Node 3 stops fetching but stays in the ISR (lag time a minute): the
	// leader's HW stays at 10 while its log grows.
	c.stopNode(3)
	for range 5 {
		if r := mustProduce(t, c, wire.AcksLeader, keyedBatch(segment.CodecNone, rec("k", "v"))); r.Err != wire.None {
			t.Fatal(r.Err)
		}
	}
	if hw, _, leo := infoOf(t, c, 1); hw != 10 || leo != 15 {
		t.Fatalf("leader HW %d, log end %d; want 10 and 15", hw, leo)
	}

	result := segment.CompactResult{Ran: true, DirtyRatio: 0.6, FirstDirty: 0, CleanedTo: 7, Segments: 2,
		BytesBefore: 1000, BytesAfter: 400, RecordsRemoved: 7, TombstonesRemoved: 1}
	var fail atomic.Pointer[error]
	answer := func(tp, segment.CompactOptions) (segment.CompactResult, error) {
		if err := fail.Load(); err != nil {
			return segment.CompactResult{}, *err
		}
		return result, nil
	}
	for _, id := range []int32{1, 2} {
		calls := hookCompact(c.node(id), answer)
		hw, _, _ := infoOf(t, c, id)
		c.node(id).b.cfg.CleanerDedupeBufferSize = 5 << 20 // no cleaner loop reads it meanwhile
		s := c.node(id).b.CompactNow(context.Background())
		want := []compactCall{{testKey, segment.CompactOptions{Below: hw, MinDirtyRatio: 0.2, MinLag: time.Minute,
			MaxLag: 3 * time.Hour, DeleteRetention: 2 * time.Hour, Now: now, MaxMapBytes: 5 << 20}}}
		same := func(a, b compactCall) bool { // all but the Throttle func
			x, y := a.o, b.o
			return a.key == b.key && x.Below == y.Below && x.MinDirtyRatio == y.MinDirtyRatio && x.MinLag == y.MinLag && x.MaxLag == y.MaxLag &&
				x.DeleteRetention == y.DeleteRetention && x.MaxKeys == y.MaxKeys && x.MaxMapBytes == y.MaxMapBytes && x.Now.Equal(y.Now)
		}
		if !slices.EqualFunc(*calls, want, same) {
			t.Fatalf("node %d: calls %+v, want %+v", id, *calls, want)
		}
		if s != (CleanerSummary{Partitions: 1, Ran: 1, Segments: 2, BytesBefore: 1000, BytesAfter: 400,
			RecordsRemoved: 7, TombstonesRemoved: 1}) {
			t.Fatalf("node %d: summary %+v", id, s)
		}
		st := c.node(id).b.Stats() // the tombstone is one of the 7 removed records
		if st.CleanerPasses != 1 || st.CleanerRemovedRecords != 7 || st.CleanerBytesReclaimed != 600 || st.CleanerFailures != 0 {
			t.Fatalf("node %d: stats %+v", id, st)
		}
	}
	if n := logs.count("log cleaner compacted segments", "node=1", "topic=payments", "segments=2",
		"bytes_before=1000", "bytes_after=400", "records_removed=7"); n != 1 {
		t.Fatalf("node 1 logged %d passes that ran, want 1:\n%s", n, logs.buf.String())
	}

	b := c.node(1).b
	boom := errors.New("boom")
	fail.Store(&boom)
	for i, tried := range []bool{true, false, true, false, false, true, false, false, false, false} {
		s := b.CompactNow(context.Background())
		if tried && (s.Partitions != 1 || s.Failed != 1 || s.Ran != 0 || s.SetAside != 0 || s.Err == nil || s.Err.Error() != "payments-0: boom") {
			t.Fatalf("failing pass %d: %+v", i+1, s)
		}
		if !tried && s != (CleanerSummary{SetAside: 1}) {
			t.Fatalf("pass %d, the partition set aside: %+v", i+1, s)
		}
	}
	if n := logs.count("level=ERROR", "log cleaner set aside an uncleanable partition", "node=1", "topic=payments", "boom"); n != 1 {
		t.Fatalf("a repeated failure was logged %d times, want once:\n%s", n, logs.buf.String())
	}
	if st := b.Stats(); st.CleanerFailures != 3 || st.CleanerPasses != 1 || st.Cleaner.Uncleanable != 1 {
		t.Fatalf("after failures: %+v", st)
	}
	closed := fmt.Errorf("compacting: %w", segment.ErrClosed)
	fail.Store(&closed)
	if s := b.CompactNow(context.Background()); s.Failed != 0 || s.Err != nil || s.Ran != 0 || s.Partitions != 1 {
		t.Fatalf("closed log: %+v", s)
	}
	running := segment.ErrCompactionRunning
	fail.Store(&running)
	if s := b.CompactNow(context.Background()); s.Failed != 0 || s.Err != nil || s.Ran != 0 {
		t.Fatalf("compaction already running: %+v", s)
	}
	fail.Store(nil)
	result.Ran = false
	if s := b.CompactNow(context.Background()); s != (CleanerSummary{Partitions: 1}) {
		t.Fatalf("a pass with nothing to do: %+v", s)
	}
	if st := b.Stats(); st.CleanerFailures != 3 || st.CleanerPasses != 1 || st.Cleaner.Uncleanable != 0 {
		t.Fatalf("after the quiet passes: %+v", st)
	}
	if n := logs.count("log cleaner set aside", "node=1"); n != 1 {
		t.Fatalf("%d failures logged, want 1", n)
	}
	if n := logs.count("level=INFO", "log cleaner cleaned a partition it had set aside", "node=1", "topic=payments", "failures=3"); n != 1 {
		t.Fatalf("the recovery was logged %d times, want once:\n%s", n, logs.buf.String())
	}

	if err := c.node(2).b.StopPartition(context.Background(), testKey.topic, testKey.partition, false); err != nil {
		t.Fatal(err)
	}
	if s := c.node(2).b.CompactNow(context.Background()); s != (CleanerSummary{}) {
		t.Fatalf("stopped replica: %+v", s)
	}
}

// The cleaner loop runs a pass every Config.CleanerInterval, leader and
// follower alike, and stops with the broker.
func TestCleanerLoopRuns(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, cleanerInterval: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	passes := map[int32]*atomic.Int64{1: {}, 2: {}}
	for id, n := range passes {
		hookCompact(c.node(id), func(tp, segment.CompactOptions) (segment.CompactResult, error) {
			n.Add(1)
			return segment.CompactResult{}, nil
		})
	}
	c.setCleanup(testKey, CleanupCompact, CompactionConfig{MinDirtyRatio: 0.5})
	waitFor(t, "a few cleaner passes on each node", 10*time.Second, func() bool {
		return passes[1].Load() >= 3 && passes[2].Load() >= 3
	})
}

// With the log's own Compact: after a pass on each replica every key's
// latest record is still there, with its offset, and fewer records are. A
// replica added afterwards copies the leader's compacted log as it is
// (batches of fewer records, some of none) and can clean its copy in turn;
// the partition takes writes as before.
func TestCompactNowCompactsTheLogs(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 3, segBytes: retentionSegBytes, maxIndexBytes: 4096,
		maxWait: 50 * time.Millisecond, cleanerInterval: -1})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	c.setCleanup(testKey, CleanupCompact, CompactionConfig{MinDirtyRatio: 0, DeleteRetention: time.Hour})
	const n, keys = 60, 5
	latest := map[string]int64{}
	for i := range n {
		k := fmt.Sprint("k", i%keys)
		if r := mustProduce(t, c, wire.AcksAll, keyedBatch(segment.CodecNone, rec(k, fmt.Sprint(i, bigValue)))); r.Err != wire.None {
			t.Fatal(r.Err)
		}
		latest[k] = int64(i)
	}
	caughtUp := func(id int32, end int64) {
		t.Helper()
		waitFor(t, fmt.Sprintf("node %d at the log end and HW %d", id, end), 10*time.Second, func() bool {
			hw, _, leo, ok := c.node(id).b.PartitionInfo(testKey.topic, testKey.partition)
			return ok && hw == end && leo == end
		})
	}
	caughtUp(2, n)
	check := func(id int32) map[int64]string {
		t.Helper()
		got := readAll(t, logOf(c, id), n)
		if len(got) >= n {
			t.Fatalf("node %d holds %d records after compaction", id, len(got))
		}
		for off, v := range got {
			if want := fmt.Sprint(off, bigValue); v != want {
				t.Fatalf("node %d: offset %d holds %.20q", id, off, v)
			}
		}
		for k, off := range latest {
			if _, ok := got[off]; !ok {
				t.Fatalf("node %d lost %s's latest record at %d", id, k, off)
			}
		}
		return got
	}
	for _, id := range []int32{1, 2} {
		s := c.node(id).b.CompactNow(context.Background())
		if s.Err != nil || s.Ran != 1 || s.RecordsRemoved == 0 || s.BytesAfter >= s.BytesBefore {
			t.Fatalf("node %d: %+v", id, s)
		}
		check(id)
		if st := c.node(id).b.Stats(); st.CleanerPasses != 1 || st.CleanerRemovedRecords != uint64(s.RecordsRemoved) ||
			st.CleanerBytesReclaimed != uint64(s.BytesBefore-s.BytesAfter) {
			t.Fatalf("node %d: stats %+v", id, st)
		}
	}
	leader := check(1)

	c.mu.Lock()
	c.parts[testKey].Replicas = []int32{1, 2, 3}
	c.parts[testKey].PartitionEpoch++
	c.mu.Unlock()
	c.push(testKey)
	caughtUp(3, n)
	if got := check(3); len(got) != len(leader) {
		t.Fatalf("node 3 copied %d records, the leader holds %d", len(got), len(leader))
	}
	if !bytes.Equal(logBytes(t, logOf(c, 3), n), logBytes(t, logOf(c, 1), n)) {
		t.Fatal("node 3's copy differs from the leader's log")
	}
	if s := c.node(3).b.CompactNow(context.Background()); s.Err != nil || s.Failed != 0 {
		t.Fatalf("node 3 cleaning its copy: %+v", s)
	}
	check(3)
	if r := mustProduce(t, c, wire.AcksAll, keyedBatch(segment.CodecNone, rec("k0", "after"))); r.Err != wire.None || r.BaseOffset != n {
		t.Fatalf("produce after compaction: %+v", r)
	}
	waitInSync(t, c, testKey)
}
