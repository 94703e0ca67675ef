package segment

import "testing"

// BenchmarkCompression builds and reads back a 64 KiB batch of payment JSON
// records with each codec: MB/s of uncompressed records, and stored/encoded,
// the share of the bytes the log, the network and the fsyncs still carry.
// Against CodecNone in the same run: what a producer and a consumer pay.
//
//	go test ./segment -run '^$' -bench Compression -count 5
func BenchmarkCompression(b *testing.B) {
	recs, size := paymentValues64K()
	for _, c := range []Codec{CodecNone, CodecLZ4, CodecZstd} {
		bld := NewBuilder(BuilderOptions{})
		build := func() Batch {
			bld.Recycle(BuilderOptions{Compression: c}, size+len(recs)*16)
			for i, v := range recs {
				bld.Add(int64(i), nil, v, nil)
			}
			return bld.Build()
		}
		encoded := len(build()) // uncompressed when c is none
		if c != CodecNone {
			plain := NewBuilder(BuilderOptions{})
			for i, v := range recs {
				plain.Add(int64(i), nil, v, nil)
			}
			encoded = plain.Size()
		}
		b.Run("build/"+c.String(), func(b *testing.B) {
			b.SetBytes(int64(encoded))
			var out Batch
			for b.Loop() {
				out = build()
			}
			b.ReportMetric(float64(len(out))/float64(encoded), "stored/encoded")
		})
		batch := append(Batch(nil), build()...)
		b.Run("read/"+c.String(), func(b *testing.B) {
			b.SetBytes(int64(encoded))
			var it Records
			for b.Loop() {
				it.Reset(batch)
				for it.Next() {
				}
				if it.Err() != nil {
					b.Fatal(it.Err())
				}
			}
		})
	}
}

// BenchmarkRecompress is what a leader pays per batch to store its topic's
// compression.type (Batch.Recompress) on a 64 KiB batch of payment JSON:
// MB/s of uncompressed records, for a producer's batch sent uncompressed or
// in the other codec, and for a compressed one stored uncompressed.
//
//	go test ./segment -run '^$' -bench Recompress -count 5
func BenchmarkRecompress(b *testing.B) {
	recs, _ := paymentValues64K()
	batchIn := func(c Codec) Batch {
		bld := NewBuilder(BuilderOptions{ProducerID: 7, ProducerEpoch: 1, BaseSequence: 3, Compression: c})
		for i, v := range recs {
			bld.Add(int64(i), nil, v, nil)
		}
		return bld.Build()
	}
	encoded := len(batchIn(CodecNone)) - HeaderSize
	for _, tc := range []struct{ from, to Codec }{
		{CodecNone, CodecLZ4}, {CodecNone, CodecZstd}, {CodecLZ4, CodecZstd}, {CodecZstd, CodecLZ4},
		{CodecLZ4, CodecNone}, {CodecZstd, CodecNone},
	} {
		in := batchIn(tc.from)
		if in.Compression() != tc.from {
			b.Fatalf("batch built in %v, want %v", in.Compression(), tc.from)
		}
		b.Run(tc.from.String()+"-to-"+tc.to.String(), func(b *testing.B) {
			b.SetBytes(int64(encoded))
			var out Batch
			for b.Loop() {
				var err error
				if out, err = in.Recompress(tc.to); err != nil {
					b.Fatal(err)
				}
			}
			if out.Compression() != tc.to {
				b.Fatalf("stored in %v, want %v", out.Compression(), tc.to)
			}
			b.ReportMetric(float64(len(out))/float64(len(in)), "stored/sent")
		})
	}
}

// paymentValues64K is 64 KiB (and a little more) of payment JSON values,
// and their total size: a batch's worth for the codec benchmarks.
func paymentValues64K() (recs [][]byte, size int) {
	for i := 0; size < 64<<10; i++ {
		v := paymentValue(i)
		recs = append(recs, v)
		size += len(v)
	}
	return recs, size
}
