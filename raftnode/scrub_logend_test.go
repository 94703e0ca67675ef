package raftnode

import (
	"bytes"
	"testing"
)

func FuzzDecodeScrubLogEnd(f *testing.F) {
	f.Add(encodeScrubLogEnd(scrubLogEnd{index: 42, term: 3, start: 1, voter: true}))
	f.Add(encodeScrubLogEnd(scrubLogEnd{index: 7, term: 1, start: 5}))
	f.Add([]byte("42 3 1 voter"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeScrubLogEnd(b)
		if err == nil && !bytes.Equal(encodeScrubLogEnd(e), b) {
			t.Fatalf("accepted a non-canonical record %q", b)
		}
	})
}

// What the repair relies on: a record reads back as written, and anything
// else reads as nothing known.
func TestScrubLogEndCodec(t *testing.T) {
	for _, e := range []scrubLogEnd{{index: 42, term: 3, start: 1, voter: true}, {index: 1 << 63, term: 9, start: 1 << 40}} {
		got, err := decodeScrubLogEnd(encodeScrubLogEnd(e))
		if err != nil || got != e {
			t.Fatalf("%+v read back as %+v, %v", e, got, err)
		}
	}
	for _, bad := range []string{"", "42 3 1 voter", "42 3 1 voter\n\n", "42 3 voter\n", "42 3 1 admin\n", "042 3 1 voter\n", "-1 3 1 voter\n", "42  3 1 voter\n", "42 3 1 voter extra\n"} {
		if e, err := decodeScrubLogEnd([]byte(bad)); err == nil {
			t.Fatalf("%q accepted as %+v", bad, e)
		}
	}
}
