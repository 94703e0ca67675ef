package e2e

import (
	"strings"
	"testing"
	"time"

	"paymentlog/bench/chaos"
)

// TestChaosDiskStall: a short chaos run whose deck holds disk stalls (a
// node's file system frozen with fsfreeze for longer than the session
// timeout and the nodes' --disk-stall-timeout, then thawed) among kills,
// every node on a loop disk of its own: no anomaly (no acknowledged record
// lost, no offset holding two records, replicas agreeing below the HW,
// writes resuming after the faults), every fault applied, and every
// frozen disk thawed by its fault. Root with mkfs.ext4, losetup, nsenter
// and fsfreeze only. CHAOS_SEED and CHAOS_PER_KIND (default 3) as in
// TestChaos.
func TestChaosDiskStall(t *testing.T) {
	requireFreeze(t)
	perKind := int(envInt(t, "CHAOS_PER_KIND", 3))
	cfg := chaos.Config{
		Seed:    envInt(t, "CHAOS_SEED", 0),
		PerKind: perKind,
		Kinds:   []chaos.Kind{chaos.DiskStall, chaos.KillLeader, chaos.KillNode},
		DiskMiB: 256,
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano() % 1_000_000_007
	}
	t.Logf("chaos seed %d (reproduce with CHAOS_SEED=%d)", cfg.Seed, cfg.Seed)
	res := runChaos(t, cfg)
	if res.NoDisk != "" {
		t.Fatalf("disk stalls skipped: %s", res.NoDisk)
	}
	applied := appliedBySchedule(res)
	for _, k := range res.Plan.Kinds {
		if applied[k] < perKind {
			t.Errorf("only %d %s faults applied, want %d", applied[k], k, perKind)
		}
	}
	for _, e := range res.Events {
		if strings.Contains(e.Note, "STILL FROZEN") || strings.Contains(e.Note, "thawed before the kill") {
			t.Errorf("fault #%d left a disk frozen: %s", e.Fault.N, e)
		}
	}
	t.Logf("nodes' --disk-stall-timeout %v; longest unavailability during a disk stall: %v", res.DiskStallTimeout, res.Unavailable[chaos.DiskStall].Window.Len())
}
