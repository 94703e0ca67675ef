package localcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestTagOwnership(t *testing.T) {
	old := netnsOwnerDir
	netnsOwnerDir = t.TempDir()
	t.Cleanup(func() { netnsOwnerDir = old })

	if owned, known := tagOwnership("plc0001"); owned || known {
		t.Fatalf("no lock file: owned=%v known=%v, want false false", owned, known)
	}
	o, err := claimTag("plc0001")
	if err != nil {
		t.Fatal(err)
	}
	if owned, known := tagOwnership("plc0001"); !owned || !known {
		t.Fatalf("held: owned=%v known=%v, want true true", owned, known)
	}
	if _, err := claimTag("plc0001"); !errors.Is(err, errTagTaken) {
		t.Fatalf("second claim: %v, want errTagTaken", err)
	}
	// The owner dies without Close: the kernel drops the lock, the file stays.
	o.f.Close()
	if owned, known := tagOwnership("plc0001"); owned || !known {
		t.Fatalf("dead owner: owned=%v known=%v, want false true", owned, known)
	}
	o2, err := claimTag("plc0001")
	if err != nil {
		t.Fatalf("claim after the owner died: %v", err)
	}
	o2.release()
	if _, err := os.Stat(filepath.Join(netnsOwnerDir, "plc0001.lock")); !os.IsNotExist(err) {
		t.Fatalf("lock file after release: %v", err)
	}
}

// TestCleanupSparesLiveRun: a live run's namespace holds no process while
// its node is down (killed by a chaos nemesis, not yet restarted). A
// cleanup started by another run then must leave it and the run's bridge
// alone, whatever their age; a dead run's are removed.
func TestCleanupSparesLiveRun(t *testing.T) {
	if err := NetNSAvailable(); err != nil {
		t.Skipf("network namespaces unusable here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	oldAge := staleNetNSAge
	staleNetNSAge = 0 // every namespace is old enough
	t.Cleanup(func() { staleNetNSAge = oldAge })

	live, err := NewNetNS(ctx)
	if err != nil {
		t.Skipf("network namespaces unusable here: %v", err)
	}
	defer live.Close()
	if err := live.ensure(ctx, 1); err != nil {
		t.Fatal(err)
	}
	dead, err := NewNetNS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	if err := dead.ensure(ctx, 1); err != nil {
		t.Fatal(err)
	}
	dead.owner.f.Close() // its process died: the lock is gone, the file stays

	removed, err := CleanupStaleNetNS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(removed, live.Namespace(1)) || slices.Contains(removed, live.bridge) {
		t.Fatalf("cleanup removed the live run's %v", removed)
	}
	if !slices.Contains(removed, dead.Namespace(1)) || !slices.Contains(removed, dead.bridge) {
		t.Fatalf("cleanup removed %v, want the dead run's %s and %s among them", removed, dead.Namespace(1), dead.bridge)
	}
	if _, err := os.Stat("/run/netns/" + live.Namespace(1)); err != nil {
		t.Fatalf("live namespace: %v", err)
	}
}
