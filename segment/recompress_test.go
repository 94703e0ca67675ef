package segment

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
)

// recordsOf decodes every record of b, deep-copied, with the iterator's
// error.
func recordsOf(b Batch) ([]Record, error) {
	var out []Record
	it := b.Iter()
	for it.Next() {
		r := it.Record()
		c := Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)}
		for _, h := range r.Headers {
			c.Headers = append(c.Headers, RecordHeader{Key: h.Key, Value: bytes.Clone(h.Value)})
		}
		out = append(out, c)
	}
	return out, it.Err()
}

// sameDecoded compares decoded records field by field (nil and empty kept
// apart: a null key is not an empty one).
func sameDecoded(a, b []Record) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d records, want %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Offset != y.Offset || x.Timestamp != y.Timestamp || !sameBytes(x.Key, y.Key) || !sameBytes(x.Value, y.Value) ||
			len(x.Headers) != len(y.Headers) {
			return fmt.Errorf("record %d: %+v, want %+v", i, x, y)
		}
		for j := range x.Headers {
			if x.Headers[j].Key != y.Headers[j].Key || !sameBytes(x.Headers[j].Value, y.Headers[j].Value) {
				return fmt.Errorf("record %d header %d: %+v, want %+v", i, j, x.Headers[j], y.Headers[j])
			}
		}
	}
	return nil
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// Every codec to every codec: the records read back identical (keys, null
// values, headers, timestamps, offsets), the header keeps its offsets,
// timestamps, producer fields and other attribute bits, the CRC is valid,
// and the codec is the one asked for.
func TestRecompressRoundTrip(t *testing.T) {
	codecs := []Codec{CodecNone, CodecLZ4, CodecZstd}
	for _, from := range codecs {
		src := paymentBatch(from, 300)
		if src.Compression() != from {
			t.Fatalf("test batch in %v, want %v", src.Compression(), from)
		}
		// What a leader holds after stamping: offsets, epoch and the
		// log-append-time bit, all of which must survive.
		src.SetBaseOffset(5000)
		src.SetLeaderEpoch(4)
		src.StampLogAppendTime(1_800_000_000_123)
		want, err := recordsOf(src)
		if err != nil {
			t.Fatal(err)
		}
		wantHdr, _ := ParseHeader(src)
		orig := bytes.Clone(src)
		for _, to := range codecs {
			t.Run(from.String()+"-to-"+to.String(), func(t *testing.T) {
				out, err := src.Recompress(to)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(src, orig) {
					t.Fatal("Recompress changed its input")
				}
				if out.Compression() != to {
					t.Fatalf("codec %v, want %v", out.Compression(), to)
				}
				if err := out.Validate(); err != nil || out.Size() != len(out) {
					t.Fatalf("result does not validate as one batch: %v (size %d of %d)", err, out.Size(), len(out))
				}
				got, err := recordsOf(out)
				if err != nil {
					t.Fatal(err)
				}
				if err := sameDecoded(got, want); err != nil {
					t.Fatal(err)
				}
				h, _ := ParseHeader(out)
				wantH := wantHdr
				wantH.Length, wantH.CRC = h.Length, h.CRC
				wantH.Attributes = wantHdr.Attributes&^codecMask | int16(to)
				if h != wantH {
					t.Fatalf("header %+v, want %+v", h, wantH)
				}
				if from == to && &out[0] != &src[0] {
					t.Fatal("a batch already in the codec was copied")
				}
				if from != to && &out[0] == &src[0] {
					t.Fatal("a rewritten batch aliases its input")
				}
			})
		}
	}
}

// Null keys, null and empty values, several headers, no headers: the
// records section is kept byte for byte, so a round trip through a codec
// and back gives the very bytes a producer built.
func TestRecompressKeepsRecordBytes(t *testing.T) {
	b := NewBuilder(BuilderOptions{ProducerID: 11, ProducerEpoch: 2, BaseSequence: 7})
	for i := range 200 {
		var key, val []byte
		if i%3 != 0 {
			key = fmt.Appendf(nil, "acct-%d", i%5)
		}
		switch i % 4 {
		case 0:
			val = nil // a tombstone
		case 1:
			val = []byte{}
		default:
			val = paymentValue(i)
		}
		hdrs := []RecordHeader{{Key: "trace", Value: []byte{byte(i)}}, {Key: "null", Value: nil}}
		b.Add(int64(1_700_000_000_000-i*3), key, val, hdrs[:i%3])
	}
	plain := b.Build()
	for _, c := range []Codec{CodecLZ4, CodecZstd} {
		comp, err := plain.Recompress(c)
		if err != nil || comp.Compression() != c {
			t.Fatalf("%v: %v, codec %v", c, err, comp.Compression())
		}
		back, err := comp.Recompress(CodecNone)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, plain) {
			t.Fatalf("%v and back: %d bytes differ from the %d built", c, len(back), len(plain))
		}
	}
}

// A batch the codec would not shrink is stored uncompressed, as a
// producer's Builder does: sent uncompressed, it comes back as it is; sent
// in another codec, it comes back uncompressed.
func TestRecompressIncompressibleStaysUncompressed(t *testing.T) {
	v := make([]byte, 8192)
	rand.Read(v)
	plain := NewBuilder(BuilderOptions{})
	plain.Add(1, nil, v, nil)
	pb := plain.Build()
	out, err := pb.Recompress(CodecZstd)
	if err != nil || &out[0] != &pb[0] {
		t.Fatalf("random bytes to zstd: %v; want the batch itself (aliased %v)", err, err == nil && &out[0] == &pb[0])
	}
	// The same records in lz4, which does not shrink them either: a
	// Builder would not send that, so the section is compressed by hand.
	lz, err := compressRecords(bytes.Clone(pb[:HeaderSize]), CodecLZ4, pb[HeaderSize:])
	if err != nil {
		t.Fatal(err)
	}
	be.PutUint32(lz[offLength:], uint32(len(lz)-lengthPrefix))
	be.PutUint16(lz[offAttributes:], uint16(CodecLZ4))
	restamp(lz)
	if err := Batch(lz).ValidateRecords(); err != nil {
		t.Fatal(err)
	}
	out, err = Batch(lz).Recompress(CodecZstd)
	if err != nil || out.Compression() != CodecNone || !bytes.Equal(out, pb) {
		t.Fatalf("incompressible lz4 batch to zstd: %v, codec %v, equal to the uncompressed batch %v", err, out.Compression(), bytes.Equal(out, pb))
	}
}

// Bad input is an error, never a panic: a codec this build does not write,
// a compressed section that does not decode, a batch that is not whole.
func TestRecompressRefusals(t *testing.T) {
	b := paymentBatch(CodecNone, 10)
	if _, err := b.Recompress(Codec(1)); !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatalf("to gzip: %v, want ErrUnsupportedCodec", err)
	}
	gz := bytes.Clone(b)
	be.PutUint16(gz[offAttributes:], 2) // snappy
	restamp(gz)
	if _, err := Batch(gz).Recompress(CodecZstd); !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatalf("from snappy: %v, want ErrUnsupportedCodec", err)
	}
	bad := bytes.Clone(paymentBatch(CodecZstd, 50))
	for i := HeaderSize + 10; i < len(bad); i += 7 {
		bad[i] ^= 0x5a
	}
	restamp(bad)
	if _, err := Batch(bad).Recompress(CodecLZ4); !IsCorruption(err) {
		t.Fatalf("undecodable zstd section: %v, want corruption", err)
	}
	if _, err := b[:len(b)-1].Recompress(CodecZstd); !IsCorruption(err) {
		t.Fatalf("truncated batch: %v, want corruption", err)
	}
}
