package metadata

import (
	"errors"
	"testing"
)

// A decision taken by a controller that has since been replaced carries its
// older term in the entry's leading marker; the whole entry is rejected on
// apply, even the records that would pass their own conditional checks.
func TestStaleControllerEntryRejectedWhole(t *testing.T) {
	img := seededImage(t) // controller 1, term 2
	// Controller 2 takes over at term 3.
	img, _, err := img.ApplyEntry(img.Offset()+1, []Record{ControllerMarker{ControllerID: 2, Term: 3}})
	if err != nil {
		t.Fatal(err)
	}
	before := img.Hash()
	b2, _ := img.Broker(2)
	// Controller 1 resumes from a pause and decides to fence broker 2: each
	// record on its own would apply.
	fence := DecideFence(img, 2, b2.Incarnation)
	if len(fence) == 0 {
		t.Fatal("no fence records")
	}
	stale := append([]Record{ControllerMarker{ControllerID: 1, Term: 2}}, fence...)
	next, d, err := img.ApplyEntry(img.Offset()+1, stale)
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("stale entry applied: err=%v", err)
	}
	if next.Hash() != before || !d.Empty() || next.ControllerID() != 2 {
		t.Fatalf("stale entry changed the image: %+v", d)
	}
	// The same records under the current controller's marker apply.
	cur := append([]Record{ControllerMarker{ControllerID: 2, Term: 3}}, fence...)
	next, d, err = img.ApplyEntry(img.Offset()+1, cur)
	if err != nil || d.Empty() || d.ControllerChanged {
		t.Fatalf("current controller's entry: err=%v delta=%+v", err, d)
	}
	if b, _ := next.Broker(2); !b.Fenced {
		t.Fatal("broker 2 not fenced")
	}
	// A second claim on term 3 by another controller is refused.
	if _, _, err := img.ApplyEntry(img.Offset()+1, []Record{ControllerMarker{ControllerID: 3, Term: 3}}); err == nil {
		t.Fatal("two controllers in one term")
	}
}

// An entry whose second record is rejected leaves the first unapplied too.
func TestEntryIsAtomic(t *testing.T) {
	img := seededImage(t)
	before := img.Hash()
	b2, _ := img.Broker(2)
	recs := append(DecideFence(img, 2, b2.Incarnation), TopicDeleted{Name: "payments", ID: "wrong"})
	next, d, err := img.ApplyEntry(img.Offset()+1, recs)
	if err == nil || next.Hash() != before || !d.Empty() {
		t.Fatalf("partially applied entry: err=%v delta=%+v", err, d)
	}
}
