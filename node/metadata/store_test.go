package metadata

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustEntry(t testing.TB, recs ...Record) []byte {
	t.Helper()
	b, err := EncodeEntry(recs...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStoreApplyAndSubscribe(t *testing.T) {
	s := NewStore()
	s.Apply(1, mustEntry(t, BrokerRegistered{ID: 1, Addr: "a:1", Incarnation: 1}))
	sub := s.Subscribe()
	defer sub.Close()

	c, ok := sub.TryNext()
	if !ok || c.Prev.Offset() != 0 || c.Next.Offset() != 1 || len(c.Delta.Brokers) != 1 || c.Delta.Brokers[0].Old != nil {
		t.Fatalf("initial change %+v", c)
	}
	if _, ok := sub.TryNext(); ok {
		t.Fatal("spurious change")
	}

	// Several entries while the subscriber is away merge into one change.
	s.Apply(2, mustEntry(t, BrokerUnfenced{ID: 1, Incarnation: 1}))
	s.Apply(3, mustEntry(t, TopicCreated{Name: "t", ID: "x", Partitions: 1, RF: 1, MinISR: 1},
		PartitionCreated{Topic: "t", TopicID: "x", Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}))
	s.Apply(3, mustEntry(t, BrokerFenced{ID: 1, Incarnation: 1})) // replayed index: ignored
	s.Apply(4, mustEntry(t, PartitionChange{Topic: "t", TopicID: "x", Replicas: []int32{1}, ISR: []int32{1},
		Leader: NoLeader, LeaderEpoch: 1, PartitionEpoch: 1}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Prev.Offset() != 1 || c.Next.Offset() != 4 {
		t.Fatalf("merged change spans %d..%d", c.Prev.Offset(), c.Next.Offset())
	}
	if len(c.Delta.Brokers) != 1 || !c.Delta.Brokers[0].Old.Fenced || c.Delta.Brokers[0].New.Fenced {
		t.Fatalf("broker delta %+v", c.Delta.Brokers)
	}
	if len(c.Delta.Partitions) != 1 || c.Delta.Partitions[0].Old != nil || c.Delta.Partitions[0].New.LeaderEpoch != 1 {
		t.Fatalf("partition delta %+v", c.Delta.Partitions)
	}
	if len(c.Delta.TopicsCreated) != 1 {
		t.Fatalf("topics %+v", c.Delta.TopicsCreated)
	}

	// A corrupt entry is skipped, reported, and still advances the offset.
	s.Apply(5, []byte{1, 2, 3})
	if s.Err() == nil || s.Image().Offset() != 5 {
		t.Fatalf("corrupt entry: err=%v offset=%d", s.Err(), s.Image().Offset())
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	sub.TryNext()
	cancel2()
	if _, err := sub.Next(ctx2); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after cancel: %v", err)
	}
	sub.Close()
	if _, err := sub.Next(ctx); !errors.Is(err, ErrSubscriptionClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
}

func TestStoreSnapshotRestore(t *testing.T) {
	src := NewStore()
	img := seededImage(t)
	if err := src.Restore(img.Offset(), img.MarshalSnapshot()); err != nil {
		t.Fatal(err)
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	dst := NewStore()
	sub := dst.Subscribe()
	sub.TryNext()
	if err := dst.Restore(img.Offset(), snap); err != nil {
		t.Fatal(err)
	}
	if dst.Image().Hash() != img.Hash() || dst.Image().Offset() != img.Offset() {
		t.Fatal("restore differs")
	}
	c, ok := sub.TryNext()
	if !ok || len(c.Delta.TopicsCreated) != 2 || len(c.Delta.Partitions) != img.PartitionCount() {
		t.Fatalf("restore change %+v", c.Delta)
	}
	if err := dst.Restore(1, []byte{9}); !errors.Is(err, ErrCorruptSnapshot) || dst.Image().Hash() != img.Hash() {
		t.Fatalf("bad snapshot: %v", err)
	}
	// CheckSnapshot answers what Restore would, changing nothing; a
	// snapshot of another format version says so.
	if err := dst.CheckSnapshot(img.Offset(), snap); err != nil {
		t.Fatalf("check of a good snapshot: %v", err)
	}
	future := append([]byte{snapshotVersion + 1}, snap[1:]...)
	if err := dst.CheckSnapshot(img.Offset(), future); !errors.Is(err, ErrSnapshotVersion) || !errors.Is(err, ErrCorruptSnapshot) ||
		!strings.Contains(err.Error(), "this build reads version") {
		t.Fatalf("check of a version %d snapshot: %v", snapshotVersion+1, err)
	}
	if err := dst.CheckSnapshot(1, []byte{snapshotVersion, 0xc1}); !errors.Is(err, ErrCorruptSnapshot) || errors.Is(err, ErrSnapshotVersion) {
		t.Fatalf("check of a damaged snapshot: %v", err)
	}
	if dst.Image().Hash() != img.Hash() {
		t.Fatal("CheckSnapshot changed the image")
	}
	// Entries already covered by the snapshot are ignored.
	dst.Apply(img.Offset(), mustEntry(t, BrokerFenced{ID: 1, Incarnation: 1}))
	if dst.Image().Hash() != img.Hash() {
		t.Fatal("entry at the snapshot index applied")
	}
}

func TestStoreWaitForAndConcurrency(t *testing.T) {
	s := NewStore()
	sub := s.Subscribe()
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const n = 500
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the raft apply loop
		defer wg.Done()
		for i := uint64(1); i <= n; i++ {
			s.Apply(i, mustEntry(t, ProducerIDBlock{Broker: 1, Start: int64(i-1) * 10, Len: 10}))
		}
	}()
	var last uint64
	go func() { // a reactor
		defer wg.Done()
		for last < n {
			c, err := sub.Next(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			if c.Prev.Offset() != last && last != 0 {
				t.Errorf("gap: change from %d, last seen %d", c.Prev.Offset(), last)
			}
			last = c.Next.Offset()
		}
	}()
	img, err := s.WaitFor(ctx, func(m *Image) bool { return m.Offset() >= n })
	if err != nil || img.NextProducerID() != n*10 {
		t.Fatalf("WaitFor: %v %d", err, img.NextProducerID())
	}
	wg.Wait()
	short, c2 := context.WithTimeout(ctx, time.Millisecond)
	defer c2()
	if _, err := s.WaitFor(short, func(m *Image) bool { return false }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitFor timeout: %v", err)
	}
}
