package segment

import "testing"

// BenchmarkCompression builds and reads back a 64 KiB batch of payment JSON
// records with each codec: MB/s of uncompressed records, and stored/encoded,
// the share of the bytes the log, the network and the fsyncs still carry.
// Against CodecNone in the same run: what a producer and a consumer pay.
//
//	go test ./segment -run '^$' -bench Compression -count 5
func BenchmarkCompression(b *testing.B) {
	var recs [][]byte
	size := 0
	for i := 0; size < 64<<10; i++ {
		v := paymentValue(i)
		recs = append(recs, v)
		size += len(v)
	}
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
