package segment

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

// model is the in-memory truth the randomized test compares the log against.
type model struct {
	batches  []Batch // copies, in offset order
	logStart int64
	leo      int64
	ep       epochCache // the pure cache, driven by the same events
}

func (m *model) epochs() []EpochEntry { return m.ep.entries }

// batchIndex returns the index of the batch containing offset.
func (m *model) batchIndex(offset int64) int {
	for i, b := range m.batches {
		if b.LastOffset() >= offset {
			return i
		}
	}
	return len(m.batches)
}

func (m *model) truncateTo(offset int64) {
	if offset >= m.leo {
		return
	}
	if offset < m.logStart {
		m.batches, m.logStart, m.leo, m.ep = nil, offset, offset, epochCache{}
		return
	}
	i := m.batchIndex(offset)
	m.leo = m.batches[i].BaseOffset()
	m.batches = m.batches[:i]
	m.logStart = min(m.logStart, m.leo)
	m.ep.truncateFromEnd(m.leo)
}

// dropBelow removes batches wholly below the log start that the log may have
// deleted; batches are kept in the model as long as the log can still serve
// them, so only the range [logStart, leo) is compared.
func checkModel(t *testing.T, l *Log, m *model, rng *rand.Rand, step int, what string) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("step %d after %s: %s", step, what, fmt.Sprintf(format, args...))
	}
	if got := l.LogEndOffset(); got != m.leo {
		fail("LEO %d, model %d", got, m.leo)
	}
	if got := l.LogStartOffset(); got != m.logStart {
		fail("log start %d, model %d", got, m.logStart)
	}
	if got, want := l.Epochs(), m.epochs(); fmt.Sprint(got) != fmt.Sprint(want) {
		fail("epochs %v, model %v", got, want)
	}
	// Read from a few random offsets and from the start.
	offs := []int64{m.logStart}
	for i := 0; i < 3 && m.leo > m.logStart; i++ {
		offs = append(offs, m.logStart+rng.Int63n(m.leo-m.logStart))
	}
	for _, off := range offs {
		maxBytes := 1 + rng.Intn(4096)
		v, err := l.Read(off, maxBytes, -1)
		if err != nil {
			fail("Read(%d): %v", off, err)
		}
		i := m.batchIndex(off)
		var n int
		_, err = SplitBatches(v.Data, func(b Batch) error {
			if i+n >= len(m.batches) || !bytes.Equal(b, m.batches[i+n]) {
				return fmt.Errorf("batch %d at offset %d differs from model", n, b.BaseOffset())
			}
			n++
			return nil
		})
		if err != nil {
			fail("Read(%d): %v", off, err)
		}
		if n == 0 && i < len(m.batches) {
			fail("Read(%d) returned nothing", off)
		}
		if n > 1 && len(v.Data) > maxBytes {
			fail("Read(%d, %d) returned %d bytes in %d batches", off, maxBytes, len(v.Data), n)
		}
		v.Release()
	}
	if _, err := l.Read(m.leo+1, 100, -1); err == nil {
		fail("Read past LEO succeeded")
	}
}

func TestModelRandomized(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, int64(seed), 250, false) })
	}
}

// TestModelRandomizedOS runs the model on real files; a crash is a process
// kill (the page cache survives).
func TestModelRandomizedOS(t *testing.T) {
	for seed := 100; seed < 103; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, int64(seed), 150, true) })
	}
}

func runModel(t *testing.T, seed int64, steps int, osfs bool) {
	rng := rand.New(rand.NewSource(seed))
	var fs FS = NewMemFS()
	dir := "/log"
	if osfs {
		fs, dir = OSFS{}, t.TempDir()
	}
	opts := Options{FS: fs, SegmentBytes: 1024 + rng.Int63n(4096), IndexInterval: rng.Intn(512),
		MaxIndexBytes: 64 + rng.Intn(256), InitialOffset: rng.Int63n(3), Sync: SyncAlways,
		ActivePointBytes: 1 + rng.Int63n(2048)}
	l := mustOpen(t, dir, opts)
	m := &model{logStart: opts.InitialOffset, leo: opts.InitialOffset}
	epoch := int32(0)
	var views []*View
	for step := 0; step < steps; step++ {
		var what string
		switch p := rng.Intn(100); {
		case p < 45:
			if rng.Intn(10) == 0 {
				epoch++
			}
			b := testBatch(step, 1+rng.Intn(6), int64(step*10))
			if rng.Intn(8) == 0 { // a big record
				bb := NewBuilder(BuilderOptions{})
				bb.Add(int64(step*10), nil, bytes.Repeat([]byte{byte(step)}, rng.Intn(3000)), nil)
				b = bb.Build()
			}
			var info AppendInfo
			var err error
			if rng.Intn(3) == 0 {
				b.SetBaseOffset(m.leo)
				b.SetLeaderEpoch(epoch)
				info, err = l.AppendVerbatim(ctx, b)
				what = "append verbatim"
			} else {
				info, err = l.Append(ctx, b, epoch)
				what = "append"
			}
			if err != nil {
				t.Fatalf("step %d %s: %v", step, what, err)
			}
			if info.BaseOffset != m.leo {
				t.Fatalf("step %d: base %d, want %d", step, info.BaseOffset, m.leo)
			}
			if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
				t.Fatal(err)
			}
			m.batches = append(m.batches, append(Batch(nil), b...))
			m.leo = info.LastOffset + 1
			m.ep.assign(epoch, info.BaseOffset)
		case p < 55:
			if m.leo == m.logStart {
				continue
			}
			off := m.logStart + rng.Int63n(m.leo-m.logStart+1)
			what = fmt.Sprintf("truncate to %d", off)
			got, err := l.TruncateTo(ctx, off)
			if err != nil {
				t.Fatalf("step %d %s: %v", step, what, err)
			}
			m.truncateTo(off)
			if got != m.leo {
				t.Fatalf("step %d %s: new LEO %d, model %d", step, what, got, m.leo)
			}
		case p < 60:
			off := m.logStart + rng.Int63n(m.leo-m.logStart+1)
			what = fmt.Sprintf("delete before %d", off)
			if err := l.DeleteBefore(ctx, off); err != nil {
				t.Fatalf("step %d %s: %v", step, what, err)
			}
			if off > m.logStart {
				m.logStart = off
				m.ep.truncateFromStart(off)
			}
		case p < 63:
			what = "retention"
			l.opts.RetentionBytes = rng.Int63n(8000)
			if _, err := l.ApplyRetention(ctx); err != nil {
				t.Fatal(err)
			}
			l.opts.RetentionBytes = -1
			segs := l.Segments()
			if segs[0] > m.logStart {
				m.logStart = segs[0]
				m.ep.truncateFromStart(segs[0])
			}
		case p < 65:
			off := m.leo + rng.Int63n(100) - 20
			if off < 0 {
				off = 0
			}
			what = fmt.Sprintf("truncate fully at %d", off)
			if err := l.TruncateFullyAndStartAt(ctx, off); err != nil {
				t.Fatal(err)
			}
			m.batches, m.logStart, m.leo, m.ep = nil, off, off, epochCache{}
		case p < 72:
			// Hold a view across later mutations; it must stay intact.
			if m.leo > m.logStart {
				off := m.logStart + rng.Int63n(m.leo-m.logStart)
				v, err := l.Read(off, 2000, -1)
				if err != nil {
					t.Fatal(err)
				}
				views = append(views, v)
				// compare v.Data (the mapping) later against this copy
				views = append(views, &View{Data: append([]byte(nil), v.Data...)})
			}
			continue
		case p < 80:
			for i := 0; i+1 < len(views); i += 2 {
				if !bytes.Equal(views[i].Data, views[i+1].Data) {
					t.Fatalf("step %d: a held view changed", step)
				}
				views[i].Release()
			}
			views = views[:0]
			continue
		case p < 90:
			what = "close and reopen"
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, dir, opts)
		default:
			what = "crash and recover"
			l.crashForTest()
			if mfs, ok := fs.(*MemFS); ok {
				fs = mfs.CrashClone()
				opts.FS = fs
			}
			l = mustOpen(t, dir, opts)
		}
		checkModel(t, l, m, rng, step, what)
		for i := 0; i+1 < len(views); i += 2 {
			if !bytes.Equal(views[i].Data, views[i+1].Data) {
				t.Fatalf("step %d %s: a held view changed", step, what)
			}
		}
	}
	for i := 0; i+1 < len(views); i += 2 {
		if !bytes.Equal(views[i].Data, views[i+1].Data) {
			t.Fatalf("a held view changed")
		}
		views[i].Release()
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
