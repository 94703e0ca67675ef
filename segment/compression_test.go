package segment

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
)

// paymentValue is a payment event as JSON: what compression is for.
func paymentValue(i int) []byte {
	return fmt.Appendf(nil, `{"payment_id":"pay_%08d","merchant_id":"m_%04d","amount_minor":%d,"currency":"EUR",`+
		`"status":"authorized","card":{"brand":"visa","last4":"%04d"},"created_at":"2026-12-02T10:%02d:%02dZ"}`,
		i, i%97, 1000+i*7, i%10000, i/60%60, i%60)
}

// paymentBatch builds n payment records compressed with c.
func paymentBatch(c Codec, n int) Batch {
	b := NewBuilder(BuilderOptions{ProducerID: 7, ProducerEpoch: 1, BaseSequence: 3, Compression: c})
	for i := range n {
		b.Add(int64(1_700_000_000_000+i), fmt.Appendf(nil, "m_%04d", i%97), paymentValue(i),
			[]RecordHeader{{Key: "trace", Value: []byte{byte(i)}}})
	}
	return b.Build()
}

func TestCompressedBatchesRoundTrip(t *testing.T) {
	plain := paymentBatch(CodecNone, 200)
	for _, c := range []Codec{CodecLZ4, CodecZstd} {
		t.Run(c.String(), func(t *testing.T) {
			b := paymentBatch(c, 200)
			if b.Compression() != c {
				t.Fatalf("codec %v, want %v", b.Compression(), c)
			}
			if err := b.Validate(); err != nil {
				t.Fatal(err)
			}
			if len(b) >= len(plain)/2 {
				t.Fatalf("%v batch of %d bytes, uncompressed %d: payments JSON should shrink to less than half", c, len(b), len(plain))
			}
			t.Logf("%v: %d bytes, uncompressed %d (%.2f)", c, len(b), len(plain), float64(len(b))/float64(len(plain)))
			b.SetBaseOffset(1000)
			if err := b.ValidateRecords(); err != nil {
				t.Fatal(err)
			}
			got, want := b.Iter(), plain.Iter()
			n := 0
			for want.Next() {
				if !got.Next() {
					t.Fatalf("compressed batch ended after %d records: %v", n, got.Err())
				}
				g, w := got.Record(), want.Record()
				if g.Offset != 1000+int64(n) || g.Timestamp != w.Timestamp || !bytes.Equal(g.Key, w.Key) ||
					!bytes.Equal(g.Value, w.Value) || len(g.Headers) != 1 || !bytes.Equal(g.Headers[0].Value, w.Headers[0].Value) {
					t.Fatalf("record %d: %+v, want %+v", n, g, w)
				}
				n++
			}
			if got.Next() || got.Err() != nil || n != 200 {
				t.Fatalf("after %d records: more %v, err %v", n, got.Next(), got.Err())
			}
		})
	}
}

// Records of a compressed batch alias a buffer of that batch alone: a reader
// keeping them (a consumer handing out values) sees them intact after the
// iterator moved on.
func TestDecompressedRecordsOutliveTheIterator(t *testing.T) {
	a, b := paymentBatch(CodecZstd, 3), paymentBatch(CodecZstd, 3)
	b.SetBaseOffset(3)
	var it Records
	it.Reset(a)
	var kept [][]byte
	for it.Next() {
		kept = append(kept, it.Record().Value)
	}
	it.Reset(b)
	for it.Next() {
	}
	for i, v := range kept {
		if !bytes.Equal(v, paymentValue(i)) {
			t.Fatalf("value %d changed to %q", i, v)
		}
	}
}

func TestIncompressibleBatchStaysUncompressed(t *testing.T) {
	b := NewBuilder(BuilderOptions{Compression: CodecZstd})
	v := make([]byte, 4096)
	rand.Read(v)
	b.Add(1, nil, v, nil)
	if got := b.Build(); got.Compression() != CodecNone || got.ValidateRecords() != nil {
		t.Fatalf("random bytes built as %v (%v)", got.Compression(), got.ValidateRecords())
	}
}

// A second Build after SetOptions re-stamps the compressed bytes in place; an
// Add after Build leaves the built batch intact.
func TestCompressedBuildRestampsAndKeepsEarlierBatches(t *testing.T) {
	b := NewBuilder(BuilderOptions{Compression: CodecLZ4})
	for i := range 50 {
		b.Add(int64(i), nil, paymentValue(i), nil)
	}
	first := b.Build()
	snapshot := bytes.Clone(first)
	b.SetOptions(BuilderOptions{ProducerID: 9, ProducerEpoch: 2, BaseSequence: 40, Compression: CodecLZ4})
	second := b.Build()
	if &first[0] != &second[0] || second.Validate() != nil {
		t.Fatal("the second Build did not re-stamp the compressed batch in place")
	}
	if h, _ := ParseHeader(second); h.ProducerID != 9 || h.BaseSequence != 40 || h.Compression() != CodecLZ4 {
		t.Fatalf("re-stamped header %+v", h)
	}
	copy(second, snapshot) // as it was before SetOptions
	b.Add(99, nil, paymentValue(99), nil)
	third := b.Build()
	if !bytes.Equal(first, snapshot) || third.RecordCount() != 51 || third.ValidateRecords() != nil {
		t.Fatalf("after Add: first changed %v, third has %d records (%v)", !bytes.Equal(first, snapshot), third.RecordCount(), third.ValidateRecords())
	}
}

// restamp recomputes a batch's CRC after a test changed its bytes.
func restamp(b Batch) {
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}

// Compressed sections that do not decode are corruption, however the CRC
// came to match (a producer's bug): the leader refuses them, readers stop.
func TestBadCompressedSectionsAreRefused(t *testing.T) {
	bomb := zstdEncoder().EncodeAll(make([]byte, MaxDecompressedBytes+1), nil)
	for _, c := range []struct {
		name  string
		batch func() Batch
		want  error
	}{
		{"lz4 garbage", func() Batch {
			b := paymentBatch(CodecLZ4, 20)
			for i := HeaderSize + 8; i < len(b); i += 3 {
				b[i] ^= 0x5a
			}
			return b
		}, ErrCorrupt},
		{"lz4 claiming more than the bound", func() Batch {
			b := paymentBatch(CodecLZ4, 20)
			be.PutUint32(b[HeaderSize:], MaxDecompressedBytes+1)
			return b
		}, ErrCorrupt},
		{"lz4 claiming more than it holds", func() Batch {
			b := paymentBatch(CodecLZ4, 20)
			be.PutUint32(b[HeaderSize:], be.Uint32(b[HeaderSize:])+10)
			return b
		}, ErrCorrupt},
		{"zstd truncated", func() Batch {
			b := paymentBatch(CodecZstd, 20)
			b = b[:len(b)-5]
			be.PutUint32(b[offLength:], uint32(len(b)-lengthPrefix))
			return b
		}, ErrCorrupt},
		{"zstd bomb", func() Batch {
			b := NewBuilder(BuilderOptions{})
			b.Add(1, nil, []byte("x"), nil)
			out := append(bytes.Clone(b.Build()[:HeaderSize]), bomb...)
			be.PutUint32(out[offLength:], uint32(len(out)-lengthPrefix))
			be.PutUint16(out[offAttributes:], uint16(CodecZstd))
			return out
		}, ErrCorrupt},
		{"more records than the header says", func() Batch {
			b := paymentBatch(CodecZstd, 20)
			be.PutUint32(b[offRecordCount:], 19)
			be.PutUint32(b[offLastOffsetDelta:], 18)
			return b
		}, ErrCorrupt},
		{"gzip", func() Batch {
			b := paymentBatch(CodecNone, 2)
			be.PutUint16(b[offAttributes:], 1)
			return b
		}, ErrUnsupportedCodec},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.batch()
			restamp(b)
			if err := b.Validate(); err != nil {
				t.Fatalf("the CRC should match: %v", err)
			}
			if err := b.ValidateRecords(); !errors.Is(err, c.want) {
				t.Fatalf("ValidateRecords: %v, want %v", err, c.want)
			}
			it := b.Iter()
			for it.Next() {
			}
			if !errors.Is(it.Err(), c.want) {
				t.Fatalf("iterator: %v, want %v", it.Err(), c.want)
			}
		})
	}
	if _, err := zstdDecoder().DecodeAll(bomb, nil); err == nil {
		t.Fatal("the decoder took the bomb")
	}
}

func TestParseCodec(t *testing.T) {
	for s, want := range map[string]Codec{"none": CodecNone, "": CodecNone, "LZ4": CodecLZ4, "zstd": CodecZstd} {
		if c, err := ParseCodec(s); err != nil || c != want {
			t.Errorf("ParseCodec(%q) = %v, %v", s, c, err)
		}
	}
	if _, err := ParseCodec("gzip"); err == nil {
		t.Error("gzip parsed")
	}
}
