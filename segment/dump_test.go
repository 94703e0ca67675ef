package segment

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// dumpOf appends batches of 3 records at offsets 0, 3, 6 into one buffer.
func dumpOf() []byte {
	var buf []byte
	for i := range 3 {
		b := testBatch(i, 3, 1_700_000_000_000)
		b.SetBaseOffset(int64(3 * i))
		b.SetLeaderEpoch(int32(i))
		buf = append(buf, b...)
	}
	return buf
}

// DumpLog on whole, zero-padded, torn, corrupt and gapped segment bytes:
// it prints every valid batch and says where and why the valid data ends.
func TestDumpLog(t *testing.T) {
	good := dumpOf()
	one := len(good) / 3
	gapped := bytes.Clone(good)
	Batch(gapped[2*one:]).SetBaseOffset(7)
	badCRC := bytes.Clone(good)
	badCRC[one+HeaderSize+2] ^= 0xff
	for _, c := range []struct {
		name    string
		data    []byte
		batches int64
		end     string
		corrupt bool
		gaps    int
	}{
		{"whole", good, 3, "", false, 0},
		{"active segment with room", append(bytes.Clone(good), make([]byte, 5000)...), 3, "zeros from byte", false, 0},
		{"torn tail", good[:len(good)-5], 2, "torn tail: a batch of", false, 0},
		{"a few bytes of a header", append(bytes.Clone(good), 0, 0, 1), 3, "torn tail: 3 bytes", false, 0},
		{"corrupt CRC", badCRC, 1, "corrupt: batch at byte", true, 0},
		{"garbage", append(bytes.Clone(good), bytes.Repeat([]byte{0xab}, 100)...), 3, "corrupt: invalid batch length", true, 0},
		{"offset gap", gapped, 3, "", false, 1},
	} {
		var out strings.Builder
		s, err := DumpLog(&out, bytes.NewReader(c.data), int64(len(c.data)), DumpOptions{Records: true, MaxValueBytes: -1})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if s.Batches != c.batches || !strings.HasPrefix(s.End, c.end) || s.Corrupt != c.corrupt || s.Gaps != c.gaps {
			t.Fatalf("%s: %+v\n%s", c.name, s, out.String())
		}
		if s.ValidBytes != int64(c.batches)*int64(one) {
			t.Fatalf("%s: valid bytes %d, want %d", c.name, s.ValidBytes, c.batches*int64(one))
		}
		if got := strings.Count(out.String(), "| offset: "); got != 3*int(c.batches) {
			t.Fatalf("%s: %d records printed, want %d:\n%s", c.name, got, 3*c.batches, out.String())
		}
	}
	var out strings.Builder
	if _, err := DumpLog(&out, bytes.NewReader(good), int64(len(good)), DumpOptions{Records: true, MaxValueBytes: -1}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"baseOffset: 3 lastOffset: 5 count: 3 position: " + strconv.Itoa(one) + " size: " + strconv.Itoa(one) + " leaderEpoch: 1 producerId: -1",
		"maxTimestamp: 1700000000002(2023-11-14T22:13:20.002Z) compression: none crc: ",
		`| offset: 4 timestamp: 1700000000001(2023-11-14T22:13:20.001Z) key: "k1" value: "v1-1"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("dump lacks %q:\n%s", want, out.String())
		}
	}
}

// compressedDumpOf appends a zstd, an lz4 and an uncompressed batch of n
// payment records each, at offsets 0, n and 2n.
func compressedDumpOf(n int) []byte {
	var buf []byte
	for i, c := range []Codec{CodecZstd, CodecLZ4, CodecNone} {
		b := paymentBatch(c, n)
		b.SetBaseOffset(int64(i * n))
		buf = append(buf, b...)
	}
	return buf
}

// Each batch's line names its codec, and --records prints a compressed
// batch's records decompressed, as an uncompressed one's.
func TestDumpLogCompressed(t *testing.T) {
	data := compressedDumpOf(20)
	var out strings.Builder
	s, err := DumpLog(&out, bytes.NewReader(data), int64(len(data)), DumpOptions{Records: true, MaxValueBytes: -1})
	if err != nil || s.Batches != 3 || s.Records != 60 || s.Corrupt || s.BadRecords != 0 || s.Gaps != 0 || s.ValidBytes != int64(len(data)) {
		t.Fatalf("%+v %v\n%s", s, err, out.String())
	}
	lines := strings.Split(out.String(), "\n")
	var codecs []string
	for _, l := range lines {
		if strings.HasPrefix(l, "baseOffset: ") {
			_, rest, _ := strings.Cut(l, " compression: ")
			codec, _, _ := strings.Cut(rest, " ")
			codecs = append(codecs, codec)
		}
	}
	if strings.Join(codecs, ",") != "zstd,lz4,none" {
		t.Fatalf("codecs %v, want zstd, lz4, none:\n%s", codecs, out.String())
	}
	for batch := range 3 {
		for i := range 20 {
			want := fmt.Sprintf("| offset: %d timestamp: %s key: %q value: %q header \"trace\": %q",
				batch*20+i, fmtMillis(int64(1_700_000_000_000+i)), fmt.Sprintf("m_%04d", i%97), paymentValue(i), []byte{byte(i)})
			if !strings.Contains(out.String(), want+"\n") {
				t.Fatalf("dump lacks %q:\n%s", want, out.String())
			}
		}
	}
}

// A CRC-valid batch whose records do not decode (a compressed section that
// does not decompress, gzip, which this build does not read) prints one
// UNDECODABLE line naming its position and codec, and the dump goes on with
// the batches after it; without --records nothing is decoded.
func TestDumpLogUndecodableBatchGoesOn(t *testing.T) {
	good := compressedDumpOf(10)
	zstdLen := len(paymentBatch(CodecZstd, 10))
	garbled := paymentBatch(CodecZstd, 10)
	for i := HeaderSize + 8; i < len(garbled); i += 3 {
		garbled[i] ^= 0x5a
	}
	garbled.SetBaseOffset(30)
	restamp(garbled)
	gzip := paymentBatch(CodecNone, 10)
	be.PutUint16(gzip[offAttributes:], 1)
	gzip.SetBaseOffset(40)
	restamp(gzip)
	data := append(append(bytes.Clone(good[:zstdLen]), garbled...), gzip...)
	data = append(data, good[zstdLen:]...) // lz4 and none, offsets 10-29: a gap
	var out strings.Builder
	s, err := DumpLog(&out, bytes.NewReader(data), int64(len(data)), DumpOptions{Records: true, MaxValueBytes: 8})
	if err != nil || s.Batches != 5 || s.BadRecords != 2 || s.Corrupt || s.End != "" || s.ValidBytes != int64(len(data)) {
		t.Fatalf("%+v %v\n%s", s, err, out.String())
	}
	for _, want := range []string{
		fmt.Sprintf("| UNDECODABLE: records of the batch at byte %d (compression zstd): segment: corrupt", zstdLen),
		fmt.Sprintf("| UNDECODABLE: records of the batch at byte %d (compression codec(1)): segment: unsupported compression codec 1", zstdLen+len(garbled)),
	} {
		if strings.Count(out.String(), want) != 1 {
			t.Fatalf("dump lacks %q once:\n%s", want, out.String())
		}
	}
	if got := strings.Count(out.String(), "| offset: "); got != 30 {
		t.Fatalf("%d records printed, want the 30 of the three good batches:\n%s", got, out.String())
	}
	out.Reset()
	if s, err := DumpLog(&out, bytes.NewReader(data), int64(len(data)), DumpOptions{}); err != nil || s.Batches != 5 || s.BadRecords != 0 ||
		strings.Contains(out.String(), "UNDECODABLE") {
		t.Fatalf("without records: %+v %v\n%s", s, err, out.String())
	}
}

// The files a real log writes dump cleanly: its sealed segment ends with
// its last batch, and its index entries point in order.
func TestDumpRealSegment(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, Options{SegmentBytes: 1 << 20, IndexInterval: 64})
	for i := range 40 {
		mustAppend(t, l, testBatch(i, 5, 1_700_000_000_000+int64(i)), 0)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "00000000000000000000")
	data, err := os.ReadFile(seg + ".log")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	s, err := DumpLog(&out, bytes.NewReader(data), int64(len(data)), DumpOptions{})
	if err != nil || s.Batches != 40 || s.Records != 200 || s.Corrupt || s.Gaps != 0 || s.FirstOffset != 0 || s.LastOffset != 199 {
		t.Fatalf("%+v %v", s, err)
	}
	checkIndexFiles(t, seg)
}

// An index whose entries go backwards says so.
func TestDumpIndexOutOfOrder(t *testing.T) {
	idx := []byte{0, 0, 0, 5, 0, 0, 1, 0, 0, 0, 0, 3, 0, 0, 2, 0, 0, 0}
	var out strings.Builder
	n, disorder, err := DumpIndex(&out, bytes.NewReader(idx), OffsetIndex, 100)
	if err != nil || n != 2 || disorder != 2 || !strings.Contains(out.String(), "offset: 103 position: 512 OUT-OF-ORDER") ||
		!strings.Contains(out.String(), "torn entry: the file ends 2 bytes into entry 2") {
		t.Fatalf("%d %d %v\n%s", n, disorder, err, out.String())
	}
}

// FuzzDumpLog: no input makes DumpLog or DumpIndex panic or fail for
// anything but a read error, and the valid bytes never exceed the file.
func FuzzDumpLog(f *testing.F) {
	good := dumpOf()
	f.Add(good)
	f.Add(append(bytes.Clone(good), make([]byte, 100)...))
	f.Add(good[:len(good)-7])
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0})
	f.Add(compressedDumpOf(5))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out strings.Builder
		s, err := DumpLog(&out, bytes.NewReader(data), int64(len(data)), DumpOptions{Records: true, MaxValueBytes: 8})
		if err != nil || s.ValidBytes > int64(len(data)) || s.BadRecords > int(s.Batches) {
			t.Fatalf("%+v %v", s, err)
		}
		for _, k := range []IndexKind{OffsetIndex, TimeIndex} {
			if _, _, err := DumpIndex(&out, bytes.NewReader(data), k, 0); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// checkIndexFiles dumps the .index and .timeindex of the segment seg (its
// path without extension): each has entries, in order.
func checkIndexFiles(t *testing.T, seg string) {
	t.Helper()
	for _, c := range []struct {
		ext  string
		kind IndexKind
	}{{".index", OffsetIndex}, {".timeindex", TimeIndex}} {
		f, err := os.Open(seg + c.ext)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		n, disorder, err := DumpIndex(&out, f, c.kind, 0)
		f.Close()
		if err != nil || n == 0 || disorder != 0 {
			t.Fatalf("%s: %d entries, %d out of order, %v\n%s", c.ext, n, disorder, err, out.String())
		}
	}
}
