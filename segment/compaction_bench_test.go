package segment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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

// BenchmarkAppendBesideCompact measures what a compaction pass costs the
// writes beside it: the latency of appending and fsyncing 16 KiB batches
// (16 payment records of 1 KiB) to another log on the same disk, alone,
// while an unthrottled pass runs over 32 MiB, and while a pass throttled
// to 16 MB/s (CompactOptions.Throttle, as --log-cleaner-io-max-bytes-per-
// second does it) runs. It reports each one's median and p99 append
// latency and the p99 ratios to appending alone in the same run, and the
// two passes' durations.
func BenchmarkAppendBesideCompact(b *testing.B) {
	const total, keys, perBatch, rate = 32 << 20, 1000, 16, 16 << 20
	rng := rand.New(rand.NewPCG(3, 4))
	value := make([]byte, 1024)
	for i := range value {
		value[i] = byte('a' + rng.IntN(26))
	}
	batch := func() Batch {
		bld := NewBuilder(BuilderOptions{})
		for j := 0; j < perBatch; j++ {
			bld.Add(1000, fmt.Appendf(nil, "acct-%04d", rng.IntN(keys)), value, nil)
		}
		return bld.Build()
	}
	// appendWhile appends and fsyncs batches to l until done is closed
	// (at least atLeast of them) and returns each one's latency.
	appendWhile := func(l *Log, done <-chan struct{}, atLeast int) []time.Duration {
		var lat []time.Duration
		for {
			select {
			case <-done:
				if len(lat) >= atLeast {
					return lat
				}
			default:
			}
			bt := batch()
			start := time.Now()
			mustAppend(b, l, bt, 1)
			if err := l.Sync(ctx); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
	}
	throttle := func() func(context.Context, int) error {
		start, charged := time.Now(), 0
		return func(_ context.Context, n int) error {
			charged += n
			if ahead := time.Duration(float64(charged-rate)/rate*float64(time.Second)) - time.Since(start); ahead > 0 {
				time.Sleep(ahead) // a bucket of a second's worth, as the broker's
			}
			return nil
		}
	}
	var alone, beside, throttled []time.Duration
	var passFree, passThrottled time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		prod := mustOpen(b, filepath.Join(dir, "produce"), Options{SegmentBytes: 64 << 20, Sync: SyncNever})
		closed := make(chan struct{})
		close(closed)
		alone = append(alone, appendWhile(prod, closed, 500)...)
		for _, th := range []bool{false, true} {
			l := mustOpen(b, filepath.Join(dir, fmt.Sprint("log", th)), Options{SegmentBytes: 8 << 20, Sync: SyncNever})
			for l.Size() < total {
				mustAppend(b, l, batch(), 1)
			}
			if err := l.Sync(ctx); err != nil {
				b.Fatal(err)
			}
			o := CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000)}
			if th {
				o.Throttle = throttle()
			}
			done := make(chan struct{})
			var took time.Duration
			go func() {
				defer close(done)
				start := time.Now()
				if res, err := l.Compact(ctx, o); err != nil || res.Segments == 0 {
					b.Errorf("%+v %v", res, err)
				}
				took = time.Since(start)
			}()
			b.StartTimer()
			lat := appendWhile(prod, done, 0)
			b.StopTimer()
			if th {
				throttled, passThrottled = append(throttled, lat...), passThrottled+took
			} else {
				beside, passFree = append(beside, lat...), passFree+took
			}
			l.Close()
		}
		prod.Close()
	}
	pct := func(lat []time.Duration, q float64) float64 {
		s := slices.Clone(lat)
		slices.Sort(s)
		return float64(s[int(q*float64(len(s)-1))].Microseconds())
	}
	b.ReportMetric(pct(alone, 0.5), "alone_p50_us")
	b.ReportMetric(pct(alone, 0.99), "alone_p99_us")
	b.ReportMetric(pct(beside, 0.5), "beside_p50_us")
	b.ReportMetric(pct(beside, 0.99), "beside_p99_us")
	b.ReportMetric(pct(throttled, 0.5), "throttled_p50_us")
	b.ReportMetric(pct(throttled, 0.99), "throttled_p99_us")
	b.ReportMetric(pct(beside, 0.99)/pct(alone, 0.99), "beside_vs_alone_p99")
	b.ReportMetric(pct(throttled, 0.99)/pct(alone, 0.99), "throttled_vs_alone_p99")
	b.ReportMetric(passFree.Seconds()/float64(b.N), "pass_s")
	b.ReportMetric(passThrottled.Seconds()/float64(b.N), "throttled_pass_s")
}
