package chaos

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/segment"
)

// readFiles maps each file name of dir to its content.
func readFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// TestApplyTornRot: a rot flips 1–8 bytes inside the records of one batch
// of a sealed segment, and nothing else: every other file, and the rest of
// that one, is as it was. The raw scan of the directory (the final check
// of every replica's files) reports the corruption.
func TestApplyTornRot(t *testing.T) {
	src := t.TempDir()
	makeLog(t, src, 40)
	orig, err := ScanPartition(src, false)
	if err != nil || orig.Err != nil || len(orig.Files) < 3 {
		t.Fatalf("scan of the log: %v %v, %d files", err, orig.Err, len(orig.Files))
	}
	lastFile := filepath.Base(orig.Files[len(orig.Files)-1].Path)
	before := readFiles(t, src)
	sizes := map[int]int{}
	for seed := range uint64(60) {
		dir := copyDir(t, src)
		res, err := ApplyTorn(dir, Torn{Mode: TornRot, Frac: 0.5, Len: 30, Seed: seed}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if res.Mode != TornRot || res.Action != "rot" || !res.Applied() || res.Changed < 1 || res.Changed > rotMaxBytes {
			t.Fatalf("seed %d: result %+v, want a rot of 1 to %d bytes", seed, res, rotMaxBytes)
		}
		sizes[int(res.Changed)]++
		name := filepath.Base(res.File)
		if name == lastFile {
			t.Fatalf("seed %d: rot of the last segment %s", seed, name)
		}
		// The damaged bytes lie inside one batch's records.
		var sf *SegmentFile
		for i := range orig.Files {
			if filepath.Base(orig.Files[i].Path) == name {
				sf = &orig.Files[i]
			}
		}
		j := -1
		for k := range sf.Batches {
			if sf.Batches[k] <= res.Pos {
				j = k
			}
		}
		if j < 0 || sf.Firsts[j] != res.FirstOffset || res.Pos < sf.Batches[j]+segment.HeaderSize || res.Pos+res.Len > sf.batchEnd(j) {
			t.Fatalf("seed %d: rot %+v not inside the records of one batch (batch %d at %d..%d)", seed, res, j, sf.Batches[j], sf.batchEnd(j))
		}
		after := readFiles(t, dir)
		for f, b := range before {
			diff := 0
			for i := range b {
				if b[i] != after[f][i] {
					diff++
					if int64(i) < res.Pos || int64(i) >= res.Pos+res.Len {
						t.Fatalf("seed %d: %s byte %d changed, outside the rot %+v", seed, f, i, res)
					}
				}
			}
			switch {
			case len(after[f]) != len(b):
				t.Fatalf("seed %d: %s changed size", seed, f)
			case f == name && int64(diff) != res.Changed:
				t.Fatalf("seed %d: %d bytes of %s changed, result says %d", seed, diff, f, res.Changed)
			case f != name && diff > 0:
				t.Fatalf("seed %d: %s changed too", seed, f)
			}
		}
		s, err := ScanPartition(dir, true)
		if err != nil {
			t.Fatal(err)
		}
		if s.Err == nil || !strings.Contains(s.Err.Error(), name) || !strings.Contains(s.Err.Error(), "sealed segment") {
			t.Fatalf("seed %d: the raw scan of the rotted directory reports %v; want corruption in %s", seed, s.Err, name)
		}
		again, _ := ApplyTorn(copyDir(t, src), Torn{Mode: TornRot, Seed: seed}, 0)
		if again.Pos != res.Pos || again.Len != res.Len || again.File[len(again.File)-len(name):] != name {
			t.Fatalf("seed %d: the same seed rotted %+v, then %+v", seed, res, again)
		}
	}
	if len(sizes) < 4 {
		t.Fatalf("rot sizes drawn %v: want several of 1..%d", sizes, rotMaxBytes)
	}
}

// TestRotFoundByScrubOnly: the node's open trusts the rotted sealed segment
// (it is below the recovery point) and only a scrub finds it; the next
// open truncates at the rotted batch and reports the log torn.
func TestRotFoundByScrubOnly(t *testing.T) {
	dir := t.TempDir()
	makeLog(t, dir, 40)
	res, err := ApplyTorn(dir, Torn{Mode: TornRot, Seed: 7}, 0)
	if err != nil || res.Mode != TornRot {
		t.Fatalf("rot %+v: %v", res, err)
	}
	ctx := context.Background()
	opts := segment.Options{SegmentBytes: 2048, Logger: slog.New(slog.DiscardHandler)}
	l, err := segment.Open(ctx, dir, opts)
	if err != nil {
		t.Fatalf("open after the rot: %v", err)
	}
	if l.LogEndOffset() != 120 || l.TornAtOpen() {
		t.Fatalf("open after the rot: end %d torn %v; want the whole log, trusted", l.LogEndOffset(), l.TornAtOpen())
	}
	var at segment.ScrubPoint
	for {
		next, _, done, err := l.Scrub(at, 1<<20)
		if errors.Is(err, segment.ErrScrubCorrupt) {
			break
		}
		if err != nil || done {
			t.Fatalf("the scrub did not find the rot %+v (done %v, err %v)", res, done, err)
		}
		at = next
	}
	l.Close()
	l, err = segment.Open(ctx, dir, opts)
	if err != nil {
		t.Fatalf("open after the scrub: %v", err)
	}
	defer l.Close()
	if l.LogEndOffset() != res.FirstOffset || !l.TornAtOpen() {
		t.Fatalf("open after the scrub: end %d torn %v; want truncated at the rotted batch %d, torn", l.LogEndOffset(), l.TornAtOpen(), res.FirstOffset)
	}
}

// TestApplyTornRotFallback: a partition without a sealed segment (one
// segment, the active one) gets an overwrite of its last segment instead.
func TestApplyTornRotFallback(t *testing.T) {
	dir := t.TempDir()
	makeLog(t, dir, 5)
	s, _ := ScanPartition(dir, false)
	if len(s.Files) != 1 {
		t.Fatalf("%d segment files, want only the active one", len(s.Files))
	}
	res, err := ApplyTorn(dir, Torn{Mode: TornRot, Len: 10, Seed: 3}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != TornOverwrite || res.Action != "overwrite" || !res.Applied() || res.File != s.Files[0].Path || res.Pos+res.Len != s.Files[0].End {
		t.Fatalf("result %+v, want an overwrite of the last 10 bytes of %s", res, s.Files[0].Path)
	}
}

// TestScheduleDrawsRots: default schedules rot sealed segments, of topic
// partitions only (the metadata log gets garbage tails).
func TestScheduleDrawsRots(t *testing.T) {
	rots, torn := 0, 0
	for seed := int64(1); seed <= 10; seed++ {
		for _, f := range NewSchedule(Plan{Seed: seed}).Take(100) {
			if f.Torn == nil {
				continue
			}
			torn++
			if f.Torn.Mode == TornRot {
				rots++
				if f.Torn.Partition == MetadataLog || !f.Kind.IsKill() {
					t.Fatalf("seed %d: rot %+v on %s", seed, f.Torn, f.Kind)
				}
			}
		}
	}
	// A quarter of the partitions' torn tails (85% of them).
	if rots < torn/8 || rots > torn/3 {
		t.Fatalf("%d rots among %d torn tails", rots, torn)
	}
}

// scrubOutput is the end of a node's output when its scrub found a
// corrupt batch (copied from a chaos run's node log, lines shortened).
const scrubOutput = `time=2026-12-03T12:09:51.210Z level=INFO msg="log scrub pass done" node=2 partitions=3 bytes=1273311 corrupt=[] took=4ms
time=2026-12-03T12:09:52.219Z level=ERROR msg="segment: scrub found a corrupt batch in a sealed segment; the log fails, and the next open truncates at it" node=2 dir=/tmp/paymentlog-cluster-2948478782/node2/data/chaos-1 file=/tmp/paymentlog-cluster-2948478782/node2/data/chaos-1/00000000000000000000.log position=421723 offset=3752 err="segment: corrupt batch: crc mismatch: stored 17040592, computed 5432919e"
time=2026-12-03T12:09:52.220Z level=ERROR msg="partition log failed: stopping the node so its partitions move to in-sync replicas" node=2 partition_dir=chaos-1 err="segment: log failed after an I/O error; reopen to recover: segment: scrub found a corrupt batch: segment: corruption in /tmp/paymentlog-cluster-2948478782/node2/data/chaos-1/00000000000000000000.log at byte 421723 (expected offset 3752): segment: corrupt batch: crc mismatch: stored 17040592, computed 5432919e"
time=2026-12-03T12:09:52.221Z level=ERROR msg="append failed" node=2 component=broker topic=chaos partition=1 epoch=20 err="segment: log failed after an I/O error; reopen to recover: segment: scrub found a corrupt batch: segment: corruption in /tmp/paymentlog-cluster-2948478782/node2/data/chaos-1/00000000000000000000.log at byte 421723 (expected offset 3752)"
paymentlog: node: partition log chaos-1 failed: segment: log failed after an I/O error; reopen to recover: segment: scrub found a corrupt batch: segment: corruption in /tmp/paymentlog-cluster-2948478782/node2/data/chaos-1/00000000000000000000.log at byte 421723 (expected offset 3752): segment: corrupt batch: crc mismatch: stored 17040592, computed 5432919e
`

func TestScrubPartition(t *testing.T) {
	if p := scrubPartition([]byte(scrubOutput), "chaos"); p != 1 {
		t.Fatalf("partition %d, want 1", p)
	}
	other := strings.ReplaceAll(scrubOutput, "scrub found a corrupt batch", "write failed")
	if p := scrubPartition([]byte(other), "chaos"); p != -1 {
		t.Fatalf("a storage failure other than the scrub's read as partition %d", p)
	}
	if p := scrubPartition([]byte("panic: runtime error\n"), "chaos"); p != -1 {
		t.Fatalf("a panic read as partition %d", p)
	}
	if !bytes.Contains([]byte(scrubOutput), []byte(segment.ErrScrubCorrupt.Error())) {
		t.Fatal("the sample output does not quote segment.ErrScrubCorrupt")
	}
}

// TestCheckScrubRepairs: an exit of a node whose scrub found its rot is a
// repair, not a crash; any other exit (a crash, a scrub exit of a node or
// partition without a rot, a second one for a repaired rot, one before the
// rot) is node-crashed.
func TestCheckScrubRepairs(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	rots := []Rot{{Node: 2, Partition: 1, Fault: 4, At: at(10)}, {Node: 3, Partition: 0, Fault: 9, At: at(30)}}
	for _, tc := range []struct {
		name     string
		exits    []NodeExit
		repairs  int
		crashed  int
		crashers []int32
	}{
		{"both found", []NodeExit{{Node: 2, At: at(12), ScrubPartition: 1}, {Node: 3, At: at(33), ScrubPartition: 0}}, 2, 0, nil},
		{"one found, an unrelated crash", []NodeExit{{Node: 2, At: at(12), ScrubPartition: 1}, {Node: 1, At: at(20), ScrubPartition: -1}}, 1, 1, []int32{1}},
		{"the rotted node crashes otherwise", []NodeExit{{Node: 2, At: at(11), ScrubPartition: -1}}, 0, 1, []int32{2}},
		{"scrub exit of another partition", []NodeExit{{Node: 2, At: at(12), ScrubPartition: 0}}, 0, 1, []int32{2}},
		{"scrub exit of a node without a rot", []NodeExit{{Node: 1, At: at(12), ScrubPartition: 1}}, 0, 1, []int32{1}},
		{"scrub exit before the rot", []NodeExit{{Node: 3, At: at(20), ScrubPartition: 0}}, 0, 1, []int32{3}},
		{"the repair loops", []NodeExit{{Node: 2, At: at(12), ScrubPartition: 1}, {Node: 2, At: at(14), ScrubPartition: 1}}, 1, 1, []int32{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := cleanHistory()
			h.Rots = rots
			for i := range tc.exits {
				tc.exits[i].Detail = "exit status 1"
			}
			h.Exits = tc.exits
			r := Check(h)
			if r.Rots != 2 || r.ScrubRepairs != tc.repairs || r.Count(NodeCrashed) != tc.crashed {
				t.Fatalf("rots %d repairs %d node-crashed %d; want 2, %d, %d (%v)", r.Rots, r.ScrubRepairs, r.Count(NodeCrashed), tc.repairs, tc.crashed, r.Anomalies)
			}
			checkCrashers(t, r, tc.crashers)
			var b strings.Builder
			r.WriteText(&b)
			if want := "scrub repairs: " + string(rune('0'+tc.repairs)) + " of 2 rots"; !strings.Contains(b.String(), want) {
				t.Fatalf("report does not say %q:\n%s", want, b.String())
			}
		})
	}
}

// checkCrashers checks that the nodes r reports node-crashed are crashers,
// in order, and that they alone decide its verdict.
func checkCrashers(t *testing.T, r *Report, crashers []int32) {
	t.Helper()
	var nodes []int32
	for _, a := range r.Anomalies {
		if a.Kind == NodeCrashed {
			nodes = append(nodes, a.Node)
		}
	}
	if !slices.Equal(nodes, crashers) {
		t.Fatalf("crashed nodes %v, want %v", nodes, crashers)
	}
	if r.Count(NodeCrashed) == 0 != r.OK() {
		t.Fatalf("verdict OK=%v with %v", r.OK(), r.Anomalies)
	}
}
