package segment

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkCompact measures a compaction pass over 32 MiB of sealed
// segments on this machine's disk (1 KiB payment-like values in batches of
// 16, over 1000 keys: most records superseded), against a raw baseline
// measured in the same run: writing and fsyncing as many bytes as the pass
// read to a new file in 1 MiB writes. It reports both rates and their ratio
// (compact_vs_raw_write: 1 would be a pass as fast as copying the log once).
func BenchmarkCompact(b *testing.B) {
	const total, keys, perBatch = 32 << 20, 1000, 16
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, 1024)
	for i := range value {
		value[i] = byte('a' + rng.IntN(26))
	}
	var compactTime, rawTime time.Duration
	var bytes int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		l := mustOpen(b, filepath.Join(dir, "log"), Options{SegmentBytes: 8 << 20, Sync: SyncNever})
		for l.Size() < total {
			bld := NewBuilder(BuilderOptions{})
			for j := 0; j < perBatch; j++ {
				bld.Add(1000, fmt.Appendf(nil, "acct-%04d", rng.IntN(keys)), value, nil)
			}
			mustAppend(b, l, bld.Build(), 1)
		}
		if err := l.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		b.StartTimer()
		res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000)})
		b.StopTimer()
		compactTime += time.Since(start)
		if err != nil || res.Segments == 0 {
			b.Fatalf("%+v %v", res, err)
		}
		bytes += res.BytesBefore
		l.Close()
		rawTime += rawWrite(b, filepath.Join(dir, "raw"), res.BytesBefore)
	}
	mbps := func(d time.Duration) float64 { return float64(bytes) / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(compactTime), "compact_MB/s")
	b.ReportMetric(mbps(rawTime), "raw_write_MB/s")
	b.ReportMetric(mbps(compactTime)/mbps(rawTime), "compact_vs_raw_write")
}

// rawWrite writes n bytes (rounded up to 1 MiB) to a new file at path in
// 1 MiB writes, fsyncs it and returns how long that took.
func rawWrite(b *testing.B, path string, n int64) time.Duration {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	start := time.Now()
	for off := int64(0); off < n; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf, off); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
