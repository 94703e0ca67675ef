package chaos

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseDiskStall: disk-stall is known by name and not in the default
// mix (all), which keeps e2e TestChaos's length and its machine needs.
func TestParseDiskStall(t *testing.T) {
	k, err := ParseKinds("disk-stall,kill-leader,pause")
	if err != nil || !reflect.DeepEqual(k, []Kind{DiskStall, KillLeader, Pause}) {
		t.Fatalf("%v %v", k, err)
	}
	if k, err := ParseKinds("all,disk-stall"); err != nil || len(k) != len(AllKinds)+1 || k[len(k)-1] != DiskStall {
		t.Fatalf("all,disk-stall: %v %v", k, err)
	}
	if all, _ := ParseKinds("all"); slices.Contains(all, DiskStall) {
		t.Fatal("all includes disk-stall")
	}
	if DiskStall.IsKill() || DiskStall.NeedsNetNS() || DiskStall.IsLink() {
		t.Fatal("disk-stall classified as a kill or a network fault")
	}
}

// TestScheduleDiskStall: a deck holds PerKind disk stalls aimed at random
// nodes, controllers and leaders, each held longer than the session
// timeout and the nodes' --disk-stall-timeout (when they have one), and
// the same seed deals the same faults.
func TestScheduleDiskStall(t *testing.T) {
	for _, stallTimeout := range []time.Duration{0, 2 * time.Second, 5 * time.Second} {
		plan := Plan{Seed: 40007, PerKind: 30, Kinds: []Kind{DiskStall, KillLeader}, SessionTimeout: time.Second, DiskStallTimeout: stallTimeout}
		s := NewSchedule(plan)
		faults := s.Take(s.DeckSize())
		if again := NewSchedule(plan).Take(s.DeckSize()); !reflect.DeepEqual(faults, again) {
			t.Fatal("same seed, different schedules")
		}
		floor := max(time.Second, stallTimeout)
		got, targets := map[Kind]int{}, map[Target]int{}
		for _, f := range faults {
			got[f.Kind]++
			if f.Kind != DiskStall {
				continue
			}
			targets[f.Target]++
			if f.Hold <= floor || f.Hold > floor+3*time.Second {
				t.Fatalf("stall timeout %v: disk-stall hold %v, want above %v and at most %v", stallTimeout, f.Hold, floor, floor+3*time.Second)
			}
		}
		if got[DiskStall] != 30 || got[KillLeader] != 30 {
			t.Fatalf("dealt %v, want 30 of each", got)
		}
		for _, tg := range []Target{TargetRandom, TargetController, TargetLeader} {
			if targets[tg] == 0 {
				t.Fatalf("no disk stall aimed at %q: %v", tg, targets)
			}
		}
	}
}

// TestRunDropsDiskStallWithoutTools: where disk stalls cannot run (no
// root, a tool missing), they are dropped with the reason, as network
// faults are: disk-stall alone is refused before a cluster starts, saying
// why; with other kinds the run goes on without it (here it then fails
// on the binary, which does not exist).
func TestRunDropsDiskStallWithoutTools(t *testing.T) {
	prev := diskStallAvailable
	diskStallAvailable = func() error { return errors.New("loopdisk: needs root to mount a file system (running as uid 1000)") }
	defer func() { diskStallAvailable = prev }()

	_, err := Run(t.Context(), Config{Binary: "/nonexistent/paymentlog", Kinds: []Kind{DiskStall}, BaseDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "no fault kind left") || !strings.Contains(err.Error(), "needs root") {
		t.Fatalf("disk-stall alone without root: %v", err)
	}

	var out strings.Builder
	res, err := Run(t.Context(), Config{Binary: "/nonexistent/paymentlog", Kinds: []Kind{DiskStall, KillNode}, BaseDir: t.TempDir(), Out: &out})
	if err == nil || !strings.Contains(err.Error(), "binary") {
		t.Fatalf("disk-stall and kill-node without root, no binary: %v", err)
	}
	if !strings.Contains(out.String(), "chaos: disk stalls skipped: loopdisk: needs root") || !strings.Contains(res.NoDisk, "needs root") {
		t.Fatalf("the reason is not reported: NoDisk %q, output:\n%s", res.NoDisk, out.String())
	}
	var b strings.Builder
	res.WriteSummary(&b)
	if !strings.Contains(b.String(), "disk stalls skipped: loopdisk: needs root") {
		t.Fatalf("summary without the reason:\n%s", b.String())
	}
}

// TestDiskStallInReports: a run that scheduled disk stalls lists them in
// its summary, and an unavailability window that began during one is put
// down to it.
func TestDiskStallInReports(t *testing.T) {
	r := &Result{Plan: Plan{Kinds: []Kind{DiskStall, KillLeader}}}
	if !slices.Contains(r.reportKinds(), DiskStall) {
		t.Fatalf("report kinds %v lack disk-stall", r.reportKinds())
	}
	if slices.Contains((&Result{}).reportKinds(), DiskStall) {
		t.Fatal("a run without disk stalls lists them")
	}
	start := time.Unix(1000, 0)
	events := []Event{{Fault: Fault{N: 1, Kind: DiskStall}, Victim: 2, At: time.Second, Healed: 4 * time.Second, Healthy: 200 * time.Millisecond}}
	w := Window{Partition: 1, Start: start.Add(1100 * time.Millisecond), End: start.Add(4100 * time.Millisecond)}
	got := longestByKind(events, []Window{w}, start)
	if want := (map[Kind]KindWindow{DiskStall: {Window: w, Fault: 1}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// TestDiskStallLine: the run's first lines say whether the nodes fence
// themselves on a stalled disk.
func TestDiskStallLine(t *testing.T) {
	if l := diskStallLine(512, 2*time.Second); !strings.Contains(l, "512 MiB") || !strings.Contains(l, "--disk-stall-timeout 2s") {
		t.Fatal(l)
	}
	if l := diskStallLine(512, 0); !strings.Contains(l, "no --disk-stall-timeout") {
		t.Fatal(l)
	}
}

// TestNodeHasFlag: the run passes --disk-stall-timeout only to a binary
// whose `node start --help` lists it (a flag that is only a prefix of
// another does not count).
func TestNodeHasFlag(t *testing.T) {
	dir := t.TempDir()
	bin := func(name, help string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\ncat <<'END'\n"+help+"\nEND\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	with := bin("with", "   --disk-stall-timeout value   a node with a disk operation in flight this long (default: 2s)")
	without := bin("without", "   --disk-stall-timeout-other value\n   --fsync value")
	if !nodeHasFlag(t.Context(), with, diskStallFlag) {
		t.Fatal("flag listed, not found")
	}
	if nodeHasFlag(t.Context(), without, diskStallFlag) {
		t.Fatal("flag not listed, found")
	}
	if nodeHasFlag(t.Context(), filepath.Join(dir, "missing"), diskStallFlag) {
		t.Fatal("no binary, flag found")
	}
}
