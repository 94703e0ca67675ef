package metadata

import (
	"errors"
	"slices"
	"testing"
)

func TestApplyRejects(t *testing.T) {
	img := seededImage(t)
	p0, _ := img.Partition("payments", 0)
	b1, _ := img.Broker(1)
	change := func(mod func(*PartitionChange)) PartitionChange {
		c := PartitionChange(p0)
		c.PartitionEpoch++
		c.ISR = p0.ISR
		mod(&c)
		return c
	}
	cases := map[string]Record{
		"fence old incarnation":    BrokerFenced{ID: 1, Incarnation: b1.Incarnation + 1},
		"fence unknown broker":     BrokerFenced{ID: 9, Incarnation: 1},
		"unfence a live broker":    BrokerUnfenced{ID: 1, Incarnation: b1.Incarnation},
		"register same inc":        BrokerRegistered{ID: 1, Addr: "x:1", Incarnation: b1.Incarnation},
		"register id 0":            BrokerRegistered{ID: 0, Addr: "x:1", Incarnation: 5},
		"old controller term":      ControllerMarker{ControllerID: 3, Term: 1},
		"topic exists":             TopicCreated{Name: "payments", ID: "zz", Partitions: 1, RF: 1, MinISR: 1},
		"topic bad name":           TopicCreated{Name: "a b", ID: "zz", Partitions: 1, RF: 1, MinISR: 1},
		"topic min isr > rf":       TopicCreated{Name: "new", ID: "zz", Partitions: 1, RF: 1, MinISR: 2},
		"partition out of order":   PartitionCreated{Topic: "payments", TopicID: p0.TopicID, Partition: 7, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		"partition of wrong topic": PartitionCreated{Topic: "payments", TopicID: "other", Partition: 3, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		"stale partition epoch":    change(func(c *PartitionChange) { c.PartitionEpoch = p0.PartitionEpoch }),
		"skipped partition epoch":  change(func(c *PartitionChange) { c.PartitionEpoch += 1 }),
		"old leader epoch":         change(func(c *PartitionChange) { c.LeaderEpoch = -1 }),
		"leader change, same epoch": change(func(c *PartitionChange) {
			c.Leader = p0.ISR[1]
		}),
		"leader outside ISR":      change(func(c *PartitionChange) { c.ISR = []int32{p0.ISR[1]}; c.LeaderEpoch++ }),
		"ISR not a subset":        change(func(c *PartitionChange) { c.ISR = []int32{p0.Leader, 9} }),
		"empty ISR with a leader": change(func(c *PartitionChange) { c.ISR = nil }),
		"partition created with an empty ISR": PartitionCreated{Topic: "payments", TopicID: p0.TopicID, Partition: 3,
			Replicas: []int32{1}, Leader: NoLeader},
		"lost replica with an ISR": change(func(c *PartitionChange) { c.Lost = []int32{p0.ISR[1]} }),
		"lost replica not a replica": change(func(c *PartitionChange) {
			c.ISR, c.Leader, c.Lost = nil, NoLeader, []int32{9}
			c.LeaderEpoch++
		}),
		"duplicate replica":      change(func(c *PartitionChange) { c.Replicas = []int32{1, 1} }),
		"no such partition":      PartitionChange{Topic: "payments", TopicID: p0.TopicID, Partition: 3, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, PartitionEpoch: 1},
		"delete wrong id":        TopicDeleted{Name: "payments", ID: "nope"},
		"pid block wrong start":  ProducerIDBlock{Broker: 1, Start: 0, Len: 10},
		"pid block zero len":     ProducerIDBlock{Broker: 1, Start: img.NextProducerID(), Len: 0},
		"pid block for broker 0": ProducerIDBlock{Broker: 0, Start: img.NextProducerID(), Len: 1},
	}
	before := img.Hash()
	for name, r := range cases {
		next, d, err := img.Apply(img.Offset()+1, r)
		var re *RejectError
		if !errors.Is(err, ErrRejected) || !errors.As(err, &re) || re.Type != r.Type() {
			t.Errorf("%s: got %v, want a rejection", name, err)
			continue
		}
		if next.Hash() != before || next.Offset() != img.Offset()+1 || !d.Empty() {
			t.Errorf("%s: rejected record changed the image or delta: %+v", name, d)
		}
	}
	if img.Hash() != before {
		t.Fatal("base image modified")
	}
	if _, _, err := img.Apply(img.Offset()-1, BrokerFenced{ID: 1, Incarnation: 1}); err == nil {
		t.Fatal("offset going backwards accepted")
	}
}

func TestApplyCopyOnWriteAndDelta(t *testing.T) {
	img := seededImage(t)
	before := img.Hash()
	b2, _ := img.Broker(2)
	recs := DecideFence(img, 2, b2.Incarnation)
	next, d, err := img.ApplyEntry(img.Offset()+1, recs)
	if err != nil {
		t.Fatal(err)
	}
	if img.Hash() != before {
		t.Fatal("fence modified the base image")
	}
	if len(d.Brokers) != 1 || d.Brokers[0].Old.Fenced || !d.Brokers[0].New.Fenced {
		t.Fatalf("broker delta %+v", d.Brokers)
	}
	if len(d.Partitions) != len(recs)-1 {
		t.Fatalf("%d partition deltas for %d changes", len(d.Partitions), len(recs)-1)
	}
	for _, pd := range d.Partitions {
		old, _ := img.Partition(pd.Topic, pd.Partition)
		nw, _ := next.Partition(pd.Topic, pd.Partition)
		if !pd.Old.Equal(old) || !pd.New.Equal(nw) || pd.New.InISR(2) && len(pd.New.ISR) > 1 {
			t.Fatalf("partition delta %+v", pd)
		}
	}
	if got := Diff(img, next); !deltaEqual(got, d) {
		t.Fatalf("Diff %+v\n != delta %+v", got, d)
	}

	// Deleting a topic reports every partition gone.
	tp, _ := next.Topic("audit")
	after, d2, err := next.Apply(next.Offset()+1, TopicDeleted{Name: "audit", ID: tp.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(d2.TopicsDeleted) != 1 || len(d2.Partitions) != len(tp.Partitions) || d2.Partitions[0].New != nil {
		t.Fatalf("delete delta %+v", d2)
	}
	if after.PartitionCount() != next.PartitionCount()-len(tp.Partitions) {
		t.Fatal("partition count")
	}
	if _, ok := next.Topic("audit"); !ok {
		t.Fatal("delete modified the base image")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	img := seededImage(t)
	snap := img.MarshalSnapshot()
	got, err := UnmarshalSnapshot(0, snap)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash() != img.Hash() || got.Offset() != img.Offset() || got.String() != img.String() {
		t.Fatalf("round trip:\n%s\n%s", got, img)
	}
	got, err = UnmarshalSnapshot(99, snap)
	if err != nil || got.Offset() != 99 {
		t.Fatalf("offset override: %v %d", err, got.Offset())
	}
	for _, bad := range [][]byte{nil, {2}, {1}, snap[:len(snap)-1], append(append([]byte{}, snap...), 0)} {
		if _, err := UnmarshalSnapshot(0, bad); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("% x: %v", bad, err)
		}
	}
	if EmptyImage().Hash() == img.Hash() {
		t.Fatal("hash ignores content")
	}
}

func deltaEqual(a, b Delta) bool {
	if a.ProducerIDsChanged != b.ProducerIDsChanged || a.ClusterConfigsChanged != b.ClusterConfigsChanged || a.ACLsChanged != b.ACLsChanged ||
		a.ClientQuotasChanged != b.ClientQuotasChanged || len(a.Brokers) != len(b.Brokers) ||
		len(a.Partitions) != len(b.Partitions) || len(a.TopicsCreated) != len(b.TopicsCreated) ||
		len(a.TopicsDeleted) != len(b.TopicsDeleted) {
		return false
	}
	for i := range a.Brokers {
		x, y := a.Brokers[i], b.Brokers[i]
		if x.ID != y.ID || !ptrEq(x.Old, y.Old) || !ptrEq(x.New, y.New) {
			return false
		}
	}
	for i := range a.Partitions {
		x, y := a.Partitions[i], b.Partitions[i]
		if x.Topic != y.Topic || x.Partition != y.Partition || !partPtrEq(x.Old, y.Old) || !partPtrEq(x.New, y.New) {
			return false
		}
	}
	return sameRefs(a.TopicsCreated, b.TopicsCreated) && sameRefs(a.TopicsDeleted, b.TopicsDeleted)
}

// sameRefs compares topic lists as sets (Diff lists in name order, deltas in
// record order).
func sameRefs(a, b []TopicRef) bool {
	key := func(r TopicRef) string { return r.Name + "\x00" + r.ID }
	x, y := make([]string, len(a)), make([]string, len(b))
	for i := range a {
		x[i] = key(a[i])
	}
	for i := range b {
		y[i] = key(b[i])
	}
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

func ptrEq(a, b *BrokerState) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func partPtrEq(a, b *PartitionState) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}

// BrokerInfos carries each broker's FencedAt: the offset of the record that
// last fenced (or registered) it, so a watcher that missed a fence and
// unfence between two metadata reads still sees that one happened.
func TestBrokerInfoFencedAtMovesAtEveryFencing(t *testing.T) {
	fencedAt := func(img *Image, id int32) uint64 {
		for _, b := range img.BrokerInfos() {
			if b.ID == id {
				return b.FencedAt
			}
		}
		t.Fatalf("broker %d missing", id)
		return 0
	}
	img := seededImage(t)
	b2, _ := img.Broker(2)
	at := fencedAt(img, 2)
	off := img.Offset() + 1
	fenced, _, err := img.ApplyEntry(off, DecideFence(img, 2, b2.Incarnation))
	if err != nil {
		t.Fatal(err)
	}
	if got := fencedAt(fenced, 2); got == at || got != off {
		t.Fatalf("FencedAt %d after the fence at %d (was %d)", got, off, at)
	}
	unfenced, _, err := fenced.ApplyEntry(off+1, []Record{BrokerUnfenced{ID: 2, Incarnation: b2.Incarnation}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fencedAt(unfenced, 2); got != off {
		t.Fatalf("FencedAt %d after the unfence; want %d still", got, off)
	}
}
