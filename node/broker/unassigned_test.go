package broker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// RemoveUnassigned deletes only partition copies that keep does not name
// and that are not open: not the metadata log's directory, not a name that
// is no partition's, not an open partition, not a directory without
// partition files.
func TestRemoveUnassigned(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1})
	b := c.node(1).b
	ctx := context.Background()
	open := PartitionState{Topic: "pay-ments", TopicID: "id", Partition: 1, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}, MinISR: 1}
	if err := b.ApplyPartition(ctx, open); err != nil {
		t.Fatal(err)
	}
	dir := b.cfg.DataDir
	mk := func(name string, files ...string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, name, f), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("pay-ments-0", TopicIDFile, "00000000000000000000.log") // moved away: removed
	mk("gone-3", "00000000000000000042.log")                   // deleted topic: removed
	mk("kept-2", TopicIDFile)                                  // still assigned
	mk("__cluster_metadata-0", "00000000000000000000.log")     // the metadata log
	mk("pay-01", TopicIDFile)                                  // not a canonical partition number
	mk("empty-5")                                              // no partition files
	mk("notes", "x.log")
	removed, err := b.RemoveUnassigned(func(topic string, partition int32) bool {
		return topic == "kept" && partition == 2
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if !slices.Equal(removed, []string{"gone-3", "pay-ments-0"}) {
		t.Fatalf("removed %v, want [gone-3 pay-ments-0]", removed)
	}
	for _, name := range []string{"pay-ments-1", "kept-2", "__cluster_metadata-0", "pay-01", "empty-5", "notes"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range removed {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", name, err)
		}
	}
}
