package segment

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// repairedOnDisk builds a log of 60 batches in 2 KiB segments (epoch
// 1+i/7 for batch i) on the disk, damages a batch of its second segment,
// marks that segment as a scrub would and reopens it at t0: the repair
// sets aside that segment's copy and the later segments. It returns the
// reopened log, its batches before the repair and the quarantine's name.
func repairedOnDisk(t *testing.T, t0 time.Time) (*Log, []Batch, string) {
	t.Helper()
	dir := t.TempDir()
	opts := Options{SegmentBytes: 2048, IndexInterval: 200, MaxIndexBytes: 1024, Logger: quietLogger,
		Now: func() time.Time { return t0 }}
	l := mustOpen(t, dir, opts)
	var bs []Batch
	for i := range 60 {
		b := testBatch(i, 1+i%4, int64(i))
		mustAppend(t, l, b, int32(1+i/7))
		bs = append(bs, append(Batch(nil), b...))
	}
	segs := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(segs) < 3 {
		t.Fatalf("segments %v; want at least 3", segs)
	}
	victim := filepath.Join(dir, segmentName(segs[1])+".log")
	data, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	b0, _ := nextBatch(data, 0)
	data[len(b0)+HeaderSize+3] ^= 0x10
	if err := os.WriteFile(victim, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeOffsetCheckpoint(OSFS{}, filepath.Join(dir, scrubMarkFile), segs[1]); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, opts)
	t.Cleanup(func() { l.Close() })
	if !l.TornAtOpen() {
		t.Fatal("the open did not repair the log")
	}
	return l, bs, ScrubQuarantinePrefix + segmentName(segs[1])
}

// A quarantine says when it was set aside, what it holds (its oldest
// segment's base to its newest one's last whole batch, with that batch's
// epoch) and goes whole when removed.
func TestQuarantineRangeAndRemoval(t *testing.T) {
	t0 := time.UnixMilli(1_800_000_000_000)
	l, bs, name := repairedOnDisk(t, t0)
	qs, err := l.Quarantines(t0.Add(time.Hour))
	if err != nil || len(qs) != 1 {
		t.Fatalf("quarantines %+v, %v; want one", qs, err)
	}
	q := qs[0]
	if q.Name != name || !q.SetAsideAt.Equal(t0) || q.Bytes != l.QuarantinedBytes() || q.Bytes == 0 {
		t.Fatalf("quarantine %+v; want %s set aside at %v holding %d bytes", q, name, t0, l.QuarantinedBytes())
	}
	r, err := l.QuarantineRange(name)
	last := bs[len(bs)-1]
	base, _ := strconv.ParseInt(strings.TrimPrefix(name, ScrubQuarantinePrefix), 10, 64)
	if err != nil || r.Unknown != "" || r.FirstOffset != base || r.LastOffset != last.LastOffset() || r.LastEpoch != int32(1+59/7) {
		t.Fatalf("range %+v, %v; want %d to %d in epoch %d", r, err, base, last.LastOffset(), 1+59/7)
	}

	// Without its time (an earlier build's), it is first seen now, and
	// that stays its time.
	qdir := filepath.Join(l.Dir(), name)
	if err := os.Remove(filepath.Join(qdir, quarantineTimeFile)); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(2 * time.Hour)
	for _, now := range []time.Time{t1, t1.Add(time.Hour)} {
		if qs, err := l.Quarantines(now); err != nil || len(qs) != 1 || !qs[0].SetAsideAt.Equal(t1) {
			t.Fatalf("quarantines at %v: %+v, %v; want one set aside at %v", now, qs, err, t1)
		}
	}

	if err := l.RemoveQuarantine(name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(qdir); !os.IsNotExist(err) {
		t.Fatalf("the quarantine is still there: %v", err)
	}
	if qs, err := l.Quarantines(t1); err != nil || len(qs) != 0 || l.QuarantinedBytes() != 0 {
		t.Fatalf("after removal: %+v, %v, %d bytes", qs, err, l.QuarantinedBytes())
	}
	if err := l.RemoveQuarantine(name); err != nil {
		t.Fatalf("removing it again: %v", err)
	}
	for _, bad := range []string{"../x", ScrubQuarantinePrefix + "../../etc", "00000000000000000000.log", ScrubQuarantinePrefix + "1"} {
		if err := l.RemoveQuarantine(bad); err == nil {
			t.Fatalf("RemoveQuarantine(%q) accepted", bad)
		}
	}
}

// The newest segment file decides the last offset: a torn tail there
// holds nothing whole (the batch before it is the last), a corrupt batch
// hides what follows it (unknown), and newer files without a batch are
// passed over.
func TestQuarantineRangeOfDamagedFiles(t *testing.T) {
	l, bs, name := repairedOnDisk(t, time.UnixMilli(1_800_000_000_000))
	qdir := filepath.Join(l.Dir(), name)
	names, _ := filepath.Glob(filepath.Join(qdir, "*.log"))
	newest := names[len(names)-1]
	data, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	var ends []int // the end of each whole batch of the newest file
	valid, _ := SplitBatches(data, func(b Batch) error {
		end := len(b)
		if len(ends) > 0 {
			end += ends[len(ends)-1]
		}
		ends = append(ends, end)
		return nil
	})
	if len(ends) < 2 || valid != ends[len(ends)-1] {
		t.Fatalf("newest file %s: %d batches", newest, len(ends))
	}
	last, prev := bs[len(bs)-1], bs[len(bs)-2]

	check := func(what string, content []byte, wantLast int64, unknown bool) {
		t.Helper()
		if err := os.WriteFile(newest, content, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := l.QuarantineRange(name)
		if err != nil || (r.Unknown != "") != unknown || (!unknown && r.LastOffset != wantLast) {
			t.Fatalf("%s: range %+v, %v; want last %d, unknown %v", what, r, err, wantLast, unknown)
		}
	}
	check("as set aside, zeros after", append(data[:valid:valid], make([]byte, 100)...), last.LastOffset(), false)
	check("torn tail", data[:valid-10], prev.LastOffset(), false)
	corrupt := append([]byte(nil), data[:valid]...)
	corrupt[ends[len(ends)-2]+HeaderSize+2] ^= 0x01 // the last batch's records
	check("corrupt last batch", corrupt, 0, true)
	check("garbage after the batches", append(data[:valid:valid], bytes.Repeat([]byte{0xff}, 80)...), 0, true)

	// A newer file without a batch: the one before it decides.
	if err := os.WriteFile(newest, data, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(qdir, segmentName(last.LastOffset()+1)+".log")
	if err := os.WriteFile(empty, make([]byte, 512), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := l.QuarantineRange(name); err != nil || r.Unknown != "" || r.LastOffset != last.LastOffset() {
		t.Fatalf("with an empty newer file: %+v, %v; want last %d", r, err, last.LastOffset())
	}
}

// The last offset of a quarantine comes from bytes on the disk: whatever
// its newest segment file holds, QuarantineRange does not fail or panic,
// and a range it tells ends at the last whole valid batch of that file (or
// of the older file, when the newest holds none).
func FuzzQuarantineRange(f *testing.F) {
	older := append(Batch(nil), testBatch(1, 3, 0)...)
	newer := append(append(Batch(nil), testBatch(2, 2, 0)...), testBatch(3, 4, 0)...)
	Batch(newer).SetBaseOffset(3)
	Batch(newer[len(testBatch(2, 2, 0)):]).SetBaseOffset(5)
	f.Add([]byte(newer))
	f.Add([]byte(newer[:len(newer)-7]))
	f.Add(append(append([]byte(nil), newer...), make([]byte, 64)...))
	f.Add([]byte{})
	fs := NewMemFS()
	l := mustOpen(f, "/log", Options{FS: fs, Logger: quietLogger})
	defer l.Close()
	name := ScrubQuarantinePrefix + segmentName(0)
	q := "/log/" + name
	_ = fs.MkdirAll(q, 0o755)
	write := func(path string, data []byte) {
		file, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			f.Fatal(err)
		}
		if _, err := file.WriteAt(data, 0); err != nil {
			f.Fatal(err)
		}
		file.Close()
	}
	write(q+"/"+segmentName(0)+".log", older)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		write(q+"/"+segmentName(3)+".log", data)
		r, err := l.QuarantineRange(name)
		if err != nil {
			t.Fatal(err)
		}
		if r.Unknown != "" {
			return
		}
		want, epoch := Batch(older).LastOffset(), Batch(older).LeaderEpoch()
		SplitBatches(data, func(b Batch) error { //nolint:errcheck // the batches before the end
			want, epoch = b.LastOffset(), b.LeaderEpoch()
			return nil
		})
		if r.FirstOffset != 0 || r.LastOffset != want || r.LastEpoch != epoch {
			t.Fatalf("range %+v; want 0 to %d in epoch %d", r, want, epoch)
		}
	})
}
