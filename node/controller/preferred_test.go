package controller

import (
	"testing"
	"time"

	"paymentlog/node/metadata"
)

// preferredImages returns, as of consecutive offsets: brokers 1-3 up,
// pay-0 (replicas [1,2,3]) led by 2 with broker 1 (incarnation 2) out of
// the ISR, then the same with 1 back in the ISR (waiting).
func preferredImages(t *testing.T) (out, waiting *metadata.Image) {
	t.Helper()
	img := metadata.EmptyImage()
	apply := func(recs ...metadata.Record) *metadata.Image {
		t.Helper()
		next, _, err := img.ApplyEntry(img.Offset()+1, recs)
		if err != nil {
			t.Fatal(err)
		}
		img = next
		return next
	}
	for id := int32(1); id <= 3; id++ {
		inc := int64(1)
		if id == 1 {
			inc = 2
		}
		apply(metadata.BrokerRegistered{ID: id, Addr: "127.0.0.1:7100", Incarnation: inc, MetadataVersion: metadata.MetadataVersion},
			metadata.BrokerUnfenced{ID: id, Incarnation: inc})
	}
	apply(metadata.TopicCreated{Name: "pay", ID: "pay-id", Partitions: 1, RF: 3, MinISR: 2},
		metadata.PartitionCreated{Topic: "pay", TopicID: "pay-id", Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, Leader: 2})
	out = img
	waiting = apply(metadata.PartitionChange{Topic: "pay", TopicID: "pay-id", Partition: 0, Replicas: []int32{1, 2, 3},
		ISR: []int32{1, 2, 3}, Leader: 2, PartitionEpoch: 1})
	return out, waiting
}

// TestPreferredWait: the preferred replica gets its leadership back only
// after it has been seen waiting for the delay, on one incarnation, and its
// broker reported applying the metadata as of where it was first seen so.
func TestPreferredWait(t *testing.T) {
	out, waiting := preferredImages(t)
	t0 := time.Unix(1000, 0)
	reregistered, _, err := waiting.ApplyEntry(waiting.Offset()+1, []metadata.Record{
		metadata.BrokerRegistered{ID: 1, Addr: "127.0.0.1:7100", Incarnation: 3, MetadataVersion: metadata.MetadataVersion},
		metadata.BrokerUnfenced{ID: 1, Incarnation: 3}})
	if err != nil {
		t.Fatal(err)
	}
	// A step observes img at t0+at; broker 1's incarnation inc reported
	// applied (-1: none); want: pay-0 ready.
	type step struct {
		img     *metadata.Image
		at      time.Duration
		inc     int64
		applied int64
		want    bool
	}
	w0 := int64(waiting.Offset())
	for _, tc := range []struct {
		name  string
		delay time.Duration
		steps []step
	}{
		{"delay and applied", 500 * time.Millisecond, []step{
			{waiting, 0, 2, w0, false},
			{waiting, 499 * time.Millisecond, 2, w0, false},
			{waiting, 500 * time.Millisecond, 2, w0, true},
		}},
		{"metadata not applied", 500 * time.Millisecond, []step{
			{waiting, 0, 2, w0 - 1, false},
			{waiting, time.Second, 2, w0 - 1, false},
			{waiting, time.Second, 2, -1, false},
			{waiting, time.Second, 2, w0, true},
		}},
		{"first seen later: as of that offset", 0, []step{
			{out, 0, 2, w0, false},
			{reregistered, 0, 3, w0, false}, // first seen at w0+1 (incarnation 3)
			{reregistered, 0, 3, w0 + 1, true},
		}},
		{"applied by another incarnation", 0, []step{
			{waiting, 0, 1, w0, false},
			{waiting, 0, 2, w0, true},
		}},
		{"no delay", 0, []step{
			{waiting, 0, 2, w0, true},
		}},
		{"out of the ISR restarts the wait", 500 * time.Millisecond, []step{
			{waiting, 0, 2, w0, false},
			{out, 400 * time.Millisecond, 2, w0, false},
			{waiting, 500 * time.Millisecond, 2, w0, false},
			{waiting, 999 * time.Millisecond, 2, w0, false},
			{waiting, 1000 * time.Millisecond, 2, w0, true},
		}},
		{"a new incarnation restarts the wait", 500 * time.Millisecond, []step{
			{waiting, 0, 2, w0, false},
			{reregistered, 400 * time.Millisecond, 3, w0 + 1, false},
			{reregistered, 500 * time.Millisecond, 3, w0 + 1, false},
			{reregistered, 900 * time.Millisecond, 3, w0 + 1, true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newPreferredWait(tc.delay)
			for i, s := range tc.steps {
				applied := func(id int32, inc int64) (uint64, bool) {
					if id != 1 || inc != s.inc || s.applied < 0 {
						return 0, false
					}
					return uint64(s.applied), true
				}
				got := w.readySet(s.img, t0.Add(s.at), applied)
				if r, ok := got[partitionRef{"pay-id", 0}]; ok != s.want || (ok && r != 1) {
					t.Fatalf("step %d (at %v, offset %d, applied %d by incarnation %d): ready %v, want pay-0 ready %t",
						i, s.at, s.img.Offset(), s.applied, s.inc, got, s.want)
				}
			}
		})
	}
}
