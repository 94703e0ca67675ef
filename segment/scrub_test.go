package segment

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// scrubAll runs Scrub passes of maxBytes steps until one is done or fails.
func scrubAll(t *testing.T, l *Log, step int64) (checked int64, err error) {
	t.Helper()
	var p ScrubPoint
	for range 100000 {
		next, n, done, err := l.Scrub(p, step)
		checked += n
		if err != nil || done {
			return checked, err
		}
		if next == p {
			t.Fatalf("Scrub made no progress at %+v", p)
		}
		p = next
	}
	t.Fatal("Scrub never finished its pass")
	return 0, nil
}

// A scrub checks every batch of every sealed segment, not the active one.
func TestScrubCleanLog(t *testing.T) {
	fs, _, opts := buildClosedLog(t, 60, 2048)
	opts.FS = fs
	l := mustOpen(t, "/log", opts)
	defer l.Close()
	var sealed int64
	l.mu.RLock()
	for _, s := range l.mu.segs[:len(l.mu.segs)-1] {
		sealed += s.size
	}
	l.mu.RUnlock()
	for _, step := range []int64{1, 300, 1 << 20} {
		checked, err := scrubAll(t, l, step)
		if err != nil || checked != sealed || sealed == 0 {
			t.Fatalf("step %d: checked %d bytes, err %v; want the %d bytes of the sealed segments", step, checked, err, sealed)
		}
	}
}

// A batch damaged inside a trusted sealed segment (a clean shutdown, so
// Open does not scan it) is found by the scrub, which fails the log; the
// next Open truncates at it and reports the log torn, so the replica
// fetches the rest again; the Open after that is a plain one.
func TestScrubFindsCorruptionAndOpenRepairs(t *testing.T) {
	fs, bs, opts := buildClosedLog(t, 60, 2048)
	victim := middleSegment(t, fs)
	var data []byte
	fs.Corrupt(victim, func(d []byte) []byte { data = append([]byte(nil), d...); return d })
	b0, _ := nextBatch(data, 0)
	b1, _ := nextBatch(data, len(b0))
	pos := len(b0) + len(b1)
	b2, _ := nextBatch(data, pos)
	badOffset := b2.BaseOffset()
	fs.Corrupt(victim, func(d []byte) []byte { d[pos+HeaderSize+3] ^= 0x10; return d })

	var failedWith error
	opts.FS = fs
	opts.OnFailure = func(_ string, err error) { failedWith = err }
	l := mustOpen(t, "/log", opts)
	if l.TornAtOpen() {
		t.Fatal("the damaged segment was scanned at open: the scrub is not what found it")
	}
	_, err := scrubAll(t, l, 1<<20)
	var cerr *CorruptionError
	if !errors.Is(err, ErrScrubCorrupt) || !errors.As(err, &cerr) || cerr.File != victim || cerr.Position != int64(pos) ||
		cerr.Offset != badOffset {
		t.Fatalf("scrub: %v; want ErrScrubCorrupt at %s byte %d offset %d", err, victim, pos, badOffset)
	}
	if !errors.Is(failedWith, ErrScrubCorrupt) || l.Failed() == nil {
		t.Fatalf("OnFailure got %v, Failed %v; want the log failed by the scrub", failedWith, l.Failed())
	}
	if _, err := l.Append(ctx, testBatch(900, 1, 1), 9); err == nil {
		t.Fatal("the failed log took an append")
	}
	l.Close()
	if _, ok, _ := readOffsetCheckpoint(fs, "/log/"+scrubMarkFile); !ok {
		t.Fatal("no mark for repair")
	}

	before := map[string][]byte{} // the segment files as the scrub left them
	for _, p := range logPaths(t, fs) {
		fs.Corrupt(p, func(d []byte) []byte { before[filepath.Base(p)] = append([]byte(nil), d...); return d })
	}
	opts.OnFailure = nil
	l = mustOpen(t, "/log", opts)
	if !l.TornAtOpen() || l.LogEndOffset() != badOffset {
		t.Fatalf("reopened: torn %v, end %d; want torn, ending at the bad batch %d", l.TornAtOpen(), l.LogEndOffset(), badOffset)
	}
	// Nothing was destroyed: the marked segment (whole) and every later
	// one are set aside as they were.
	q := "/log/" + ScrubQuarantinePrefix + filepath.Base(strings.TrimSuffix(victim, ".log"))
	kept, err := fs.ReadDir(q)
	if err != nil {
		t.Fatal(err)
	}
	var keptLogs int
	for name, data := range before {
		if name < filepath.Base(victim) {
			if slices.Contains(kept, name) {
				t.Fatalf("%s, before the marked segment, was set aside", name)
			}
			continue
		}
		keptLogs++
		var got []byte
		fs.Corrupt(q+"/"+name, func(d []byte) []byte { got = append([]byte(nil), d...); return d })
		if !bytes.Equal(got, data) {
			t.Fatalf("%s set aside holds %d bytes, not the %d it had", name, len(got), len(data))
		}
	}
	if keptLogs < 2 {
		t.Fatalf("set aside %v; want the marked segment and the later ones", kept)
	}
	got := readAll(t, l, 0)
	var want []Batch
	for _, b := range bs {
		if b.BaseOffset() < badOffset {
			want = append(want, b)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("kept %d batches, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	if _, err := scrubAll(t, l, 1<<20); err != nil {
		t.Fatalf("scrub after the repair: %v", err)
	}
	mustAppend(t, l, testBatch(901, 2, 5), 9) // refetched records go on from there
	l.Close()
	if _, ok, _ := readOffsetCheckpoint(fs, "/log/"+scrubMarkFile); ok {
		t.Fatal("the mark for repair outlived the repair")
	}
	l = mustOpen(t, "/log", opts)
	defer l.Close()
	if l.TornAtOpen() || l.LogEndOffset() != badOffset+2 {
		t.Fatalf("the next open: torn %v, end %d", l.TornAtOpen(), l.LogEndOffset())
	}
}

// A mark whose segment checks out at open (the damage was in memory) is
// removed, and nothing is truncated.
func TestScrubMarkOfASoundSegment(t *testing.T) {
	fs, bs, opts := buildClosedLog(t, 60, 2048)
	opts.FS = fs
	l := mustOpen(t, "/log", opts)
	second := l.Segments()[1]
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := writeOffsetCheckpoint(fs, "/log/"+scrubMarkFile, second); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/log", opts)
	defer l.Close()
	if l.TornAtOpen() || l.LogEndOffset() != bs[len(bs)-1].LastOffset()+1 {
		t.Fatalf("torn %v, end %d", l.TornAtOpen(), l.LogEndOffset())
	}
	if _, ok, _ := readOffsetCheckpoint(fs, "/log/"+scrubMarkFile); ok {
		t.Fatal("the mark was kept")
	}
}

// ScrubBelow also checks the active segment, only its batches below the
// offset it is given (what may still change is not read): a corrupt batch
// there is found once below passes it, marked like a sealed segment's, and
// the next Open truncates at it. A point kept across calls goes on in the
// same segment only while it is the same mapping.
func TestScrubBelowChecksTheActiveSegment(t *testing.T) {
	fs, _, opts := buildClosedLog(t, 60, 2048)
	paths := logPaths(t, fs)
	active := paths[len(paths)-1]
	var data []byte
	fs.Corrupt(active, func(d []byte) []byte { data = append([]byte(nil), d...); return d })
	b0, _ := nextBatch(data, 0)
	b1, _ := nextBatch(data, len(b0))
	pos := len(b0) + len(b1)
	b2, _ := nextBatch(data, pos)
	bad := b2.BaseOffset()
	fs.Corrupt(active, func(d []byte) []byte { d[pos+HeaderSize+3] ^= 0x10; return d })

	opts.FS = fs
	l := mustOpen(t, "/log", opts) // a clean shutdown: the active segment is trusted
	var sealed int64
	l.mu.RLock()
	for _, s := range l.mu.segs[:len(l.mu.segs)-1] {
		sealed += s.size
	}
	l.mu.RUnlock()
	below := func(step, below int64) (checked int64, err error) {
		var p ScrubPoint
		for range 100000 {
			next, n, done, err := l.ScrubBelow(p, step, below)
			checked += n
			if err != nil || done {
				return checked, err
			}
			p = next
		}
		t.Fatal("ScrubBelow never finished its pass")
		return 0, nil
	}
	if _, err := scrubAll(t, l, 1<<20); err != nil {
		t.Fatalf("Scrub read the active segment: %v", err)
	}
	for _, step := range []int64{1, 1 << 20} {
		checked, err := below(step, bad)
		if want := sealed + int64(pos); err != nil || checked != want {
			t.Fatalf("step %d, below %d: checked %d bytes, err %v; want %d bytes (the sealed segments and the active one's batches before the bad one)",
				step, bad, checked, err, want)
		}
	}
	_, err := below(1, bad+1)
	var cerr *CorruptionError
	if !errors.Is(err, ErrScrubCorrupt) || !errors.As(err, &cerr) || cerr.File != active || cerr.Offset != bad {
		t.Fatalf("below %d: %v; want ErrScrubCorrupt at %s offset %d", bad+1, err, active, bad)
	}
	l.Close()
	if base, ok, err := ScrubMarked(fs, "/log"); err != nil || !ok || filepath.Join("/log", segmentName(base)+".log") != active {
		t.Fatalf("ScrubMarked: %d %v %v; want the active segment %s", base, ok, err, active)
	}
	l = mustOpen(t, "/log", opts)
	defer l.Close()
	if !l.TornAtOpen() || l.LogEndOffset() != bad {
		t.Fatalf("reopened: torn %v, end %d; want torn at %d", l.TornAtOpen(), l.LogEndOffset(), bad)
	}
	if _, ok, _ := ScrubMarked(fs, "/log"); ok {
		t.Fatal("the mark outlived the repair")
	}
}
