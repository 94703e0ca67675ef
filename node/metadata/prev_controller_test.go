package metadata

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// PrevControllerID names the controller the latest marker replaced; a
// repeated marker (every controller entry opens with one) and a rejected
// one leave it alone, and snapshots keep it.
func TestPrevControllerID(t *testing.T) {
	img := EmptyImage()
	step := func(r Record) {
		t.Helper()
		img, _, _ = img.Apply(img.Offset()+1, r)
	}
	step(ControllerMarker{ControllerID: 2, Term: 1})
	if got := img.PrevControllerID(); got != -1 {
		t.Fatalf("first controller: prev %d, want -1", got)
	}
	step(ControllerMarker{ControllerID: 3, Term: 2})
	step(ControllerMarker{ControllerID: 3, Term: 2}) // the next entry of the same controller
	step(ControllerMarker{ControllerID: 2, Term: 1}) // a stale controller's entry: rejected
	if got := img.PrevControllerID(); got != 2 || img.ControllerID() != 3 {
		t.Fatalf("controller %d prev %d, want 3 prev 2", img.ControllerID(), got)
	}
	step(ControllerMarker{ControllerID: 1, Term: 3})
	back, err := UnmarshalSnapshot(0, img.MarshalSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if back.PrevControllerID() != 3 || back.Hash() != img.Hash() {
		t.Fatalf("snapshot: prev %d, want 3 (hash equal %t)", back.PrevControllerID(), back.Hash() == img.Hash())
	}
}

// A snapshot written before PrevControllerID existed reads as none (-1).
func TestSnapshotWithoutPrevController(t *testing.T) {
	b, err := os.ReadFile("testdata/fuzz/FuzzUnmarshalSnapshot/seed-image-without-prev-controller")
	if err != nil {
		t.Fatal(err)
	}
	data := corpusBytes(t, string(b))
	if strings.Contains(string(data), "prev_controller") {
		t.Fatal("seed has the field")
	}
	img, err := UnmarshalSnapshot(0, data)
	if err != nil {
		t.Fatal(err)
	}
	if img.PrevControllerID() != -1 || img.ControllerID() != 1 {
		t.Fatalf("controller %d prev %d", img.ControllerID(), img.PrevControllerID())
	}
}

// corpusBytes decodes a "go test fuzz v1" file holding one []byte value.
func corpusBytes(t *testing.T, file string) []byte {
	t.Helper()
	for _, line := range strings.Split(file, "\n") {
		if q, ok := strings.CutPrefix(line, "[]byte("); ok {
			s, err := strconv.Unquote(strings.TrimSuffix(q, ")"))
			if err != nil {
				t.Fatal(err)
			}
			return []byte(s)
		}
	}
	t.Fatal("no []byte value in corpus file")
	return nil
}
