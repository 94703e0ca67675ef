package segment

import (
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Benchmarks compare against a baseline measured in the same run on the same
// bytes and report it with b.ReportMetric ("ratio" is log throughput divided
// by baseline throughput, or target/median for the lookup). Run:
//
//	go test ./segment -run '^$' -bench . -benchtime 1s -count 5

var benchDirs struct {
	sync.Mutex
	dirs []string
}

func benchTempDir(b *testing.B) string {
	dir, err := os.MkdirTemp("", "segment-bench-")
	if err != nil {
		b.Fatal(err)
	}
	benchDirs.Lock()
	benchDirs.dirs = append(benchDirs.dirs, dir)
	benchDirs.Unlock()
	return dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	benchDirs.Lock()
	for _, d := range benchDirs.dirs {
		os.RemoveAll(d)
	}
	benchDirs.Unlock()
	os.Exit(code)
}

// batchOf builds a batch of records of recSize bytes totalling about size bytes.
func batchOf(size, recSize int) Batch {
	bb := NewBuilder(BuilderOptions{})
	val := make([]byte, recSize)
	rand.New(rand.NewSource(1)).Read(val)
	for bb.Size()+recSize+16 <= size {
		bb.Add(time.Now().UnixMilli(), nil, val, nil)
	}
	return bb.Build()
}

// benchRounds interleaves the log and its baseline in rounds so that both
// see the same (noisy, shared) disk and page-cache conditions.
const benchRounds = 32

// BenchmarkAppendSyncNever: 1 KiB records in 64 KiB batches with SyncNever,
// against plain sequential os.File.Write of the same batch bytes.
func BenchmarkAppendSyncNever(b *testing.B) {
	batch := batchOf(64<<10, 1<<10)
	dir := benchTempDir(b)
	defer os.RemoveAll(dir)
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	var logDur, baseDur time.Duration
	for r := 0; r < benchRounds; r++ {
		n := b.N/benchRounds + boolInt(r < b.N%benchRounds)
		// Fresh files each round, removed afterwards: unlinking drops their
		// dirty pages, so neither side is throttled by the other's writeback.
		b.StopTimer()
		l := mustOpen(b, filepath.Join(dir, "log"), Options{Sync: SyncNever, Logger: quietLogger})
		f, err := os.Create(filepath.Join(dir, "baseline"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		// Alternate single operations so both sides see the same moment of
		// a noisy shared machine.
		for i := 0; i < n; i++ {
			t0 := time.Now()
			if _, err := l.Append(context.Background(), batch, 1); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, err := f.Write(batch); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			logDur += t1.Sub(t0)
			baseDur += t2.Sub(t1)
		}
		b.StopTimer()
		l.crashForTest() // no final flush: the baseline does not flush either
		f.Close()
		os.RemoveAll(filepath.Join(dir, "log"))
		os.Remove(filepath.Join(dir, "baseline"))
		b.StartTimer()
	}
	b.ReportMetric(float64(logDur.Nanoseconds())/float64(b.N), "log-ns/op")
	b.ReportMetric(float64(baseDur.Nanoseconds())/float64(b.N), "baseline-ns/op")
	b.ReportMetric(float64(baseDur)/float64(logDur), "ratio")
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// BenchmarkAppendSyncAlways32: 32 goroutines append 4 KiB batches (4 × 1 KiB
// records) and wait for durability (group commit), against replaying the same
// flush groups as write+fdatasync on a plain file, round by round.
func BenchmarkAppendSyncAlways32(b *testing.B) {
	const appenders = 32
	batch := batchOf(4<<10, 1<<10)
	dir := benchTempDir(b)
	defer os.RemoveAll(dir)
	var groups []int64
	var gmu sync.Mutex
	l := mustOpen(b, filepath.Join(dir, "log"), Options{Sync: SyncAlways, SegmentBytes: 256 << 20, Logger: quietLogger,
		OnFlush: func(_ time.Duration, n int64) {
			gmu.Lock()
			groups = append(groups, n)
			gmu.Unlock()
		}})
	f, err := os.Create(filepath.Join(dir, "baseline"))
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	var logDur, baseDur time.Duration
	flushes := 0
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for r := 0; r < benchRounds; r++ {
		n := b.N/benchRounds + boolInt(r < b.N%benchRounds)
		start := time.Now()
		var wg sync.WaitGroup
		for g := 0; g < appenders; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				own := append(Batch(nil), batch...)
				for i := g; i < n; i += appenders {
					info, err := l.Append(context.Background(), own, 1)
					if err == nil {
						err = l.WaitDurable(context.Background(), info.LastOffset+1)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			}(g)
		}
		wg.Wait()
		logDur += time.Since(start)
		gmu.Lock()
		round := groups
		groups = nil
		gmu.Unlock()
		flushes += len(round)
		start = time.Now()
		for _, n := range round {
			for int64(len(buf)) < n {
				buf = make([]byte, 2*len(buf))
			}
			if _, err := f.Write(buf[:n]); err != nil {
				b.Fatal(err)
			}
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				b.Fatal(err)
			}
		}
		baseDur += time.Since(start)
	}
	b.StopTimer()
	l.Close()
	f.Close()
	b.ReportMetric(float64(b.N)/float64(max(1, flushes)), "appends/flush")
	b.ReportMetric(float64(logDur.Nanoseconds())/float64(b.N), "log-ns/op")
	b.ReportMetric(float64(baseDur.Nanoseconds())/float64(b.N), "baseline-ns/op")
	b.ReportMetric(float64(baseDur)/float64(logDur), "ratio")
}

var seqLog struct {
	once sync.Once
	dir  string
	size int64
}

// BenchmarkSequentialRead reads a 128 MiB log from start to end through Read
// (zero copy) and touches every cache line, against ReadAt of the segment
// files into a buffer with the same touch.
func BenchmarkSequentialRead(b *testing.B) {
	seqLog.once.Do(func() {
		seqLog.dir = filepath.Join(benchTempDir(b), "seq")
		l := mustOpen(b, seqLog.dir, Options{Sync: SyncNever, SegmentBytes: 32 << 20, Logger: quietLogger})
		batch := batchOf(64<<10, 1<<10)
		for l.Size() < 128<<20 {
			if _, err := l.Append(context.Background(), batch, 1); err != nil {
				b.Fatal(err)
			}
		}
		seqLog.size = l.Size()
		l.Close()
	})
	l := mustOpen(b, seqLog.dir, Options{Sync: SyncNever, SegmentBytes: 32 << 20, Logger: quietLogger})
	defer l.Close()
	var sink uint64
	touch := func(p []byte) {
		for i := 0; i < len(p); i += 64 {
			sink += uint64(p[i])
		}
	}
	names, _ := filepath.Glob(filepath.Join(seqLog.dir, "*.log"))
	var files []*os.File
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, f)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	buf := make([]byte, 1<<20)
	logPass := func() {
		off := l.LogStartOffset()
		for {
			v, err := l.Read(off, 1<<20, -1)
			if err != nil {
				b.Fatal(err)
			}
			if len(v.Data) == 0 {
				v.Release()
				break
			}
			touch(v.Data)
			off = v.Next
			v.Release()
		}
	}
	basePass := func() {
		for _, f := range files {
			for pos := int64(0); ; {
				n, _ := f.ReadAt(buf, pos)
				if n == 0 {
					break
				}
				touch(buf[:n])
				pos += int64(n)
			}
		}
	}
	b.SetBytes(seqLog.size)
	b.ResetTimer()
	var logDur, baseDur time.Duration
	baseN := 0
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		logPass()
		logDur += time.Since(t0)
		// A baseline pass after every 8th log pass (it is much slower), so
		// both are sampled across the whole run.
		if i%8 == 0 {
			b.StopTimer()
			t0 = time.Now()
			basePass()
			baseDur += time.Since(t0)
			baseN++
			b.StartTimer()
		}
	}
	b.StopTimer()
	_ = sink
	logPer := float64(logDur) / float64(b.N)
	basePer := float64(baseDur) / float64(baseN)
	b.ReportMetric(basePer, "baseline-ns/op")
	b.ReportMetric(basePer/logPer, "ratio")
}

var lookupLog struct {
	once sync.Once
	dir  string
}

// BenchmarkRandomLookup10M: Read of the batch holding a random offset in a
// 10-million-record log (100 records of 8 bytes per batch). Reports the
// median latency; the target is 5 µs ("ratio" = 5 µs / median).
func BenchmarkRandomLookup10M(b *testing.B) {
	const records = 10_000_000
	lookupLog.once.Do(func() {
		lookupLog.dir = filepath.Join(benchTempDir(b), "lookup")
		l := mustOpen(b, lookupLog.dir, Options{Sync: SyncNever, SegmentBytes: 64 << 20, Logger: quietLogger})
		bb := NewBuilder(BuilderOptions{})
		for i := 0; i < 100; i++ {
			bb.Add(int64(i), nil, []byte("12345678"), nil)
		}
		batch := bb.Build()
		for l.LogEndOffset() < records {
			if _, err := l.Append(context.Background(), batch, 1); err != nil {
				b.Fatal(err)
			}
		}
		l.Close()
	})
	l := mustOpen(b, lookupLog.dir, Options{Sync: SyncNever, SegmentBytes: 64 << 20, Logger: quietLogger})
	defer l.Close()
	rng := rand.New(rand.NewSource(1))
	// Warm the mappings once.
	for off := int64(0); off < records; off += 1000 {
		v, _ := l.Read(off, 1, -1)
		v.Release()
	}
	lat := make([]time.Duration, b.N)
	offs := make([]int64, b.N)
	for i := range offs {
		offs[i] = rng.Int63n(records)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		v, err := l.Read(offs[i], 1, -1)
		if err != nil || len(v.Data) == 0 {
			b.Fatal(err)
		}
		v.Release()
		lat[i] = time.Since(t0)
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	med := lat[len(lat)/2]
	b.ReportMetric(float64(med.Nanoseconds()), "median-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(5000/float64(max(1, med.Nanoseconds())), "ratio")
}

var recLog struct {
	once sync.Once
	dir  string
	end  int64
}

// BenchmarkRecoveryScan1GiB: Open after an unclean shutdown of a 1 GiB active
// segment with a torn tail, file in the page cache. Reports GB/s; the target
// is 1 GB/s ("ratio" = GB/s / 1).
func BenchmarkRecoveryScan1GiB(b *testing.B) {
	const size = 1 << 30
	opts := Options{Sync: SyncNever, SegmentBytes: size + 1<<20, Logger: quietLogger}
	recLog.once.Do(func() {
		recLog.dir = filepath.Join(benchTempDir(b), "recovery")
		l := mustOpen(b, recLog.dir, opts)
		batch := batchOf(64<<10, 1<<10)
		for l.Size()+int64(len(batch)) <= size {
			if _, err := l.Append(context.Background(), batch, 1); err != nil {
				b.Fatal(err)
			}
		}
		recLog.end = l.Size()
		if err := l.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
		l.crashForTest()
	})
	path := filepath.Join(recLog.dir, segmentName(0)+".log")
	torn := batchOf(64<<10, 1<<10)[:5000]
	b.SetBytes(recLog.end)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteAt(torn, recLog.end); err != nil {
			b.Fatal(err)
		}
		f.Close()
		b.StartTimer()
		l, err := Open(context.Background(), recLog.dir, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if l.Size() != recLog.end {
			b.Fatalf("recovered %d bytes, want %d", l.Size(), recLog.end)
		}
		l.crashForTest()
		b.StartTimer()
	}
	b.StopTimer()
	sec := b.Elapsed().Seconds() / float64(b.N)
	gbs := float64(recLog.end) / 1e9 / sec
	b.ReportMetric(gbs, "GB/s")
	b.ReportMetric(gbs/1.0, "ratio")
}

// BenchmarkRestartAfterKill256MiB: Open after a process kill of a log whose
// active segment holds 256 MiB (64 KiB batches appended under SyncAlways,
// as a follower writes them), with the segment's pages dropped from the
// page cache first (as the node's page-cache drop leaves them, or as after
// a machine crash). "point" recovers from the active recovery point, "scan"
// with the point removed (the whole segment scanned, as before it existed);
// each reports ms per Open and the MB it scanned. ratio = scan ms / point
// ms, measured in the same run.
func BenchmarkRestartAfterKill256MiB(b *testing.B) {
	const size = 256 << 20
	dir := filepath.Join(benchTempDir(b), "restart")
	opts := Options{Sync: SyncAlways, SegmentBytes: size + 1<<20, Logger: quietLogger}
	l := mustOpen(b, dir, opts)
	batch := batchOf(64<<10, 1<<10)
	for l.Size()+int64(len(batch)) <= size {
		info := mustAppend(b, l, batch, 1)
		if err := l.WaitDurable(context.Background(), info.LastOffset+1); err != nil {
			b.Fatal(err)
		}
	}
	for l.point.running.Load() {
		time.Sleep(time.Millisecond)
	}
	l.crashForTest()
	// A scan rewrites the index files: each open starts from these.
	saved := map[string][]byte{}
	for _, name := range []string{activePointFile, segmentName(0) + ".index", segmentName(0) + ".timeindex"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		saved[name] = data
	}
	open := func(withPoint bool) (ms float64, scanned int64) {
		b.Helper()
		for name, data := range saved {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		if !withPoint {
			if err := os.Remove(filepath.Join(dir, activePointFile)); err != nil {
				b.Fatal(err)
			}
		}
		f, err := os.OpenFile(filepath.Join(dir, segmentName(0)+".log"), os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := (&osFile{f: f}).DropCache(0, size+1<<20); err != nil {
			b.Fatal(err)
		}
		f.Close()
		start := time.Now()
		l := mustOpen(b, dir, opts)
		ms = float64(time.Since(start).Microseconds()) / 1000
		scanned = l.opened.scanned
		if withPoint != (l.opened.resumedAt > 0) {
			b.Fatalf("with point %v: resumed at %d", withPoint, l.opened.resumedAt)
		}
		l.crashForTest()
		return ms, scanned
	}
	var pointMs, scanMs []float64
	var pointScanned, scanScanned int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var ms float64
		ms, pointScanned = open(true)
		pointMs = append(pointMs, ms)
		ms, scanScanned = open(false)
		scanMs = append(scanMs, ms)
	}
	b.StopTimer()
	med := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	b.ReportMetric(med(pointMs), "point-ms")
	b.ReportMetric(med(scanMs), "scan-ms")
	b.ReportMetric(float64(pointScanned)/1e6, "point-scanned-MB")
	b.ReportMetric(float64(scanScanned)/1e6, "scan-scanned-MB")
	b.ReportMetric(med(scanMs)/med(pointMs), "ratio")
}
