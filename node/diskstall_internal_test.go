package node

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/segment"
)

// TestDiskStalledLogsOnceEachWay: an fsync in flight counts as a stall
// only once it has run longer than the timeout (by the tracker's clock,
// moved by hand); the start is logged once at Error naming the operation,
// the end once at Info, and the stall is counted once however many
// heartbeat ticks it spans. /readyz's reason names the file and the age.
func TestDiskStalledLogsOnceEachWay(t *testing.T) {
	r := newStallRig(t)
	n := r.n
	release := r.block()
	r.advance(2 * time.Second) // at the timeout: not yet a stall
	if n.diskStalled() || n.diskStallReason() != "" {
		t.Fatal("an fsync in flight for exactly the timeout counts as a stall")
	}
	r.advance(1200 * time.Millisecond)
	for range 3 { // heartbeat ticks
		if !n.diskStalled() {
			t.Fatal("an fsync in flight for 3.2s, timeout 2s, is no stall")
		}
	}
	if got, want := n.diskStallReason(), "disk stalled: fdatasync of /p-0.log in flight for 3.2s"; got != want {
		t.Fatalf("reason %q, want %q", got, want)
	}
	if s := n.diskStallStats(); !s.stalled || s.stalls != 1 || s.oldest != 3200*time.Millisecond {
		t.Fatalf("stats during the stall %+v", s)
	}

	release()
	if n.diskStalled() || n.diskStalled() {
		t.Fatal("still stalled after the fsync returned")
	}
	if s := n.diskStallStats(); s.stalled || s.stalls != 1 || s.oldest != 0 || s.longest != 3200*time.Millisecond || s.holdDown != 0 {
		t.Fatalf("stats after the stall %+v", s)
	}
	out := r.logs()
	if c := strings.Count(out, "level=ERROR msg=\"disk stalled: holding back broker heartbeats"); c != 1 {
		t.Fatalf("%d Error lines for the stall's start, want 1:\n%s", c, out)
	}
	if !strings.Contains(out, "op=fdatasync path=/p-0.log in_flight=3.2s") {
		t.Fatalf("the start's line does not name the operation:\n%s", out)
	}
	if c := strings.Count(out, "level=INFO msg=\"disk stall over: heartbeating"); c != 1 {
		t.Fatalf("%d Info lines for the stall's end, want 1:\n%s", c, out)
	}
}

// stallRig is a node with stall detection (timeout 2s) on a MemFS file
// whose fsyncs the test blocks, and one clock, moved by hand, for the
// tracker and the hold-down.
type stallRig struct {
	t     *testing.T
	ns    atomic.Int64
	n     *Node
	mem   *segment.MemFS
	f     segment.File
	buf   bytes.Buffer
	logMu sync.Mutex
	// onRead, when set, runs at each read of the clock before it reads.
	onRead atomic.Pointer[func()]
}

func newStallRig(t *testing.T) *stallRig {
	t.Helper()
	r := &stallRig{t: t}
	r.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time {
		if f := r.onRead.Load(); f != nil {
			(*f)()
		}
		return time.Unix(0, r.ns.Load())
	}
	r.n = &Node{cfg: Config{DiskStallTimeout: 2 * time.Second},
		log: slog.New(slog.NewTextHandler(&lockedWriter{w: &r.buf, mu: &r.logMu}, nil))}
	r.n.stall.ops = segment.NewDiskOps(clock)
	r.n.stall.now = clock
	r.mem = segment.NewMemFS()
	f, err := r.n.stall.ops.FS(r.mem).OpenFile("/p-0.log", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	r.f = f
	return r
}

// advance moves the clock.
func (r *stallRig) advance(d time.Duration) { r.ns.Add(int64(d)) }

// block starts an fsync that hangs until the function block returns is
// called, which then waits for it to return.
func (r *stallRig) block() (release func()) {
	r.t.Helper()
	blocked, unblock := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.mem.SetFault(func(op segment.FaultOp, _ string) error {
		if op == segment.OpSync {
			once.Do(func() { close(blocked) })
			<-unblock
		}
		return nil
	})
	synced := make(chan error, 1)
	go func() { synced <- r.f.Sync() }()
	<-blocked
	var done sync.Once
	r.t.Cleanup(func() { done.Do(func() { close(unblock) }) })
	return func() {
		r.t.Helper()
		done.Do(func() { close(unblock) })
		if err := <-synced; err != nil {
			r.t.Fatal(err)
		}
		r.mem.SetFault(nil)
	}
}

// stall hangs an fsync for d (over the timeout), with a heartbeat tick
// that sees it stalled, and once it has returned runs one more tick and
// returns its answer: whether the node still holds back its heartbeats.
func (r *stallRig) stall(d time.Duration) (aside bool) {
	r.t.Helper()
	release := r.block()
	r.advance(d)
	if !r.n.diskStalled() {
		r.t.Fatalf("an fsync in flight for %v is no stall", d)
	}
	release()
	return r.n.diskStalled()
}

// logs is what the node logged so far.
func (r *stallRig) logs() string {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	return r.buf.String()
}

// TestDiskStallOff: with the timeout 0 nothing is wrapped or tracked.
func TestDiskStallOff(t *testing.T) {
	cfg := Config{}
	if ops, _ := trackDiskOps(&cfg); ops != nil || cfg.LogFS != nil || cfg.MetadataFS != nil {
		t.Fatalf("--disk-stall-timeout 0 tracks %v, LogFS %v, MetadataFS %v", ops, cfg.LogFS, cfg.MetadataFS)
	}
	n := &Node{}
	if n.diskStalled() || n.diskStallReason() != "" || n.diskStallStats() != (diskStallStats{}) {
		t.Fatal("a node without a tracker reports a stall")
	}
}

// TestTrackDiskOpsOnOS: the device watch applies only to logs on the OS's
// file systems.
func TestTrackDiskOpsOnOS(t *testing.T) {
	for _, c := range []struct {
		name   string
		log    segment.FS
		meta   segment.FS
		wantOS bool
	}{
		{"defaults", nil, nil, true},
		{"OSFS", segment.OSFS{}, nil, true},
		{"MemFS metadata", nil, segment.NewMemFS(), false},
		{"MemFS logs", segment.NewMemFS(), segment.OSFS{}, false},
	} {
		cfg := Config{DiskStallTimeout: time.Second, LogFS: c.log, MetadataFS: c.meta}
		if ops, onOS := trackDiskOps(&cfg); ops == nil || onOS != c.wantOS {
			t.Errorf("%s: tracker %v, on the OS %v, want %v", c.name, ops, onOS, c.wantOS)
		}
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestDiskStallSeenAfterTheFact: when the whole process blocks on a frozen
// file system (a raw pwrite keeps its P and the GC's stop-the-world waits
// for it), no look sees the operation in flight. Once it returns, the next
// look finds an operation over the timeout and a gap between looks over
// it too: a stall, counted and logged, and a second one soon after imposes
// the hold-down. A slow operation that looks saw (the device writing) is
// not one, nor is a stall the looks saw counted twice.
func TestDiskStallSeenAfterTheFact(t *testing.T) {
	r := newStallRig(t)
	if r.n.diskStalled() {
		t.Fatal("stalled before any operation")
	}
	unseen := func() (aside bool) {
		release := r.block()
		r.advance(3 * time.Second) // no look meanwhile: the process is blocked
		release()
		return r.n.diskStalled()
	}
	if unseen() {
		t.Fatal("the first stall in 10 minutes holds the node aside")
	}
	if got := r.n.diskStallStats().stalls; got != 1 {
		t.Fatalf("%d stalls counted after one no look saw, want 1", got)
	}
	if l := r.logs(); !strings.Contains(l, "disk stalled while this whole process was blocked") || !strings.Contains(l, "disk stall over: heartbeating") {
		t.Fatalf("logged:\n%s", l)
	}
	r.advance(5 * time.Second)
	r.n.diskStalled()
	if !unseen() {
		t.Fatal("a second stall 5 s after the first, seen after the fact: no hold-down")
	}
	if l := r.logs(); !strings.Contains(l, "disk stall over, but the disk stalled again soon after the previous stall") {
		t.Fatalf("no hold-down logged:\n%s", l)
	}

	// A stall the looks saw is counted once.
	r = newStallRig(t)
	r.n.diskStalled()
	if r.stall(3 * time.Second) {
		t.Fatal("the first stall holds the node aside")
	}
	if got := r.n.diskStallStats().stalls; got != 1 {
		t.Fatalf("%d stalls counted for one the looks saw, want 1", got)
	}
	if l := r.logs(); strings.Contains(l, "while this whole process was blocked") {
		t.Fatalf("a stall the looks saw logged as one they missed:\n%s", l)
	}

	// A slow operation, looked at every 500 ms while the device writes.
	r = newStallRig(t)
	var writes uint64
	r.n.stall.writes = func() (uint64, error) { writes++; return writes, nil }
	r.n.diskStalled()
	release := r.block()
	for range 6 {
		r.advance(500 * time.Millisecond)
		if r.n.diskStalled() {
			t.Fatal("a slow operation on a writing device is a stall")
		}
	}
	release()
	if r.n.diskStalled() || r.n.diskStallStats().stalls != 0 {
		t.Fatalf("a slow operation the looks saw counted as a stall (%d)", r.n.diskStallStats().stalls)
	}
}

// TestDiskStallTimeoutAgainstHeartbeatInterval: the detector looks once a
// heartbeat, so a stall timeout under two heartbeat intervals is refused
// (the device watch would take every slow operation for a stall).
func TestDiskStallTimeoutAgainstHeartbeatInterval(t *testing.T) {
	for _, c := range []struct {
		timeout, interval time.Duration
		ok                bool
	}{
		{2 * time.Second, 50 * time.Millisecond, true},
		{0, time.Second, true}, // off
		{time.Second, 500 * time.Millisecond, true},
		{time.Second, 600 * time.Millisecond, false},
		{time.Second, time.Second, false},
	} {
		cfg := DefaultConfig()
		cfg.ID, cfg.Addr, cfg.DataDir, cfg.Controllers = 1, "127.0.0.1:1", t.TempDir(), map[int32]string{1: "127.0.0.1:1"}
		cfg.DiskStallTimeout, cfg.HeartbeatInterval, cfg.SessionTimeout = c.timeout, c.interval, 10*c.interval
		err := cfg.Validate()
		var ce *ConfigError
		if c.ok && err != nil || !c.ok && (!errors.As(err, &ce) || ce.Field != "disk-stall-timeout") {
			t.Errorf("timeout %v, heartbeat interval %v: %v; want ok %v, else a disk-stall-timeout ConfigError", c.timeout, c.interval, err, c.ok)
		}
	}
}
