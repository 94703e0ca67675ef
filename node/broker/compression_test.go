package broker

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"

	"paymentlog/segment"
	"paymentlog/wire"
)

func compressedBatch(c segment.Codec, vals ...string) []byte {
	bd := segment.NewBuilder(segment.BuilderOptions{Compression: c})
	for _, v := range vals {
		bd.Add(1700000000000, nil, []byte(v), nil)
	}
	return slices.Clone([]byte(bd.Build()))
}

// recrc recomputes a batch's CRC-32C (bytes 21 to the end), as a producer
// with a bug in its records but not in its checksum would.
func recrc(b []byte) {
	sum := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli))
	b[17], b[18], b[19], b[20] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
}

// A compressed batch is stored and replicated as the producer sent it, and
// reads back; the leader refuses a codec it does not read and a compressed
// section that does not decode, whatever its CRC, so that no record is
// acknowledged that a consumer could not read.
func TestProduceCompressedBatches(t *testing.T) {
	c := newTestCluster(t, clusterOptions{})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	var vals []string
	for i := range 100 {
		vals = append(vals, fmt.Sprintf(`{"payment_id":"pay_%06d","amount_minor":%d,"currency":"EUR","status":"captured"}`, i, 100+i))
	}
	b := compressedBatch(segment.CodecZstd, vals...)
	if segment.Batch(b).Compression() != segment.CodecZstd {
		t.Fatal("the test batch is not compressed")
	}
	if r := mustProduce(t, c, wire.AcksAll, b); r.Err != wire.None || r.BaseOffset != 0 {
		t.Fatalf("compressed produce: %+v", r)
	}
	waitInSync(t, c, testKey)
	got := readAll(t, c.node(1).b.partition("payments", 0).log, 100)
	for i, v := range vals {
		if got[int64(i)] != v {
			t.Fatalf("offset %d holds %q, want %q", i, got[int64(i)], v)
		}
	}
	want := logBytes(t, c.node(1).b.partition("payments", 0).log, 100)
	if len(want) != len(b) {
		t.Fatalf("the leader stored %d bytes for a batch of %d", len(want), len(b))
	}
	for _, id := range []int32{2, 3} {
		if g := logBytes(t, c.node(id).b.partition("payments", 0).log, 100); !bytes.Equal(g, want) {
			t.Fatalf("replica %d differs from the leader", id)
		}
	}

	gzip := compressedBatch(segment.CodecNone, "x")
	gzip[22] |= 1 // Attributes' codec bits: 1 is gzip
	recrc(gzip)
	if r := mustProduce(t, c, wire.AcksAll, gzip); r.Err != wire.UnsupportedCompressionType {
		t.Fatalf("gzip batch: %+v", r)
	}
	bad := compressedBatch(segment.CodecLZ4, vals...)
	for i := segment.HeaderSize + 8; i < len(bad); i += 5 {
		bad[i] ^= 0x33
	}
	recrc(bad)
	if r := mustProduce(t, c, wire.AcksAll, bad); r.Err != wire.CorruptMessage {
		t.Fatalf("undecodable lz4 section: %+v", r)
	}
	plain := compressedBatch(segment.CodecNone, "a", "b")
	plain[len(plain)-1] = 0x7f // the last record's header count
	recrc(plain)
	if r := mustProduce(t, c, wire.AcksAll, plain); r.Err != wire.CorruptMessage {
		t.Fatalf("uncompressed batch with a bad record: %+v", r)
	}
	if r := mustProduce(t, c, wire.AcksAll, compressedBatch(segment.CodecLZ4, vals...)); r.Err != wire.None || r.BaseOffset != 100 {
		t.Fatalf("the next good batch: %+v", r)
	}
}
