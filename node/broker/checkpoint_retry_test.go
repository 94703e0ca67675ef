package broker

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// recordedLog keeps the messages logged at each level.
type recordedLog struct {
	mu   sync.Mutex
	msgs map[slog.Level][]string
}

func (r *recordedLog) Enabled(context.Context, slog.Level) bool { return true }
func (r *recordedLog) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recordedLog) WithGroup(string) slog.Handler            { return r }
func (r *recordedLog) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs[rec.Level] = append(r.msgs[rec.Level], rec.Message)
	return nil
}

// count returns how many messages at level start with prefix.
func (r *recordedLog) count(level slog.Level, prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs[level] {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

// TestHWCheckpointRetriedAfterAFailedWrite: a failed HW checkpoint write
// (a full disk) is retried at the next ticks although no HW moves (on a
// full disk produce is refused, so none would), and logged once, not at
// every tick; once writes succeed again that is logged once too. The
// write used to clear the dirty mark first: one failure left the
// checkpoint stale until the HW next moved, and a full disk with moving
// HWs logged an error every tick.
func TestHWCheckpointRetriedAfterAFailedWrite(t *testing.T) {
	rec := &recordedLog{msgs: map[slog.Level][]string{}}
	c := newTestCluster(t, clusterOptions{nodes: 1, memFS: true, logger: slog.New(rec)})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	n := c.node(1)
	var attempts atomic.Int32
	var full atomic.Bool
	full.Store(true)
	n.fs.SetFault(func(op segment.FaultOp, path string) error {
		if op != segment.OpWrite || !strings.HasPrefix(filepath.Base(path), CheckpointFile) || !full.Load() {
			return nil
		}
		attempts.Add(1)
		return syscall.ENOSPC
	})
	defer n.fs.SetFault(nil)
	wantOffset(t, "the record", mustProduce(t, c, wire.AcksAll, buildBatch(-1, 0, []string{"pay-1"})), 0)
	waitFor(t, "three attempts at the HW checkpoint", 10*time.Second, func() bool { return attempts.Load() >= 3 })
	if got := rec.count(slog.LevelError, "writing HW checkpoint"); got != 1 {
		t.Fatalf("%d failed checkpoint writes logged %d errors, want 1", attempts.Load(), got)
	}
	full.Store(false)
	waitFor(t, "the checkpoint written again", 10*time.Second, func() bool {
		return rec.count(slog.LevelInfo, "HW checkpoint written again") == 1
	})
	ckpt, err := readCheckpoint(n.fs, filepath.Join(n.dir, CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if hw := ckpt[tp{"payments", 0}]; hw != 1 {
		t.Fatalf("checkpointed HW %d, want 1", hw)
	}
}
