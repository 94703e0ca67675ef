package segment

import (
	"strings"
	"testing"
	"time"
)

// BenchmarkAppendDuringDeletion measures how long appends wait while a
// deletion (DeleteBefore of three sealed segments) runs on a disk where
// every fsync of a non-segment file, directory fsync, rename and unlink
// takes slowOp (MemFS with an injected delay: a busy disk). It reports the
// longest append of each pass ("max-append-ms", the worst over the run)
// beside the deletion's own time ("deletion-ms"). Appends come every
// 200µs. Run:
//
//	go test ./segment -run '^$' -bench AppendDuringDeletion -benchtime 20x
func BenchmarkAppendDuringDeletion(b *testing.B) {
	const slowOp = 5 * time.Millisecond
	var worst, total time.Duration
	for range b.N {
		b.StopTimer()
		fs := NewMemFS()
		opts := Options{FS: fs, SegmentBytes: 1024, IndexInterval: 200, MaxIndexBytes: 1024, Logger: quietLogger}
		l := mustOpen(b, "/log", opts)
		for i := 0; len(l.Segments()) < 4; i++ {
			mustAppend(b, l, testBatch(i, 1, int64(i)), 1)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		// The appends below (paced, as a producer's) neither roll nor fill the index.
		opts.SegmentBytes, opts.MaxIndexBytes = 8<<20, 1<<20
		l = mustOpen(b, "/log", opts)
		upTo := l.Segments()[3]
		fs.SetFault(func(op FaultOp, path string) error {
			switch {
			case op == OpSync && strings.HasSuffix(path, ".log"):
			case op == OpSync || op == OpSyncDir || op == OpRename || op == OpRemove:
				time.Sleep(slowOp)
			}
			return nil
		})
		b.StartTimer()
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- l.DeleteBefore(ctx, upTo) }()
		var longest time.Duration
	loop:
		for i := 0; ; i++ {
			select {
			case err := <-done:
				if err != nil {
					b.Fatal(err)
				}
				break loop
			default:
			}
			t0 := time.Now()
			if _, err := l.Append(ctx, testBatch(i, 1, 1), 1); err != nil {
				b.Fatal(err)
			}
			longest = max(longest, time.Since(t0))
			time.Sleep(200 * time.Microsecond)
		}
		total += time.Since(start)
		b.StopTimer()
		worst = max(worst, longest)
		fs.SetFault(nil)
		l.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "max-append-ms")
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "deletion-ms")
}
