package segment

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// buildClosedLog writes nb batches into a MemFS log with small segments,
// closes it cleanly and returns the fs, the batches and the options.
func buildClosedLog(t *testing.T, nb int, segBytes int64) (*MemFS, []Batch, Options) {
	t.Helper()
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: segBytes, IndexInterval: 200, MaxIndexBytes: 1024, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	var bs []Batch
	for i := 0; i < nb; i++ {
		b := testBatch(i, 1+i%4, int64(i))
		mustAppend(t, l, b, int32(1+i/7))
		bs = append(bs, append(Batch(nil), b...))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return fs, bs, opts
}

// logPaths lists the log's segment files in offset order.
func logPaths(t *testing.T, fs *MemFS) []string {
	t.Helper()
	names, err := fs.ReadDir("/log")
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, n := range names {
		if filepath.Ext(n) == ".log" {
			logs = append(logs, "/log/"+n)
		}
	}
	return logs
}

func activeLogPath(t *testing.T, fs *MemFS) string {
	logs := logPaths(t, fs)
	if len(logs) == 0 {
		return "/log/"
	}
	return logs[len(logs)-1]
}

// middleSegment is the second of at least three segment files: a sealed
// segment with others on both sides.
func middleSegment(t *testing.T, fs *MemFS) string {
	t.Helper()
	logs := logPaths(t, fs)
	if len(logs) < 3 {
		t.Fatalf("want >= 3 segments, have %v", logs)
	}
	return logs[1]
}

// expectPrefix opens the log and checks it holds exactly want.
func expectPrefix(t *testing.T, fs *MemFS, opts Options, want []Batch, what string) {
	t.Helper()
	opts.FS = fs
	l, err := Open(ctx, "/log", opts)
	if err != nil {
		t.Fatalf("%s: Open: %v", what, err)
	}
	defer l.Close()
	got := readAll(t, l, 0)
	if len(got) != len(want) {
		t.Fatalf("%s: recovered %d batches, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: batch %d differs", what, i)
		}
	}
	// The log accepts appends at the right offset afterwards.
	info := mustAppend(t, l, testBatch(999, 2, 5), 9)
	var wantBase int64
	if n := len(want); n > 0 {
		wantBase = want[n-1].LastOffset() + 1
	}
	if info.BaseOffset != wantBase {
		t.Fatalf("%s: append after recovery at %d, want %d", what, info.BaseOffset, wantBase)
	}
}

// TestCrashCutEveryByte cuts the active segment at every byte of its last
// batch, both as a short file and as a preallocated file with zeros after the
// cut, and checks that recovery keeps exactly the batches before it.
func TestCrashCutEveryByte(t *testing.T) {
	base, bs, opts := buildClosedLog(t, 40, 2048)
	path := activeLogPath(t, base)
	last := bs[len(bs)-1]
	var orig []byte
	base.Corrupt(path, func(d []byte) []byte { orig = append([]byte(nil), d...); return d })
	size := len(orig)
	start := size - len(last)
	for cut := start; cut <= size; cut++ {
		for _, zeros := range []bool{false, true} {
			want := bs
			// Zeroing bytes that were zero already changes nothing.
			if cut < size && !(zeros && allZero(orig[cut:])) {
				want = bs[:len(bs)-1]
			}
			fs := base.CrashClone()
			if err := fs.Remove("/log/" + cleanShutdownFile); err != nil {
				t.Fatal(err)
			}
			fs.Corrupt(path, func(d []byte) []byte {
				d = d[:cut]
				if zeros {
					d = append(d, make([]byte, 4096)...)
				}
				return d
			})
			expectPrefix(t, fs, opts, want, fmt.Sprintf("cut at %d of [%d,%d] zeros=%v", cut, start, size, zeros))
		}
	}
}

// TestCrashFlipBits flips random bits in batches of the active segment and
// checks that recovery keeps exactly the batches before the damaged one. The
// leader-epoch field is not covered by the CRC and is skipped.
func TestCrashFlipBits(t *testing.T) {
	base, bs, opts := buildClosedLog(t, 40, 2048)
	path := activeLogPath(t, base)
	var data []byte
	base.Corrupt(path, func(d []byte) []byte { data = append([]byte(nil), d...); return d })
	// Locate the batches of the active segment.
	type loc struct{ pos, idx int }
	var locs []loc
	first := len(bs) - 1
	for size := len(data); size > 0; first-- {
		size -= len(bs[first])
		if size == 0 {
			break
		}
	}
	pos := 0
	for i := first; i < len(bs); i++ {
		locs = append(locs, loc{pos, i})
		pos += len(bs[i])
	}
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 300; trial++ {
		lc := locs[rng.Intn(len(locs))]
		n := len(bs[lc.idx])
		off := rng.Intn(n)
		if off >= offLeaderEpoch && off < offLeaderEpoch+4 {
			continue
		}
		bit := byte(1) << rng.Intn(8)
		fs := base.CrashClone()
		if err := fs.Remove("/log/" + cleanShutdownFile); err != nil {
			t.Fatal(err)
		}
		fs.Corrupt(path, func(d []byte) []byte { d[lc.pos+off] ^= bit; return d })
		expectPrefix(t, fs, opts, bs[:lc.idx], "flip")
	}
}

// TestCorruptSealedSegment: a bad batch inside a sealed segment that recovery
// scans is a *CorruptionError naming the file and position, or a truncation
// with TruncateOnCorruption.
func TestCorruptSealedSegment(t *testing.T) {
	base, bs, opts := buildClosedLog(t, 60, 2048)
	victim := middleSegment(t, base)
	// Find the third batch of the victim segment.
	var data []byte
	base.Corrupt(victim, func(d []byte) []byte { data = append([]byte(nil), d...); return d })
	b0, _ := nextBatch(data, 0)
	b1, _ := nextBatch(data, len(b0))
	pos := len(b0) + len(b1)
	b2, _ := nextBatch(data, pos)
	badOffset := b2.BaseOffset()

	damage := func() *MemFS {
		fs := base.CrashClone()
		_ = fs.Remove("/log/" + cleanShutdownFile)
		_ = fs.Remove("/log/" + recoveryPointFile) // scan every segment
		fs.Corrupt(victim, func(d []byte) []byte { d[pos+HeaderSize+3] ^= 0x10; return d })
		return fs
	}
	o := opts
	o.FS = damage()
	_, err := Open(ctx, "/log", o)
	var cerr *CorruptionError
	if !errors.As(err, &cerr) || !IsCorruption(err) {
		t.Fatalf("Open: %v, want *CorruptionError", err)
	}
	if cerr.File != victim || cerr.Position != int64(pos) || cerr.Offset != badOffset {
		t.Fatalf("CorruptionError %+v, want file %s pos %d offset %d", cerr, victim, pos, badOffset)
	}
	// The data is untouched by the failed open; with the option it truncates.
	o.TruncateOnCorruption = true
	var want []Batch
	for _, b := range bs {
		if b.BaseOffset() < badOffset {
			want = append(want, b)
		}
	}
	expectPrefix(t, o.FS.(*MemFS), o, want, "truncate on corruption")

	// RepairCorruption truncates too, reports the log torn, and first sets
	// aside what it takes out: the damaged segment whole, the later ones.
	o = opts
	fs := damage()
	o.FS, o.RepairCorruption = fs, true
	l, err := Open(ctx, "/log", o)
	if err != nil {
		t.Fatalf("Open with RepairCorruption: %v", err)
	}
	if !l.TornAtOpen() || l.LogEndOffset() != badOffset {
		t.Fatalf("repaired: torn %v, end %d; want torn, ending at %d", l.TornAtOpen(), l.LogEndOffset(), badOffset)
	}
	l.Close()
	q := "/log/" + ScrubQuarantinePrefix + filepath.Base(strings.TrimSuffix(victim, ".log"))
	kept, err := fs.ReadDir(q)
	if err != nil || !slices.Contains(kept, filepath.Base(victim)) {
		t.Fatalf("set aside %v (%v); want the damaged segment among them", kept, err)
	}
	for _, p := range logPaths(t, base) {
		if p > victim && !slices.Contains(kept, filepath.Base(p)) {
			t.Fatalf("set aside %v; want %s, after the damaged segment, among them", kept, p)
		}
	}
	expectPrefix(t, fs, o, want, "repair corruption")
}

// TestDamagedTrustedSegment: after a clean shutdown a sealed segment is
// trusted without a scan (only its index and the tail after its last index
// entry are checked), so damage inside it is found by the reads that walk
// over it. They must return a *CorruptionError, never panic or serve the
// bytes of a misaligned walk.
func TestDamagedTrustedSegment(t *testing.T) {
	base, bs, opts := buildClosedLog(t, 60, 2048)
	victim := middleSegment(t, base)
	var data []byte
	base.Corrupt(victim, func(d []byte) []byte { data = append([]byte(nil), d...); return d })
	b0, _ := nextBatch(data, 0)
	first, last := b0.BaseOffset(), b0.LastOffset()

	for _, damage := range []struct {
		name string
		fn   func(d []byte)
	}{
		{"length grown past the segment", func(d []byte) { d[offLength+1] ^= 0x40 }},
		{"length shrunk into the batch", func(d []byte) { be.PutUint32(d[offLength:], uint32(minLength)) }},
		{"length moved onto record bytes", func(d []byte) { be.PutUint32(d[offLength:], be.Uint32(d[offLength:])+7) }},
	} {
		fs := base.CrashClone() // keeps the clean-shutdown marker
		fs.Corrupt(victim, func(d []byte) []byte { damage.fn(d); return d })
		o := opts
		o.FS = fs
		l, err := Open(ctx, "/log", o)
		if err != nil {
			t.Fatalf("%s: Open: %v", damage.name, err)
		}
		for off := first; off <= last+3; off++ {
			v, err := l.Read(off, 1<<20, -1)
			if off <= last && !IsCorruption(err) {
				t.Fatalf("%s: Read(%d) = %v, want a corruption error", damage.name, off, err)
			}
			var cerr *CorruptionError
			if err != nil && (!errors.As(err, &cerr) || cerr.File != victim) {
				t.Fatalf("%s: Read(%d): %v, want a *CorruptionError naming %s", damage.name, off, err, victim)
			}
			if err == nil {
				if _, err := SplitBatches(v.Data, nil); err != nil {
					t.Fatalf("%s: Read(%d) served a bad batch: %v", damage.name, off, err)
				}
				v.Release()
			}
		}
		// The other segments read as written.
		got := readAll(t, l, bs[len(bs)-1].BaseOffset())
		if len(got) != 1 || !bytes.Equal(got[0], bs[len(bs)-1]) {
			t.Fatalf("%s: last batch not readable", damage.name)
		}
		if _, err := l.OffsetForTimestamp(int64(len(bs))); err != nil && !IsCorruption(err) {
			t.Fatalf("%s: OffsetForTimestamp: %v", damage.name, err)
		}
		// A truncation walking over the damage fails; one that stops at the
		// damaged batch's header may cut there.
		if end, err := l.TruncateTo(ctx, last); err != nil && !IsCorruption(err) {
			t.Fatalf("%s: TruncateTo(%d): %v", damage.name, last, err)
		} else if err == nil {
			if end != first {
				t.Fatalf("%s: TruncateTo(%d) = %d, want %d", damage.name, last, end, first)
			}
			readAll(t, l, l.LogStartOffset())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
