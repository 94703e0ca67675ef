package client

import (
	"testing"

	"paymentlog/segment"
)

// FuzzDecodeFetched: arbitrary fetch bytes never panic, the returned
// position never moves backwards, records come out in offset order below
// it, and the batches entered (their leader epochs) cover them (testdata/fuzz/FuzzDecodeFetched/bd2918f0adc8da43: two valid
// batches, the second at a lower base offset).
func FuzzDecodeFetched(f *testing.F) {
	bld := segment.NewBuilder(segment.BuilderOptions{ProducerID: 7, BaseSequence: 3})
	bld.Add(1, []byte("k"), []byte("v"), []segment.RecordHeader{{Key: "h", Value: []byte("x")}})
	bld.Add(2, nil, []byte("w"), nil)
	b := bld.Build()
	b.SetBaseOffset(10)
	f.Add([]byte(b), int64(0))
	f.Add([]byte(b), int64(11))
	f.Add(append(append([]byte{}, b...), b[:20]...), int64(10))
	f.Add([]byte{}, int64(0))
	for _, c := range []segment.Codec{segment.CodecLZ4, segment.CodecZstd} {
		zb := segment.NewBuilder(segment.BuilderOptions{Compression: c})
		for i := range 20 {
			zb.Add(int64(i), nil, []byte(`{"payment_id":"pay_000001","amount_minor":1200,"currency":"EUR"}`), nil)
		}
		z := zb.Build()
		z.SetBaseOffset(30)
		f.Add([]byte(z), int64(35))
	}
	f.Fuzz(func(t *testing.T, records []byte, from int64) {
		var starts []epochStart
		entered := func(epoch int32, start int64) { starts = append(starts, epochStart{epoch, start}) }
		msgs, next, _ := decodeFetched(TopicPartition{"t", 0}, records, from, nil, entered)
		if next < from {
			t.Fatalf("next %d < from %d", next, from)
		}
		// Each batch entered starts at or above from, below the position,
		// past the previous one; and every record returned is in a batch
		// entered at or below it, of that batch's epoch.
		for i, s := range starts {
			if s.start < from || s.start >= next || i > 0 && s.start <= starts[i-1].start {
				t.Fatalf("batch entered at %d (from %d, next %d, entered before %v)", s.start, from, next, starts[:i])
			}
		}
		j := -1
		for _, m := range msgs {
			for j+1 < len(starts) && starts[j+1].start <= m.Offset {
				j++
			}
			if j < 0 || starts[j].epoch != m.LeaderEpoch {
				t.Fatalf("record %d of epoch %d: batches entered %v", m.Offset, m.LeaderEpoch, starts)
			}
		}
		for i, m := range msgs {
			if m.Offset < from || m.Offset >= next {
				t.Fatalf("offset %d outside [%d, %d)", m.Offset, from, next)
			}
			if i > 0 && m.Offset <= msgs[i-1].Offset {
				t.Fatalf("offset %d after offset %d", m.Offset, msgs[i-1].Offset)
			}
		}
	})
}
