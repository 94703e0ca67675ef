package chaos

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"paymentlog/segment"
)

// makeLog writes batches of 3 records ("p0-<seq>") to a new log in dir with
// small segments (so it rolls), closes it and removes the clean-shutdown
// marker, as if the node had been killed after flushing.
func makeLog(t *testing.T, dir string, batches int) {
	t.Helper()
	ctx := context.Background()
	l, err := segment.Open(ctx, dir, segment.Options{SegmentBytes: 2048, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	seq := int64(0)
	for i := range batches {
		b := segment.NewBuilder(segment.BuilderOptions{})
		for range 3 {
			b.Add(1000, nil, Payload(RecordID{0, seq}, 20), nil)
			seq++
		}
		if _, err := l.Append(ctx, b.Build(), int32(1+i/10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, ".clean-shutdown"))
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		out.Close()
	}
	return dst
}

// reopenLEO opens the log as a node would after the torn tail and returns its end.
func reopenLEO(t *testing.T, dir string) int64 {
	t.Helper()
	l, err := segment.Open(context.Background(), dir, segment.Options{SegmentBytes: 2048, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("reopen after torn tail: %v", err)
	}
	defer l.Close()
	return l.LogEndOffset()
}

func TestScanPartition(t *testing.T) {
	dir := t.TempDir()
	makeLog(t, dir, 40)
	s, err := ScanPartition(dir, true)
	if err != nil || s.Err != nil {
		t.Fatal(err, s.Err)
	}
	if len(s.Files) < 3 {
		t.Fatalf("expected rolled segments, got %d files", len(s.Files))
	}
	if s.LEO() != 120 || len(s.Records) != 120 || len(s.Batches) != 40 {
		t.Fatalf("LEO %d records %d batches %d", s.LEO(), len(s.Records), len(s.Batches))
	}
	for i, r := range s.Records {
		id, ok := ParsePayload([]byte(r.Value))
		if r.Offset != int64(i) || !ok || id.Seq != int64(i) {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if s.Batches[35].Epoch != 4 {
		t.Fatalf("epoch %d", s.Batches[35].Epoch)
	}
}

func TestApplyTornModes(t *testing.T) {
	src := t.TempDir()
	makeLog(t, src, 40)
	orig, _ := ScanPartition(src, false)
	last := orig.Last()
	lastBase := last.Firsts[0]
	for i := range 40 {
		for _, mode := range []TornMode{TornCutUnacked, TornGarbage, TornCutAcked, TornOverwrite} {
			dir := copyDir(t, src)
			unacked := int64(114) // the last two batches (offsets 114..119) are unacknowledged
			tt := Torn{Mode: mode, Partition: 0, Frac: float64(i) / 40, Len: 1 + i%64, Seed: uint64(i)}
			res, err := ApplyTorn(dir, tt, unacked)
			if err != nil {
				t.Fatal(err)
			}
			leo := reopenLEO(t, dir)
			switch mode {
			case TornGarbage:
				if leo != 120 || res.FirstOffset != -1 || res.Action != "garbage" {
					t.Fatalf("%s: LEO %d after %v", mode, leo, res)
				}
			case TornCutUnacked:
				if leo < unacked || (res.FirstOffset >= 0 && leo != res.FirstOffset) {
					t.Fatalf("%s: LEO %d after %v", mode, leo, res)
				}
			case TornCutAcked, TornOverwrite:
				if res.FirstOffset < lastBase && res.FirstOffset != -1 {
					t.Fatalf("%s damaged a sealed segment: %v", mode, res)
				}
				if res.FirstOffset >= 0 && leo != res.FirstOffset {
					t.Fatalf("%s: LEO %d after %v", mode, leo, res)
				}
			}
			if mode == TornOverwrite && leo == 120 {
				t.Fatalf("overwrite left the log whole: %v", res)
			}
		}
	}
}

func TestApplyTornUnackedFallsBackToGarbage(t *testing.T) {
	dir := t.TempDir()
	makeLog(t, dir, 10)
	res, err := ApplyTorn(dir, Torn{Mode: TornCutUnacked, Frac: 0.5, Len: 30, Seed: 1}, 30)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != TornGarbage {
		t.Fatalf("mode %s", res.Mode)
	}
	if leo := reopenLEO(t, dir); leo != 30 {
		t.Fatalf("LEO %d", leo)
	}
}

// TestTornTailThatChangedNothingIsNotApplied: Changed counts exactly the
// bytes the torn tail altered (checked against the file before and after,
// bytes past the end reading as 0), and one that altered none — a cut at
// the data's end, an overwrite of 0 bytes, as a scripted fault can ask — is
// not an applied torn tail: the counts leave it out and its line says so.
func TestTornTailThatChangedNothingIsNotApplied(t *testing.T) {
	src := t.TempDir()
	makeLog(t, src, 40)
	last := func(dir string) string {
		s, err := ScanPartition(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		return s.Last().Path
	}
	file := func(path string, size int) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, make([]byte, max(0, size-len(b)))...)
	}
	notApplied := 0
	for i := range 30 {
		for _, mode := range []TornMode{TornCutUnacked, TornGarbage, TornCutAcked, TornOverwrite} {
			frac, n := float64(i)/30, 1+i%64
			switch i % 10 {
			case 3:
				frac = 1 // a cut at the data's end
			case 7:
				n = 0 // an overwrite (or garbage) of nothing
			}
			dir := copyDir(t, src)
			path := last(dir)
			before := file(path, 0)
			res, err := ApplyTorn(dir, Torn{Mode: mode, Frac: frac, Len: n, Seed: uint64(i)}, 114)
			if err != nil {
				t.Fatal(err)
			}
			after := file(path, len(before)+64)
			before = append(before, make([]byte, 64)...)
			changed := int64(0)
			for j := range before {
				if before[j] != after[j] {
					changed++
				}
			}
			if res.Changed != changed || res.Applied() != (changed > 0) {
				t.Fatalf("%s frac %v len %d: %v reports %d bytes changed, the file has %d", mode, frac, n, res, res.Changed, changed)
			}
			if !res.Applied() {
				notApplied++
				if !strings.Contains(res.String(), "NOT APPLIED") {
					t.Errorf("%q does not say it was not applied", res)
				}
				ev := Event{Fault: Fault{Kind: KillNode}, Victim: 1, Torn: &res}
				if got := countFaults([]Event{ev})[TornTail]; got != 0 {
					t.Fatalf("%s frac %v len %d changed nothing and counts as %d torn tail(s): %v", mode, frac, n, got, res)
				}
				if !strings.Contains(ev.String(), "NOT APPLIED") {
					t.Errorf("event %q does not say the torn tail was not applied", ev)
				}
			}
		}
	}
	if notApplied == 0 {
		t.Fatal("no case changed nothing: the test proves nothing")
	}
}

// TestCutInTrailingZerosStillDamages: a cut drawn inside the zeros a batch
// ends with (its last record's header count) used to change no byte, so
// the dealt torn tail did not count (a chaos run once dealt 20 and counted
// 19). It now starts at the last nonzero byte and tears the last batch.
func TestCutInTrailingZerosStillDamages(t *testing.T) {
	src := t.TempDir()
	makeLog(t, src, 40)
	orig, _ := ScanPartition(src, false)
	last := orig.Last()
	tail, err := readRegion(last.Path, last.End-1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if tail[0] != 0 {
		t.Fatalf("the data ends in %#x, not a zero: the test proves nothing", tail[0])
	}
	for _, mode := range []TornMode{TornCutUnacked, TornCutAcked} {
		for seed := range uint64(4) { // both truncate and zero
			dir := copyDir(t, src)
			// Frac that puts the cut at the data's last byte.
			frac := (float64(last.End) - 0.5) / float64(last.End)
			if mode == TornCutUnacked {
				lo := last.Batches[len(last.Batches)-1]
				frac = (float64(last.End-1-lo) + 0.5) / float64(last.End-lo)
			}
			res, err := ApplyTorn(dir, Torn{Mode: mode, Frac: frac, Seed: seed}, 114)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Applied() {
				t.Fatalf("%s seed %d: %v changed nothing", mode, seed, res)
			}
			if leo := reopenLEO(t, dir); leo != 117 {
				t.Fatalf("%s seed %d: LEO %d after %v, want 117 (the last batch torn)", mode, seed, leo, res)
			}
		}
	}
}

// A wipe removes the partition directory whole and counts its bytes.
func TestApplyTornWipe(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "payments-0")
	makeLog(t, dir, 10)
	var size int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if info, err := e.Info(); err == nil {
			size += info.Size()
		}
	}
	res, err := ApplyTorn(dir, Torn{Mode: TornWipe}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still there: %v", dir, err)
	}
	if !res.Applied() || res.Changed != size || res.Mode != TornWipe || res.Action != "wipe" {
		t.Fatalf("result %+v, want a wipe of %d bytes", res, size)
	}
	if !strings.Contains(res.String(), "wipe") {
		t.Fatalf("result reads %q", res)
	}
}

// Some seeds' schedules wipe a partition directory, drawn without changing
// the generator's draws: the wipes' seeds are those of cut-acked faults.
func TestScheduleWipes(t *testing.T) {
	wipes := 0
	for seed := int64(1); seed <= 40 && wipes == 0; seed++ {
		s := NewSchedule(Plan{Seed: seed})
		for _, f := range s.Take(300) {
			if f.Torn != nil && f.Torn.Mode == TornWipe {
				if f.Torn.Seed%3 != 0 || f.Torn.Partition == MetadataLog {
					t.Fatalf("seed %d: wipe %+v", seed, f.Torn)
				}
				wipes++
			}
		}
	}
	if wipes == 0 {
		t.Fatal("no wipe in 40 seeds' schedules")
	}
}

// TestScanPartitionCompacted: the scan reads a log the cleaner rewrote
// (batches with AttrCompacted: fewer records than their offsets span, with
// gaps, down to none) with every record at its own offset, its key, and a
// tombstone named by its HeaderID header.
func TestScanPartitionCompacted(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l, err := segment.Open(ctx, dir, segment.Options{SegmentBytes: 2048, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	const tomb = 7 // the record at offset 7 is a tombstone, of a key of its own
	seq := int64(0)
	for range 40 {
		b := segment.NewBuilder(segment.BuilderOptions{})
		for range 3 {
			id := RecordID{0, seq}
			if seq == tomb {
				b.Add(1000, []byte("gone"), nil, []segment.RecordHeader{{Key: HeaderID, Value: []byte(id.String())}})
			} else {
				b.Add(1000, []byte(keyName(int(seq%4))), Payload(id, 20), nil)
			}
			seq++
		}
		if _, err := l.Append(ctx, b.Build(), 1); err != nil {
			t.Fatal(err)
		}
	}
	res, err := l.Compact(ctx, segment.CompactOptions{Below: l.LogEndOffset(), DeleteRetention: time.Hour, Now: time.UnixMilli(2000)})
	if err != nil || res.RecordsRemoved == 0 {
		t.Fatalf("compaction removed nothing: %+v %v", res, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := ScanPartition(dir, true)
	if err != nil || s.Err != nil {
		t.Fatal(err, s.Err)
	}
	// Batches left empty are merged, so fewer than the 40 written.
	if s.LEO() != 120 || len(s.Batches) >= 40 || len(s.Batches) < 2 || len(s.Records) >= 120 {
		t.Fatalf("LEO %d records %d batches %d", s.LEO(), len(s.Records), len(s.Batches))
	}
	compacted := 0
	for _, b := range s.Batches {
		if b.Compacted {
			compacted++
		}
	}
	if compacted == 0 {
		t.Fatal("no batch marked compacted")
	}
	prev, sawTomb := int64(-1), false
	for _, r := range s.Records {
		id, ok := ParsePayload([]byte(r.Value))
		key := keyName(int(r.Offset % 4))
		if r.Offset == tomb {
			key = "gone"
		}
		if !ok || r.Offset <= prev || id.Seq != r.Offset || r.Key != key || r.Tombstone != (r.Offset == tomb) {
			t.Fatalf("record after offset %d: %+v", prev, r)
		}
		sawTomb = sawTomb || r.Tombstone
		prev = r.Offset
	}
	if !sawTomb {
		t.Fatal("the tombstone (the latest of its key, in the dirty part: kept) not seen")
	}
}
