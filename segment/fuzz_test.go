package segment

import (
	"os"
	"strings"
	"testing"
)

func fuzzSeedBatches() [][]byte {
	var seeds [][]byte
	b := NewBuilder(BuilderOptions{ProducerID: 3, BaseSequence: 1})
	b.Add(5, []byte("k"), []byte("value"), []RecordHeader{{Key: "h", Value: []byte("x")}})
	b.Add(6, nil, nil, nil)
	seeds = append(seeds, b.Build())
	seeds = append(seeds, testBatch(1, 4, 100))
	two := append(append([]byte(nil), testBatch(2, 1, 0)...), testBatch(3, 2, 0)...)
	seeds = append(seeds, two)
	seeds = append(seeds, []byte{}, make([]byte, HeaderSize))
	for _, c := range []Codec{CodecLZ4, CodecZstd} {
		seeds = append(seeds, paymentBatch(c, 8))
	}
	// Batches stamped with their log append time (AttrLogAppendTime).
	for _, c := range []Codec{CodecNone, CodecZstd} {
		stamped := paymentBatch(c, 8)
		stamped.StampLogAppendTime(1_800_000_000_000)
		seeds = append(seeds, stamped)
	}
	// Compacted batches (AttrCompacted): records with gaps, and none.
	for _, c := range []Codec{CodecNone, CodecLZ4} {
		for _, keepEvery := range []int64{3, 1 << 20} {
			out, _, err := compactBatch(paymentBatch(c, 8), func(r Record) recordFate {
				if r.Offset%keepEvery == 1 {
					return keepRecord
				}
				return dropSuperseded
			})
			if err != nil {
				panic(err)
			}
			seeds = append(seeds, out)
		}
	}
	return seeds
}

// FuzzBatchDecode feeds arbitrary bytes to the header parser, the batch
// splitter and the record iterator: no panic, no hang, and anything that
// validates must iterate to exactly RecordCount records or report corruption.
func FuzzBatchDecode(f *testing.F) {
	for _, s := range fuzzSeedBatches() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseHeader(data)
		var it Records
		_, _ = SplitBatches(data, func(b Batch) error {
			h, err := ParseHeader(b)
			if err != nil {
				t.Fatalf("validated batch has bad header: %v", err)
			}
			it.Reset(b)
			n, prev := 0, h.BaseOffset-1
			for it.Next() {
				r := it.Record()
				switch {
				case h.Compacted() && (r.Offset <= prev || r.Offset > h.LastOffset()):
					t.Fatalf("compacted batch: record %d has offset %d after %d (last %d)", n, r.Offset, prev, h.LastOffset())
				case !h.Compacted() && r.Offset != h.BaseOffset+int64(n):
					t.Fatalf("record %d has offset %d", n, r.Offset)
				case h.LogAppendTime() && r.Timestamp != h.MaxTimestamp:
					t.Fatalf("log-append-time batch: record %d has timestamp %d, not %d", n, r.Timestamp, h.MaxTimestamp)
				}
				prev = r.Offset
				n++
			}
			// Compacting what decodes gives a batch that validates and
			// holds the records kept, at their offsets.
			if it.Err() == nil && n > 0 {
				out, _, err := compactBatch(b, func(r Record) recordFate {
					if r.Offset%2 == 0 {
						return keepRecord
					}
					return dropSuperseded
				})
				if err != nil {
					t.Fatalf("compacting a batch that decodes: %v", err)
				}
				if err := out.Validate(); err != nil {
					t.Fatalf("compacted batch does not validate: %v", err)
				}
				if err := out.ValidateRecords(); err != nil {
					t.Fatalf("compacted batch does not decode: %v", err)
				}
				if out.LastOffset() != h.LastOffset() || out.BaseOffset() != h.BaseOffset {
					t.Fatalf("compaction moved offsets: %d-%d to %d-%d", h.BaseOffset, h.LastOffset(), out.BaseOffset(), out.LastOffset())
				}
			}
			if it.Err() == nil && n != int(h.RecordCount) {
				t.Fatalf("iterated %d of %d records without error", n, h.RecordCount)
			}
			// A leader storing its topic's compression.type rewrites
			// what decodes into any codec: the same records come back.
			if it.Err() == nil {
				checkRecompress(t, b)
			}
			return nil
		})
		// The iterator must also survive unvalidated input, compressed
		// sections included.
		it.Reset(Batch(data))
		for it.Next() {
		}
		if len(data) >= HeaderSize {
			_ = Batch(data).ValidateRecords()
		}
	})
}

// checkRecompress rewrites a batch that decodes into every codec: each
// result validates, is in the codec asked for (or uncompressed, when that
// codec would not shrink it) and holds the same records.
func checkRecompress(t *testing.T, b Batch) {
	want, err := recordsOf(b)
	if err != nil {
		t.Fatalf("a batch that decodes: %v", err)
	}
	for _, c := range []Codec{CodecNone, CodecLZ4, CodecZstd} {
		out, err := b.Recompress(c)
		if err != nil {
			t.Fatalf("recompressing a batch that decodes to %v: %v", c, err)
		}
		if got := out.Compression(); got != c && got != CodecNone {
			t.Fatalf("recompressed to %v, stored in %v", c, got)
		}
		if err := out.Validate(); err != nil {
			t.Fatalf("recompressed to %v: %v", c, err)
		}
		got, err := recordsOf(out)
		if err != nil {
			t.Fatalf("recompressed to %v: %v", c, err)
		}
		if err := sameDecoded(got, want); err != nil {
			t.Fatalf("recompressed to %v: %v", c, err)
		}
	}
}

// FuzzRecoveryScan writes arbitrary bytes after valid batches into an
// active segment and reopens it: recovery must keep the valid prefix, never
// panic, and leave a log that accepts appends and reopens identically.
func FuzzRecoveryScan(f *testing.F) {
	good := append(append([]byte(nil), testBatch(1, 2, 0)...), testBatch(2, 3, 0)...)
	Batch(good[len(testBatch(1, 2, 0)):]).SetBaseOffset(2)
	f.Add(good, []byte{})
	f.Add(good, []byte{1, 2, 3})
	f.Add(good[:30], []byte{0, 0, 0, 0})
	f.Add([]byte{}, []byte(testBatch(3, 1, 0)[:40]))
	f.Fuzz(func(t *testing.T, prefix, tail []byte) {
		if len(prefix)+len(tail) > 1<<16 {
			return
		}
		fs := NewMemFS()
		_ = fs.MkdirAll("/log", 0o755)
		name := "/log/" + segmentName(0) + ".log"
		file, _ := fs.OpenFile(name, osCreate, 0o644)
		content := append(append([]byte(nil), prefix...), tail...)
		_, _ = file.WriteAt(content, 0)
		_ = file.Sync()
		_ = file.Close()
		_ = fs.SyncDir("/log")
		want := scanBatches(content, 0, 0, 0, 0, -1, 64, nil, 0)
		opts := Options{FS: fs, SegmentBytes: 1 << 17, IndexInterval: 64, MaxIndexBytes: 1024, Logger: quietLogger}
		l, err := Open(ctx, "/log", opts)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if l.LogEndOffset() != want.next || l.Size() != want.end {
			t.Fatalf("recovered end %d size %d, scan says %d %d", l.LogEndOffset(), l.Size(), want.next, want.end)
		}
		if _, err := l.Append(ctx, testBatch(9, 1, 0), 1); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		end := l.LogEndOffset()
		l.crashForTest()
		l2, err := Open(ctx, "/log", opts)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		if l2.LogEndOffset() != end {
			t.Fatalf("reopen end %d, want %d", l2.LogEndOffset(), end)
		}
		l2.Close()
	})
}

// FuzzSealedIndex replaces a sealed segment's offset index with arbitrary
// bytes before a clean reopen, which trusts a sealed index once its entries
// are ordered and inside the log and its last entry leads to the log's end.
// Reads of every offset and timestamp lookups must still return exactly
// what was written: never a panic, a hang or a misaligned batch.
func FuzzSealedIndex(f *testing.F) {
	fuzzDamagedIndex(f, false, func(orig []byte) [][]byte {
		// Entries in order and inside the log, but pointing into the
		// middle of batches (the last one still right).
		shifted := append([]byte(nil), orig...)
		for i := 0; i+offsetEntrySize < len(shifted); i += offsetEntrySize {
			be.PutUint32(shifted[i+4:], be.Uint32(shifted[i+4:])+3)
		}
		return [][]byte{make([]byte, len(orig)), shifted}
	})
}

// FuzzSealedTimeIndex does the same to the time index. Its timestamps cannot
// be checked without reading every batch, so a damaged file may make
// timestamp lookups answer a later offset; they must not panic or fail, and
// reads by offset must stay exact.
func FuzzSealedTimeIndex(f *testing.F) {
	fuzzDamagedIndex(f, true, func(orig []byte) [][]byte {
		wrongRel := append([]byte(nil), orig...)
		be.PutUint32(wrongRel[8:], be.Uint32(wrongRel[8:])+1)
		return [][]byte{orig[:len(orig)-timeEntrySize], wrongRel}
	})
}

// fuzzDamagedIndex runs a FuzzSealed* target on the first segment's offset
// index or (timeIndex) time index, seeded with the file as written, an
// empty one and seeds(original bytes).
func fuzzDamagedIndex(f *testing.F, timeIndex bool, seeds func(orig []byte) [][]byte) {
	fs, opts, written := sealedIndexLog(f)
	_, path, tidxPath := (&Log{dir: "/log"}).segPaths(0)
	if timeIndex {
		path = tidxPath
	}
	orig := readMemFile(f, fs, path)
	f.Add(orig)
	f.Add([]byte{})
	for _, s := range seeds(orig) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, index []byte) {
		if len(index) <= 1<<12 {
			checkDamagedIndex(t, fs, opts, path, index, written, !timeIndex)
		}
	})
}

// checkDamagedIndex reopens a copy of the closed log in fs with path's
// contents replaced by index, then reads every offset and looks up every
// record's timestamp. exactTimes: timestamp lookups must be exact (else they
// may answer a later offset).
func checkDamagedIndex(t *testing.T, fs *MemFS, opts Options, path string, index []byte, written map[int64]Batch, exactTimes bool) {
	t.Helper()
	opts.FS = fs.CrashClone() // the closed log, all synced
	if err := writeMemFile(opts.FS.(*MemFS), path, index); err != nil {
		t.Fatal(err)
	}
	l, err := Open(ctx, "/log", opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer l.Close()
	for off := range int64(len(written)) {
		v, err := l.Read(off, 1, -1)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if string(v.Data) != string(written[off]) { // one record per batch
			t.Fatalf("Read(%d) returned %d bytes, not the %d-byte batch written there", off, len(v.Data), len(written[off]))
		}
		v.Release()
		got, err := l.OffsetForTimestamp(1000 + off)
		if err != nil || got < off || (exactTimes && got != off) {
			t.Fatalf("OffsetForTimestamp(%d) = %d, %v; want %d", 1000+off, got, err, off)
		}
	}
}

// sealedIndexLog writes one-record batches (record i at timestamp 1000+i)
// until the first segment is sealed with several index entries, and closes
// the log cleanly. written maps each offset to the bytes of the batch holding
// only it.
func sealedIndexLog(tb testing.TB) (*MemFS, Options, map[int64]Batch) {
	tb.Helper()
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 4096, IndexInterval: 256, MaxIndexBytes: 1024, Logger: quietLogger}
	l := mustOpen(tb, "/log", opts)
	written := map[int64]Batch{}
	for i := int64(0); len(l.Segments()) < 2; i++ {
		b := testBatch(int(i), 1, 1000+i)
		info := mustAppend(tb, l, b, 1)
		written[info.BaseOffset] = append(Batch(nil), b...)
	}
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	return fs, opts, written
}

func readMemFile(tb testing.TB, fs *MemFS, path string) []byte {
	tb.Helper()
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		tb.Fatal(err)
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil && n > 0 {
		tb.Fatal(err)
	}
	return b
}

func writeMemFile(fs *MemFS, path string, data []byte) error {
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteAt(data, 0); err != nil {
		return err
	}
	return f.Sync()
}

// TestTimeIndexPairedWithOffsetIndex: a sealed time index whose entry names
// another batch than its offset-index twin is not trusted on a clean reopen;
// the segment is rescanned and timestamp lookups are exact.
func TestTimeIndexPairedWithOffsetIndex(t *testing.T) {
	fs, opts, written := sealedIndexLog(t)
	_, idxPath, tidxPath := (&Log{dir: "/log"}).segPaths(0)
	idx, tidx := readMemFile(t, fs, idxPath), readMemFile(t, fs, tidxPath)
	// Each time-index entry names the next entry's batch (the last one
	// batch further): still ordered, but lookups would start too late.
	n := len(idx) / offsetEntrySize
	for i := range n {
		rel := be.Uint32(idx[(i+1)%n*offsetEntrySize:])
		if i == n-1 {
			rel = be.Uint32(idx[i*offsetEntrySize:]) + 1
		}
		be.PutUint32(tidx[i*timeEntrySize+8:], rel)
	}
	if err := writeMemFile(fs, tidxPath, tidx); err != nil {
		t.Fatal(err)
	}
	opts.FS = fs
	l := mustOpen(t, "/log", opts)
	defer l.Close()
	for off := range int64(len(written)) {
		if got, err := l.OffsetForTimestamp(1000 + off); err != nil || got != off {
			t.Fatalf("OffsetForTimestamp(%d) = %d, %v; want %d", 1000+off, got, err, off)
		}
	}
}

// FuzzCheckpointFiles feeds arbitrary bytes to the parsers of the
// leader-epoch, offset and active recovery point checkpoints (read from disk at every open): no
// panic, and whatever parses re-encodes to something that parses the same.
func FuzzCheckpointFiles(f *testing.F) {
	f.Add([]byte("0\n2\n1 0\n3 120\n"))
	f.Add([]byte("0\n42\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n1\n1 0"))
	f.Add([]byte("1\n-5\n"))
	f.Add([]byte{})
	f.Add([]byte("0\n0 40960 812 1700000000000 9 40000 3735928559 7\n"))
	f.Add([]byte("0\n5 100 6 -1 0 0 0 -1\n"))
	f.Add([]byte("0\n5 100 6 -1 0 0 0\n")) // seven fields: refused
	f.Fuzz(func(t *testing.T, data []byte) {
		if p, err := decodeActivePoint("fuzz", data); err == nil {
			again, err := decodeActivePoint("fuzz", p.encode())
			if err != nil || again != p {
				t.Fatalf("active point %+v re-encoded as %+v, %v", p, again, err)
			}
			if p.anchorPos >= p.pos || p.entries < 0 || p.next <= p.base {
				t.Fatalf("accepted inconsistent active point %+v", p)
			}
		}
		if c, err := decodeEpochCache("fuzz", data); err == nil {
			again, err := decodeEpochCache("fuzz", c.encode())
			if err != nil || len(again.entries) != len(c.entries) {
				t.Fatalf("epoch cache %v re-encoded: %v %v", c.entries, again.entries, err)
			}
			for i := range c.entries {
				if again.entries[i] != c.entries[i] {
					t.Fatalf("epoch cache %v re-encoded as %v", c.entries, again.entries)
				}
				if i > 0 && (c.entries[i].Epoch <= c.entries[i-1].Epoch || c.entries[i].StartOffset < c.entries[i-1].StartOffset) {
					t.Fatalf("accepted out-of-order entries %v", c.entries)
				}
			}
		}
		fs := NewMemFS()
		_ = fs.MkdirAll("/d", 0o755)
		if err := WriteCheckpoint(fs, "/d/ck", data); err != nil {
			t.Fatal(err)
		}
		off, ok, err := readOffsetCheckpoint(fs, "/d/ck")
		if err != nil {
			return
		}
		if !ok || off < 0 {
			t.Fatalf("offset checkpoint %q read as %d, %v", data, off, ok)
		}
		if err := writeOffsetCheckpoint(fs, "/d/ck", off); err != nil {
			t.Fatal(err)
		}
		if again, _, err := readOffsetCheckpoint(fs, "/d/ck"); err != nil || again != off {
			t.Fatalf("offset %d re-read as %d, %v", off, again, err)
		}
	})
}

// FuzzSwapRecovery: Open finds a committed compaction swap
// (<base>.log.<next>.swap, compaction_swap.go) beside four segments and
// finishes it, whatever the file holds and whatever offsets its name
// gives: it never panics, and a log it opens (with or without
// TruncateOnCorruption; without, it may refuse a damaged one) serves
// contiguous batches from its start to its end and takes an append.
func FuzzSwapRecovery(f *testing.F) {
	base := NewMemFS()
	opts := Options{FS: base, SegmentBytes: 512, IndexInterval: 64, Logger: quietLogger}
	l := mustOpen(f, "/log", opts)
	for i := 0; l.LogEndOffset() < 40; i++ {
		mustAppend(f, l, testBatch(i, 3, int64(i)), 1)
	}
	segs := l.Segments()
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	read := func(b int64) []byte {
		file, err := base.OpenFile("/log/"+segmentName(b)+".log", os.O_RDONLY, 0)
		if err != nil {
			f.Fatal(err)
		}
		defer file.Close()
		size, _ := file.Size()
		data := make([]byte, size)
		_, _ = file.ReadAt(data, 0)
		return data
	}
	merged := append(read(segs[0]), read(segs[1])...)
	f.Add(uint8(0), uint8(2), merged, false)                // a good merge of the first two
	f.Add(uint8(0), uint8(2), merged[:len(merged)-7], true) // cut short
	f.Add(uint8(1), uint8(3), merged, true)                 // at the wrong place
	f.Add(uint8(0), uint8(9), []byte("not a segment"), false)
	f.Add(uint8(2), uint8(2), []byte{}, true)
	f.Fuzz(func(t *testing.T, at, to uint8, content []byte, truncate bool) {
		if len(content) > 1<<14 {
			return
		}
		fs := base.CrashClone()
		b := segs[int(at)%len(segs)]
		next := b + 1 + int64(to)%64
		if int(to) < len(segs) && segs[int(to)] > b {
			next = segs[int(to)]
		}
		file, err := fs.OpenFile("/log/"+swapName(b, next), osCreate, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = file.WriteAt(content, 0)
		_ = file.Sync()
		_ = file.Close()
		_ = fs.SyncDir("/log")
		o := opts
		o.FS, o.TruncateOnCorruption = fs, truncate
		l, err := Open(ctx, "/log", o)
		if err != nil {
			if truncate {
				t.Fatalf("Open with TruncateOnCorruption: %v", err)
			}
			return
		}
		defer l.Close()
		names, _ := fs.ReadDir("/log")
		for _, n := range names {
			if strings.HasSuffix(n, swapSuffix) {
				t.Fatalf("%s left after Open", n)
			}
		}
		next = l.LogStartOffset()
		for _, bt := range readAll(t, l, next) {
			if bt.BaseOffset() != next {
				t.Fatalf("batch at %d after one ending at %d", bt.BaseOffset(), next-1)
			}
			next = bt.LastOffset() + 1
		}
		if next != l.LogEndOffset() {
			t.Fatalf("batches end at %d, log end %d", next, l.LogEndOffset())
		}
		if _, err := l.Append(ctx, testBatch(99, 1, 0), 1); err != nil {
			t.Fatalf("append: %v", err)
		}
	})
}
