package node

import (
	"bytes"
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
	var ns atomic.Int64
	ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, ns.Load()) }
	ops := segment.NewDiskOps(clock)
	var logs bytes.Buffer
	var logMu sync.Mutex
	n := &Node{cfg: Config{DiskStallTimeout: 2 * time.Second},
		log: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))}
	n.stall.ops = ops

	mem := segment.NewMemFS()
	fs := ops.FS(mem)
	f, err := fs.OpenFile("/p-0.log", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blocked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	mem.SetFault(func(op segment.FaultOp, _ string) error {
		if op == segment.OpSync {
			close(blocked)
			<-release
		}
		return nil
	})
	synced := make(chan error, 1)
	go func() { synced <- f.Sync() }()
	<-blocked

	ns.Add(int64(2 * time.Second)) // at the timeout: not yet a stall
	if n.diskStalled() || n.diskStallReason() != "" {
		t.Fatal("an fsync in flight for exactly the timeout counts as a stall")
	}
	ns.Add(int64(1200 * time.Millisecond))
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

	once.Do(func() { close(release) })
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if n.diskStalled() || n.diskStalled() {
		t.Fatal("still stalled after the fsync returned")
	}
	if s := n.diskStallStats(); s.stalled || s.stalls != 1 || s.oldest != 0 || s.longest != 3200*time.Millisecond {
		t.Fatalf("stats after the stall %+v", s)
	}
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
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

// TestDiskStallOff: with the timeout 0 nothing is wrapped or tracked.
func TestDiskStallOff(t *testing.T) {
	cfg := Config{}
	if ops := trackDiskOps(&cfg); ops != nil || cfg.LogFS != nil || cfg.MetadataFS != nil {
		t.Fatalf("--disk-stall-timeout 0 tracks %v, LogFS %v, MetadataFS %v", ops, cfg.LogFS, cfg.MetadataFS)
	}
	n := &Node{}
	if n.diskStalled() || n.diskStallReason() != "" || n.diskStallStats() != (diskStallStats{}) {
		t.Fatal("a node without a tracker reports a stall")
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
