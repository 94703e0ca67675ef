package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"slices"
	"testing"

	"paymentlog/segment"
)

func sampleSnapshot() producerSnapshot {
	return producerSnapshot{stableEnd: 120, anchor: snapshotAnchor{baseOffset: 117, lastOffset: 119, leaderEpoch: 3, crc: 0xdeadbeef},
		producers: map[int64]*producerEntry{
			7: {epoch: 0, lastTs: 1_700_000_000_000, batches: []seqBatch{{0, 4, 10, 14}, {5, 5, 20, 20}}},
			9: {epoch: 2, lastTs: -1, batches: []seqBatch{{2147483646, 1, 117, 119}}}, // wraps; last timestamp unknown
		}}
}

func TestProducerSnapshotRoundTrip(t *testing.T) {
	s := sampleSnapshot()
	got, err := decodeProducerSnapshot(encodeProducerSnapshot(s))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got.producers {
		e.batches = e.batches[:len(e.batches):len(e.batches)]
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("decoded %+v, want %+v", got, s)
	}
	enc := encodeProducerSnapshot(s)
	for i := range enc {
		bad := append([]byte(nil), enc...)
		bad[i] ^= 0x40
		if _, err := decodeProducerSnapshot(bad); !errors.Is(err, errBadSnapshot) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	if _, err := decodeProducerSnapshot(enc[:len(enc)-1]); !errors.Is(err, errBadSnapshot) {
		t.Fatalf("truncated: %v", err)
	}
}

// TestProducerSnapshotAppliesOnlyToItsLog: a snapshot is loaded only while
// the log holds the batch it ends with: not after the log lost its tail
// below the snapshot, nor after that tail was rewritten with other batches.
func TestProducerSnapshotAppliesOnlyToItsLog(t *testing.T) {
	ctx := context.Background()
	fs, dir, lg := openSnapshotTestLog(t)
	s := newProducerState()
	for i := range 6 {
		info, err := lg.Append(ctx, buildBatch(5, int32(i), []string{"v"}), 1)
		if err != nil {
			t.Fatal(err)
		}
		s.update(5, 0, int32(i), 0, info.BaseOffset, 0)
	}
	s.advance(4) // batches 0-3 stable
	if err := writeProducerSnapshot(fs, dir, s, lg, 4); err != nil {
		t.Fatal(err)
	}
	got, ok, err := loadProducerSnapshot(fs, dir, lg)
	if err != nil || !ok || got.stableEnd != 4 || !reflect.DeepEqual(render(got.producers), render(s.stable)) {
		t.Fatalf("load: ok %v err %v state %s, want %s", ok, err, render(got.producers), render(s.stable))
	}
	if _, err := lg.TruncateTo(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := loadProducerSnapshot(fs, dir, lg); ok || err != nil {
		t.Fatalf("log shorter than the snapshot: ok %v err %v", ok, err)
	}
	for i := range 3 { // other batches (another producer, another epoch) at the same offsets
		if _, err := lg.Append(ctx, buildBatch(6, int32(i), []string{"w"}), 2); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := loadProducerSnapshot(fs, dir, lg); ok || err != nil {
		t.Fatalf("log rewritten below the snapshot: ok %v err %v", ok, err)
	}
}

// TestProducerSnapshotLoadsAfterRetentionDeletedItsAnchor: once the log
// starts at or after the snapshot's stable end (retention deleted the batch
// it is anchored on), the snapshot still loads: it is the only record of the
// producers of the deleted batches. One whose stable end is above the log
// start is still checked against its anchor.
func TestProducerSnapshotLoadsAfterRetentionDeletedItsAnchor(t *testing.T) {
	ctx := context.Background()
	fs, dir, lg := openSnapshotTestLog(t)
	s := newProducerState()
	for i := range 6 {
		pid := int64(5)
		if i >= 4 {
			pid = 0 // not idempotent
		}
		info, err := lg.Append(ctx, buildBatch(pid, int32(i), []string{"v"}), 1)
		if err != nil {
			t.Fatal(err)
		}
		if pid > 0 {
			s.update(pid, 0, int32(i), 0, info.BaseOffset, 0)
		}
	}
	s.advance(6)                                                     // batches 0-3 of producer 5 stable: stable end 4
	if err := writeProducerSnapshot(fs, dir, s, lg, 4); err != nil { // an HW of 4: the snapshot ends there
		t.Fatal(err)
	}
	if err := lg.DeleteBefore(ctx, 5); err != nil { // past the anchor (offset 3) and a batch more
		t.Fatal(err)
	}
	got, ok, err := loadProducerSnapshot(fs, dir, lg)
	if err != nil || !ok || render(got.producers) != render(s.stable) {
		t.Fatalf("after retention: ok %v err %v state %s, want %s", ok, err, render(got.producers), render(s.stable))
	}
}

// TestProducerSnapshotSpansBatchesWithoutProducerIDs: a snapshot ends past
// the stable end, at the HW, when only batches without a producer id lie
// between (so that a log written without idempotence gets snapshots too),
// but never past an idempotent batch still pending, nor past the log end,
// and a state that is unknown gets none.
func TestProducerSnapshotSpansBatchesWithoutProducerIDs(t *testing.T) {
	ctx := context.Background()
	fs, dir, lg := openSnapshotTestLog(t)
	s := newProducerState()
	for i := range 8 {
		pid := int64(0) // not idempotent
		if i == 2 || i == 6 {
			pid = 5
		}
		info, err := lg.Append(ctx, buildBatch(pid, int32(i), []string{"v"}), 1)
		if err != nil {
			t.Fatal(err)
		}
		if pid > 0 {
			s.update(pid, 0, int32(i), 0, info.BaseOffset, 0)
		}
	}
	for _, c := range []struct {
		advanced, hw, want int64 // the HW the state has advanced to, the HW at the snapshot
	}{
		{advanced: 2, hw: 2, want: 2},   // the HW
		{advanced: 5, hw: 5, want: 5},   // past the stable batch 2, before the pending one at 6
		{advanced: 5, hw: 7, want: 6},   // not past the batch at 6, still pending
		{advanced: 7, hw: 7, want: 7},   // once it is stable, past it
		{advanced: 99, hw: 99, want: 8}, // never past the log end
	} {
		s.advance(c.advanced)
		if err := writeProducerSnapshot(fs, dir, s, lg, c.hw); err != nil {
			t.Fatal(err)
		}
		got, ok, err := loadProducerSnapshot(fs, dir, lg)
		if err != nil || !ok || got.stableEnd != c.want || render(got.producers) != render(s.stable) {
			t.Fatalf("HW %d: ok %v err %v end %d state %s, want end %d state %s", c.hw, ok, err, got.stableEnd, render(got.producers), c.want, render(s.stable))
		}
	}
	if _, ok := snapshotOf(unknownProducerState(errors.New("x")), lg, 8); ok {
		t.Fatal("a snapshot of an unknown producer state")
	}
}

// TestProducerSnapshotReadsVersion1: a snapshot written before producer ids
// expired (no last timestamps) loads, its producers with lastTs -1, which
// the first expiry check takes as active now.
func TestProducerSnapshotReadsVersion1(t *testing.T) {
	s := producerSnapshot{stableEnd: 21, anchor: snapshotAnchor{baseOffset: 20, lastOffset: 20, leaderEpoch: 1, crc: 7},
		producers: map[int64]*producerEntry{7: {epoch: 1, lastTs: 99, batches: []seqBatch{{5, 5, 20, 20}}}}}
	v1 := encodeProducerSnapshotV1(s)
	got, err := decodeProducerSnapshot(v1)
	if err != nil {
		t.Fatal(err)
	}
	if e := got.producers[7]; e == nil || e.lastTs != -1 || e.epoch != 1 || len(e.batches) != 1 || e.batches[0] != s.producers[7].batches[0] {
		t.Fatalf("version 1 decoded as %+v", got.producers)
	}
	st := newProducerState()
	st.producers[7] = got.producers[7]
	st.stable[7] = &producerEntry{epoch: 1, lastTs: -1, batches: slices.Clone(got.producers[7].batches)}
	if n := st.expire(1_000_000, 10); n != 0 || st.producers[7].lastTs != 1_000_000 || st.stable[7].lastTs != 1_000_000 {
		t.Fatalf("first expiry of an unknown age: expired %d, lastTs %d", n, st.producers[7].lastTs)
	}
	if n := st.expire(1_000_010, 10); n != 1 || len(st.producers) != 0 || len(st.stable) != 0 {
		t.Fatalf("expiry after the ttl: expired %d, left %v %v", n, st.producers, st.stable)
	}
}

// encodeProducerSnapshotV1 is the version 1 encoding of a snapshot of one
// producer: version 2's without the last timestamp.
func encodeProducerSnapshotV1(s producerSnapshot) []byte {
	v2 := encodeProducerSnapshot(s)
	b := append([]byte(nil), v2[:snapshotHeaderSize+10]...)
	b = append(b, v2[snapshotHeaderSize+18:len(v2)-4]...)
	b[4] = 1
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

func FuzzProducerSnapshot(f *testing.F) {
	f.Add(encodeProducerSnapshot(sampleSnapshot()))
	f.Add(encodeProducerSnapshot(producerSnapshot{stableEnd: 1, anchor: snapshotAnchor{lastOffset: 0}}))
	f.Add([]byte("PLPS\x01"))
	f.Add(encodeProducerSnapshotV1(producerSnapshot{stableEnd: 21, anchor: snapshotAnchor{baseOffset: 20, lastOffset: 20},
		producers: map[int64]*producerEntry{7: {batches: []seqBatch{{5, 5, 20, 20}}}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodeProducerSnapshot(data)
		if err != nil {
			return
		}
		again, err := decodeProducerSnapshot(encodeProducerSnapshot(s))
		if err != nil || render(again.producers) != render(s.producers) || again.stableEnd != s.stableEnd || again.anchor != s.anchor {
			t.Fatalf("re-encoding: %v", err)
		}
	})
}

// openSnapshotTestLog opens an empty log in memory at "/p", closed when the
// test ends.
func openSnapshotTestLog(t *testing.T) (*segment.MemFS, string, *segment.Log) {
	t.Helper()
	fs := segment.NewMemFS()
	lg, err := segment.Open(context.Background(), "/p", segment.Options{FS: fs, Sync: segment.SyncNever, SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	return fs, "/p", lg
}
