package segment

import (
	"testing"
)

// A batch stamped with its log append time keeps a valid CRC and gives
// every record that time, compressed or not; it survives the log (reads,
// lookups by time, a reopen) and the cleaner's rewrite; a batch without
// the bit gives each record its own time.
func TestStampLogAppendTime(t *testing.T) {
	const appended = 1_800_000_000_000
	for _, codec := range []Codec{CodecNone, CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			bld := NewBuilder(BuilderOptions{Compression: codec})
			for i := range 50 {
				bld.Add(1000+int64(i), []byte{'k', byte(i % 5)}, []byte("a payment event, compressible, compressible"), nil)
			}
			b := bld.Build()
			if h, _ := ParseHeader(b); h.LogAppendTime() {
				t.Fatal("a producer's batch has the bit")
			}
			if ts := recordTimes(t, b); ts[0] != 1000 || ts[49] != 1049 {
				t.Fatalf("create times %d..%d", ts[0], ts[49])
			}
			b.StampLogAppendTime(appended)
			if err := b.Validate(); err != nil {
				t.Fatalf("stamped batch: %v", err)
			}
			h, _ := ParseHeader(b)
			if !h.LogAppendTime() || h.FirstTimestamp != appended || h.MaxTimestamp != appended || h.Compression() != codec {
				t.Fatalf("stamped header %+v", h)
			}
			for i, ts := range recordTimes(t, b) {
				if ts != appended {
					t.Fatalf("record %d: timestamp %d, want the append time", i, ts)
				}
			}

			dir := t.TempDir()
			l := mustOpen(t, dir, Options{})
			mustAppend(t, l, testBatch(1, 3, 500), 0) // offsets 0-2, create times 500-502
			mustAppend(t, l, b, 0)                    // offsets 3-52
			for _, c := range []struct{ ts, want int64 }{{500, 0}, {503, 3}, {appended, 3}, {appended + 1, -1}} {
				if got, err := l.OffsetForTimestamp(c.ts); err != nil || got != c.want {
					t.Fatalf("OffsetForTimestamp(%d) = %d, %v; want %d", c.ts, got, err, c.want)
				}
			}
			l.Close()
			l = mustOpen(t, dir, Options{})
			defer l.Close()
			got := readAll(t, l, 3)
			if len(got) != 1 {
				t.Fatalf("%d batches", len(got))
			}
			for i, ts := range recordTimes(t, got[0]) {
				if ts != appended {
					t.Fatalf("after a reopen, record %d: timestamp %d", i, ts)
				}
			}

			// The cleaner's rewrite keeps the bit and the time.
			out, _, err := compactBatch(got[0], func(r Record) recordFate {
				if r.Offset%2 == 0 {
					return dropSuperseded
				}
				return keepRecord
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := out.Validate(); err != nil {
				t.Fatal(err)
			}
			if h, _ := ParseHeader(out); !h.LogAppendTime() || !h.Compacted() || h.MaxTimestamp != appended {
				t.Fatalf("compacted header %+v", h)
			}
			for i, ts := range recordTimes(t, out) {
				if ts != appended {
					t.Fatalf("compacted record %d: timestamp %d", i, ts)
				}
			}
		})
	}
}

func recordTimes(t *testing.T, b Batch) []int64 {
	t.Helper()
	var out []int64
	it := b.Iter()
	for it.Next() {
		out = append(out, it.Record().Timestamp)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
