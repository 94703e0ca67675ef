package segment

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// firstSegmentLog is the .log of the segment at base offset 0.
const firstSegmentLog = "00000000000000000000.log"

// gateFirstSegmentSync blocks the first fsync of the first segment's .log
// until release is closed; blocked is closed when it starts.
func gateFirstSegmentSync(fs *MemFS) (blocked, release chan struct{}) {
	blocked, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	fs.SetFault(func(op FaultOp, path string) error {
		if op == OpSync && strings.HasSuffix(path, firstSegmentLog) {
			once.Do(func() {
				close(blocked)
				<-release
			})
		}
		return nil
	})
	return blocked, release
}

// appendUntilRolled appends until the first segment is sealed.
func appendUntilRolled(t *testing.T, l *Log) {
	t.Helper()
	for i := 0; len(l.Segments()) < 2; i++ {
		if i > 1000 {
			t.Fatal("the log never rolled")
		}
		mustAppend(t, l, testBatch(i, 20, 1000), 1)
	}
}

// waitHooked returns a hook for Log.syncWaitHook and a channel closed when
// it is first called.
func waitHooked() (func(), chan struct{}) {
	ch := make(chan struct{})
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }, ch
}

func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// assertCrashKeepsAll reopens a crash clone of fs (only synced bytes) and
// checks it holds every batch l holds.
func assertCrashKeepsAll(t *testing.T, fs *MemFS, l *Log, want []Batch, leo int64) {
	t.Helper()
	l2 := mustOpen(t, "/p", Options{FS: fs.CrashClone(), SegmentBytes: 4096})
	defer l2.Close()
	if got := l2.LogEndOffset(); got != leo {
		t.Fatalf("after a crash the log ends at %d, want %d", got, leo)
	}
	got := readAll(t, l2, 0)
	if len(got) != len(want) {
		t.Fatalf("%d batches after the crash, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != string(want[i]) {
			t.Fatalf("batch %d differs after the crash", i)
		}
	}
}

// Under SyncNever a sealed segment is fsynced by the background flusher.
// Sync, called while that fsync runs, promises every byte is durable: it
// must wait for it instead of finding nothing pending and returning.
func TestSyncWaitsForBackgroundSegmentSync(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", Options{FS: fs, SegmentBytes: 4096, Sync: SyncNever})
	defer l.Close()
	blocked, release := gateFirstSegmentSync(fs)
	hook, waiting := waitHooked()
	l.syncWaitHook = hook // before any append kicks the flusher
	appendUntilRolled(t, l)
	within(t, blocked, "the background fsync of the sealed segment")

	synced := make(chan error, 1)
	go func() { synced <- l.Sync(ctx) }()
	select {
	case err := <-synced:
		close(release)
		t.Fatalf("Sync returned (%v) while the sealed segment's fsync was still running", err)
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("Sync neither returned nor waited")
	}
	close(release)
	select {
	case err := <-synced:
		if err != nil {
			t.Fatalf("Sync: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sync did not return after the fsync finished")
	}
	assertCrashKeepsAll(t, fs, l, readAll(t, l, 0), l.LogEndOffset())
}

// Close writes the clean-shutdown marker, after which Open trusts the
// indexes of sealed segments without a scan. A Sync fsyncing a sealed
// segment when Close runs must finish first: Close must not find nothing
// pending and write the marker during that fsync.
func TestCloseWaitsForConcurrentSegmentSync(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", Options{FS: fs, SegmentBytes: 4096, Sync: SyncNever})
	// The fsync in flight is a Sync's: Close already waits for the
	// background flusher's (it stops it first).
	l.stopBackground()
	blocked, release := gateFirstSegmentSync(fs)
	hook, waiting := waitHooked()
	l.syncWaitHook = hook
	appendUntilRolled(t, l)
	want, leo := readAll(t, l, 0), l.LogEndOffset()

	synced := make(chan error, 1)
	go func() { synced <- l.Sync(ctx) }()
	within(t, blocked, "Sync's fsync of the sealed segment")

	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	select {
	case err := <-closed:
		close(release)
		t.Fatalf("Close returned (%v) while a Sync was still fsyncing a sealed segment", err)
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("Close neither returned nor waited")
	}
	close(release)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return after the fsync finished")
	}
	t.Logf("the concurrent Sync returned %v", <-synced)
	assertCrashKeepsAll(t, fs, l, want, leo)
}
