package broker

import (
	"os"
	"path/filepath"
	"testing"

	"paymentlog/segment"
)

// Removing a partition's files (a deleted topic's data, found under a
// re-created one's name) also removes what a scrub's repair set aside.
func TestRemovePartitionFilesTakesTheScrubQuarantine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger-0")
	q := filepath.Join(dir, segment.ScrubQuarantinePrefix+"00000000000000000042")
	if err := os.MkdirAll(q, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "00000000000000000000.log"), filepath.Join(dir, TopicIDFile),
		filepath.Join(q, "00000000000000000042.log"), filepath.Join(q, "00000000000000000090.log")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := removePartitionFiles(segment.OSFS{}, dir); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left in the partition directory: %v", left)
	}
}
