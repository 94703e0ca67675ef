package broker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/segment"
)

// The backoff of an uncleanable partition, in passes: 1, 2, 4, … doubling
// up to an hour's worth of passes (240 at the default 15 s), whatever the
// failure count.
func TestUncleanableSkip(t *testing.T) {
	if got := uncleanableMaxSkip(15 * time.Second); got != 240 {
		t.Fatalf("an hour of 15 s passes: %d", got)
	}
	if got := uncleanableMaxSkip(-1); got != 240 {
		t.Fatalf("no cleaner loop: %d passes, want the default interval's 240", got)
	}
	if got := uncleanableMaxSkip(7 * time.Minute); got != 9 {
		t.Fatalf("7 min passes: %d, want 9 (rounded up)", got)
	}
	if got := uncleanableMaxSkip(2 * time.Hour); got != 1 {
		t.Fatalf("2 h passes: %d, want 1", got)
	}
	for failures, want := range []int{0, 1, 2, 4, 8, 16, 32, 64, 128, 240, 240} {
		if got := uncleanableSkip(failures, 240); got != want {
			t.Errorf("%d failures: skip %d passes, want %d", failures, got, want)
		}
	}
	if got := uncleanableSkip(1000, 240); got != 240 {
		t.Fatalf("1000 failures: %d", got)
	}
}

// With real logs on a MemFS: a compacted partition whose Compact fails
// (its cleaned segment cannot be created) is set aside while another is
// compacted; the passes skip it 1, then 2 passes, its failure is logged
// once at Error, and Stats count it with its dirty bytes. Once the fault
// is gone the next try compacts it (logged at Info) and it leaves the set.
// Failing again, it leaves the set when the partition is deleted.
func TestCleanerSetsAsideAnUncleanablePartition(t *testing.T) {
	logs := &syncBuffer{}
	c := newTestCluster(t, clusterOptions{nodes: 1, memFS: true, segBytes: retentionSegBytes, cleanerInterval: -1,
		logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	b := c.node(1).b
	bad, good := tp{"payments", 0}, tp{"payments", 1}
	for _, k := range []tp{bad, good} {
		c.createPartition(k.topic, k.partition, []int32{1}, 1, 1)
		c.setCleanup(k, CleanupCompact, CompactionConfig{MinDirtyRatio: 0, DeleteRetention: time.Hour})
		produceKeyed(t, c, k, 40, 5)
	}
	var failing atomic.Bool
	failing.Store(true)
	badDir := b.partition(bad.topic, bad.partition).dir
	c.node(1).fs.SetFault(func(op segment.FaultOp, path string) error {
		if failing.Load() && op == segment.OpOpen && strings.HasPrefix(path, badDir+"/") && strings.HasSuffix(path, ".cleaned.tmp") {
			return errors.New("injected: no space for the cleaned segment")
		}
		return nil
	})
	o, _, _ := b.partition(bad.topic, bad.partition).compactOptions(time.Now())
	d, err := b.partition(bad.topic, bad.partition).log.Dirtiness(o)
	if err != nil || !d.Due || d.DirtyBytes == 0 {
		t.Fatalf("the set-up is not what the test needs: %+v, %v", d, err)
	}

	s := b.CompactNow(context.Background())
	if s.Partitions != 2 || s.Ran != 1 || s.Failed != 1 || s.SetAside != 0 || s.Err == nil || !strings.Contains(s.Err.Error(), "payments-0: ") {
		t.Fatalf("first pass: %+v", s)
	}
	if st := b.Stats().Cleaner; st.Uncleanable != 1 || st.UncleanableBytes != d.DirtyBytes {
		t.Fatalf("after the failure: %+v; want 1 partition of %d dirty bytes", st, d.DirtyBytes)
	}
	produceKeyed(t, c, bad, 20, 5) // its dirty bytes, as the passes that skip it see them
	for i, tried := range []bool{false, true, false, false} {
		s := b.CompactNow(context.Background())
		if i == 0 {
			o, _, _ := b.partition(bad.topic, bad.partition).compactOptions(time.Now())
			now, err := b.partition(bad.topic, bad.partition).log.Dirtiness(o)
			if st := b.Stats().Cleaner; err != nil || now.DirtyBytes <= d.DirtyBytes || st.UncleanableBytes != now.DirtyBytes {
				t.Fatalf("set aside: %+v; want %d dirty bytes, more than the %d before (%v)", st, now.DirtyBytes, d.DirtyBytes, err)
			}
		}
		if tried != (s.Failed == 1) || tried == (s.SetAside == 1) || s.Partitions != 1+s.Failed {
			t.Fatalf("pass %d: %+v (tried: %v)", i+2, s, tried)
		}
	}
	if n := logs.count("level=ERROR", "log cleaner set aside an uncleanable partition", "topic=payments", "partition=0", "injected"); n != 1 {
		t.Fatalf("the failure was logged %d times at Error, want once:\n%s", n, logs.buf.String())
	}
	if st := b.Stats(); st.CleanerFailures != 2 || st.Cleaner.Uncleanable != 1 {
		t.Fatalf("after the second failure: %+v", st)
	}

	failing.Store(false)
	s = b.CompactNow(context.Background()) // the 4th pass after the second failure: tried
	if s.Ran != 1 || s.Failed != 0 || s.SetAside != 0 || s.Err != nil {
		t.Fatalf("the try after the fault went: %+v", s)
	}
	if st := b.Stats().Cleaner; st.Uncleanable != 0 || st.UncleanableBytes != 0 {
		t.Fatalf("after the recovery: %+v", st)
	}
	if n := logs.count("level=INFO", "log cleaner cleaned a partition it had set aside", "topic=payments", "partition=0", "failures=2"); n != 1 {
		t.Fatalf("the recovery was logged %d times, want once:\n%s", n, logs.buf.String())
	}
	if got := readAll(t, logOf(c, 1), 40); len(got) >= 40 {
		t.Fatalf("payments-0 holds %d records after its compaction", len(got))
	}

	produceKeyed(t, c, bad, 40, 5)
	failing.Store(true)
	if s := b.CompactNow(context.Background()); s.Failed != 1 || b.Stats().Cleaner.Uncleanable != 1 {
		t.Fatalf("failing again: %+v", s)
	}
	if err := b.StopPartition(context.Background(), bad.topic, bad.partition, true); err != nil {
		t.Fatal(err)
	}
	if s := b.CompactNow(context.Background()); s.SetAside != 0 || s.Partitions != 1 || b.Stats().Cleaner.Uncleanable != 0 {
		t.Fatalf("after the partition was deleted: %+v, %+v", s, b.Stats().Cleaner)
	}
}
