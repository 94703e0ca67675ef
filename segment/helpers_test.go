package segment

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
)

var ctx = context.Background()

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// mustOpen opens a log in dir, failing the test on error.
func mustOpen(tb testing.TB, dir string, opts Options) *Log {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger
	}
	l, err := Open(ctx, dir, opts)
	if err != nil {
		tb.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

// testBatch builds a batch of n records with values "v<seed>-<i>".
func testBatch(seed, n int, ts int64) Batch {
	b := NewBuilder(BuilderOptions{})
	for i := 0; i < n; i++ {
		b.Add(ts+int64(i), []byte(fmt.Sprintf("k%d", i)), []byte(fmt.Sprintf("v%d-%d", seed, i)), nil)
	}
	return b.Build()
}

func mustAppend(tb testing.TB, l *Log, b Batch, epoch int32) AppendInfo {
	tb.Helper()
	info, err := l.Append(ctx, b, epoch)
	if err != nil {
		tb.Fatalf("Append: %v", err)
	}
	return info
}

// readAll returns every batch from offset to the end as copies.
func readAll(tb testing.TB, l *Log, from int64) []Batch {
	tb.Helper()
	var out []Batch
	for {
		v, err := l.Read(from, 1<<20, -1)
		if err != nil {
			tb.Fatalf("Read(%d): %v", from, err)
		}
		if len(v.Data) == 0 {
			v.Release()
			return out
		}
		_, err = SplitBatches(v.Data, func(b Batch) error {
			out = append(out, append(Batch(nil), b...))
			return nil
		})
		if err != nil {
			tb.Fatalf("SplitBatches: %v", err)
		}
		from = v.Next
		v.Release()
	}
}

// crash simulates a process that dies: mappings and files are dropped
// without flushing, trimming or writing the clean-shutdown marker.
func (l *Log) crashForTest() {
	l.stopBackground()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.closePoint()
	l.mu.Lock()
	l.mu.closed = true
	segs := l.mu.segs
	l.mu.Unlock()
	for _, s := range segs {
		s.closeFiles()
	}
}

func errNotExist() error { return osErrNotExist }

var osErrNotExist = os.ErrNotExist

// holdFirstLogSync makes the first fsync of a .log file on fs wait: blocked
// is closed when it starts, and it returns once the caller closes release.
func holdFirstLogSync(fs *MemFS) (blocked, release chan struct{}) {
	var mu sync.Mutex
	armed := true
	blocked, release = make(chan struct{}), make(chan struct{})
	fs.SetFault(func(op FaultOp, path string) error {
		if op != OpSync || !strings.HasSuffix(path, ".log") {
			return nil
		}
		mu.Lock()
		hit := armed
		armed = false
		mu.Unlock()
		if hit {
			close(blocked)
			<-release
		}
		return nil
	})
	return blocked, release
}
