package metadata

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A BrokerUnregistered record re-checks what the decision checked, so one
// decided on a stale image (the broker came back, or was given a replica,
// since) is rejected identically on every node; an applied one removes the
// broker from the image, its delta and its snapshot, and raises the
// metadata version to 3.
func TestBrokerUnregisteredApply(t *testing.T) {
	img := upImage(t, 4)
	img = mustApply(t, img, mustDecide(t)(DecideCreateTopic(img, CreateTopicEvent{Name: "t", ID: "id-t", Partitions: 1, RF: 3, MinISR: 2})))
	p, _ := img.Partition("t", 0)
	var spare int32 // the broker without a replica
	for id := int32(1); id <= 4; id++ {
		if !p.HasReplica(id) {
			spare = id
		}
	}
	holder := p.Replicas[2]
	fenced := mustApply(t, img, mustDecide(t)(DecideFence(img, spare, 1), nil))
	fenced = mustApply(t, fenced, mustDecide(t)(DecideFence(fenced, holder, 1), nil))
	for _, c := range []struct {
		name string
		img  *Image
		rec  BrokerUnregistered
		why  string
	}{
		{"alive", img, BrokerUnregistered{ID: spare, Incarnation: 1}, "is alive"},
		{"another incarnation", fenced, BrokerUnregistered{ID: spare, Incarnation: 2}, "incarnation 2 is not the current 1"},
		{"unknown", fenced, BrokerUnregistered{ID: 9, Incarnation: 1}, "unknown broker"},
		{"holds a replica", fenced, BrokerUnregistered{ID: holder, Incarnation: 1}, "still holds replicas of 1 partitions (t-0)"},
	} {
		next, d, err := c.img.ApplyEntry(c.img.Offset()+1, []Record{c.rec})
		var rej *RejectError
		if !errors.As(err, &rej) || !strings.Contains(rej.Reason, c.why) {
			t.Fatalf("%s: %v, want a rejection saying %q", c.name, err, c.why)
		}
		if !d.Empty() || len(next.Brokers()) != len(c.img.Brokers()) {
			t.Fatalf("%s: a rejected record changed the image: %+v", c.name, d)
		}
	}
	recs := mustDecide(t)(DecideUnregisterBroker(fenced, UnregisterBrokerEvent{ID: spare}))
	next, d, err := fenced.ApplyEntry(fenced.Offset()+1, recs)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := next.Broker(spare); ok || len(next.Brokers()) != 3 {
		t.Fatalf("broker %d still registered: %v", spare, next.Brokers())
	}
	if len(d.Brokers) != 1 || d.Brokers[0].ID != spare || d.Brokers[0].Old == nil || d.Brokers[0].New != nil {
		t.Fatalf("delta %+v", d.Brokers)
	}
	if next.Version() != 3 || fenced.Version() != 1 {
		t.Fatalf("metadata version %d (before: %d), want 3 (1)", next.Version(), fenced.Version())
	}
	if _, ok := fenced.Broker(spare); !ok {
		t.Fatal("the applied entry changed the image it was applied to")
	}
	again, err := UnmarshalSnapshot(0, next.MarshalSnapshot())
	if err != nil || !reflect.DeepEqual(again, next) || again.Hash() != next.Hash() {
		t.Fatalf("snapshot round trip: %v", err)
	}
}

// TestWriteUnregisterFuzzSeeds keeps a BrokerUnregistered entry and the
// version-3 image after it among the decoders' fuzz seeds (-rewrite writes
// them).
func TestWriteUnregisterFuzzSeeds(t *testing.T) {
	img := upImage(t, 4)
	img = mustApply(t, img, mustDecide(t)(DecideFence(img, 4, 1), nil))
	recs := mustDecide(t)(DecideUnregisterBroker(img, UnregisterBrokerEvent{ID: 4}))
	entry, err := EncodeEntry(recs...)
	if err != nil {
		t.Fatal(err)
	}
	checkSeedFiles(t, "seed-unregister", entry, "seed-image-unregister", mustApply(t, img, recs).MarshalSnapshot())
}
