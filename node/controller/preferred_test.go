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
// broker reported applying the metadata as of where it was first seen so
// and keeps up with the log.
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
				progress := func(id int32, inc int64) (uint64, bool, bool) {
					if id != 1 || inc != s.inc || s.applied < 0 {
						return 0, false, false
					}
					return uint64(s.applied), true, true
				}
				got := w.readySet(s.img, t0.Add(s.at), progress)
				if r, ok := got[partitionRef{"pay-id", 0}]; ok != s.want || (ok && r != 1) {
					t.Fatalf("step %d (at %v, offset %d, applied %d by incarnation %d): ready %v, want pay-0 ready %t",
						i, s.at, s.img.Offset(), s.applied, s.inc, got, s.want)
				}
			}
		})
	}
}

// A preferred replica that has waited long enough and applied the log as
// of where it was first seen waiting, but no longer keeps up with the log
// (its latest heartbeat reported less than the log held at the one before:
// it stopped receiving it), does not get its leadership back until it
// does again.
func TestPreferredWaitNeedsABrokerKeepingUp(t *testing.T) {
	_, waiting := preferredImages(t)
	t0 := time.Unix(1000, 0)
	w0 := uint64(waiting.Offset())
	w := newPreferredWait(500 * time.Millisecond)
	keepingUp := true
	progress := func(id int32, inc int64) (uint64, bool, bool) {
		return w0, keepingUp, id == 1 && inc == 2
	}
	for i, s := range []struct {
		at        time.Duration
		keepingUp bool
		want      bool
	}{
		{0, true, false},
		{time.Second, false, false},
		{2 * time.Second, false, false},
		{2 * time.Second, true, true},
	} {
		keepingUp = s.keepingUp
		got := w.readySet(waiting, t0.Add(s.at), progress)
		if _, ok := got[partitionRef{"pay-id", 0}]; ok != s.want {
			t.Fatalf("step %d (at %v, keeping up %t): ready %v, want pay-0 ready %t", i, s.at, s.keepingUp, got, s.want)
		}
	}
}

// keepingUp: a heartbeat keeps up when it reports applying at least the
// offset the log had when the heartbeat before it arrived, and only while
// it is recent.
func TestSessionsKeepingUp(t *testing.T) {
	s := newSessions(time.Second)
	t0 := time.Unix(1000, 0)
	s.touch(1, 7, t0)
	beat := func(at time.Duration, applied int64, log uint64) bool {
		s.touch(1, 7, t0.Add(at))
		s.reportApplied(1, 7, applied, log, true)
		return s.keepingUp(1, 7, t0.Add(at), 100*time.Millisecond)
	}
	for i, st := range []struct {
		at      time.Duration
		applied int64
		log     uint64
		want    bool
	}{
		{0, 10, 10, false},                      // the first heartbeat: nothing to compare with
		{50 * time.Millisecond, 10, 12, true},   // at least the 10 the log had at the one before
		{100 * time.Millisecond, 11, 15, false}, // below the 12 of the one before
		{150 * time.Millisecond, 11, 15, false}, // stuck while the log held 15
		{200 * time.Millisecond, 15, 15, true},  // caught up
		{250 * time.Millisecond, -1, 16, false}, // reports nothing applied
	} {
		if got := beat(st.at, st.applied, st.log); got != st.want {
			t.Fatalf("heartbeat %d (applied %d, log %d): keeping up %t, want %t", i, st.applied, st.log, got, st.want)
		}
	}
	s.reportApplied(1, 7, 16, 16, true)
	s.reportApplied(1, 7, 16, 16, true)
	if !s.keepingUp(1, 7, t0.Add(300*time.Millisecond), 100*time.Millisecond) {
		t.Fatal("not keeping up after two heartbeats at the log's end")
	}
	s.reportApplied(1, 7, 16, 16, false)
	if s.keepingUp(1, 7, t0.Add(300*time.Millisecond), 100*time.Millisecond) {
		t.Fatal("keeping up at the log's end while its raft follows no leader or another")
	}
	s.reportApplied(1, 7, 16, 16, true)
	if s.keepingUp(1, 7, t0.Add(time.Second), 100*time.Millisecond) {
		t.Fatal("keeping up 750 ms after its latest heartbeat")
	}
	if s.keepingUp(1, 8, t0.Add(300*time.Millisecond), 100*time.Millisecond) {
		t.Fatal("another incarnation counted as keeping up")
	}
}
