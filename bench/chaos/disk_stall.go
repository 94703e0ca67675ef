package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"paymentlog/bench/localcluster"
	"paymentlog/internal/loopdisk"
)

// DefaultDiskMiB is the size of each node's loop disk in a run with disk
// stalls (Config.DiskMiB). A node holds a replica of every partition: a
// 3-minute run of the default workload left about 28 MiB of node data on
// each (some 100 MiB in 10 minutes), beside the 25 MiB an empty 512 MiB
// ext4 holds of its own; an image file is sparse, so the host pays only
// for what is written.
const DefaultDiskMiB = 512

// DefaultDiskStallTimeout is the nodes' --disk-stall-timeout in a run with
// disk stalls (Config.DiskStallTimeout), when the binary has that flag.
const DefaultDiskStallTimeout = 2 * time.Second

// diskStallFlag is the node flag that makes a stalled disk fence its node.
const diskStallFlag = "--disk-stall-timeout"

// diskStallAvailable reports why disk stalls cannot run here (nil: they
// can); a variable so that tests can play a machine without root.
var diskStallAvailable = loopdisk.FreezeAvailable

// nodeHasFlag reports whether the binary's `node start --help` lists flag.
func nodeHasFlag(ctx context.Context, binary, flag string) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, binary, "node", "start", "--help").CombinedOutput()
	return bytes.Contains(out, []byte(flag+" "))
}

// Disks puts every node's data directory on a loop disk of its own
// (loopdisk), so that a DiskStall can freeze one node's file system.
// Apply makes the cluster in a directory of its own (so that the data
// directories are known before each first start) and runs the nodes in
// their disk's mount namespace.
//
// A frozen disk must be thawed before its node is killed or waited for (a
// SIGKILLed process blocked on it exits only after the thaw) and before
// it is unmounted: Nemesis.kill and HealAll thaw, and Close thaws first.
type Disks struct {
	dir     string // holds the cluster directory and the images
	sizeMiB int

	mu struct {
		sync.Mutex
		byID   map[int32]*loopdisk.Disk
		closed bool
	}
}

// NewDisks makes the directory (under baseDir, "" for the temp dir) that
// will hold the cluster and the disk images of sizeMiB each.
func NewDisks(baseDir string, sizeMiB int) (*Disks, error) {
	dir, err := os.MkdirTemp(baseDir, "paymentlog-chaos-disks-")
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	d := &Disks{dir: dir, sizeMiB: sizeMiB}
	d.mu.byID = map[int32]*loopdisk.Disk{}
	return d, nil
}

// Dir is the directory that holds the cluster directory and the images.
func (d *Disks) Dir() string { return d.dir }

// Apply makes the cluster under Dir, mounts node id's disk on its data
// directory before its first start, and runs it in the disk's mount
// namespace (around any Command already set, such as NetNS's).
func (d *Disks) Apply(opts *localcluster.Options) {
	opts.BaseDir = d.dir
	prevStart, prevCmd := opts.BeforeStart, opts.Command
	opts.BeforeStart = func(ctx context.Context, id int32) error {
		if prevStart != nil {
			if err := prevStart(ctx, id); err != nil {
				return err
			}
		}
		_, err := d.mount(ctx, id)
		return err
	}
	opts.Command = func(id int32, argv []string) []string {
		if prevCmd != nil {
			argv = prevCmd(id, argv)
		}
		disk := d.disk(id)
		if disk == nil {
			panic(fmt.Sprintf("chaos: node %d started without its disk", id)) // BeforeStart mounts it
		}
		return disk.Wrap(argv)
	}
}

// mount returns node id's disk, mounting it on the node's data directory
// first if it is not yet.
func (d *Disks) mount(ctx context.Context, id int32) (*loopdisk.Disk, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.closed {
		return nil, errors.New("chaos: disks closed")
	}
	if disk := d.mu.byID[id]; disk != nil {
		return disk, nil
	}
	dirs, _ := filepath.Glob(filepath.Join(d.dir, "paymentlog-cluster-*", fmt.Sprintf("node%d", id), "data"))
	if len(dirs) != 1 {
		return nil, fmt.Errorf("chaos: data directory of node %d: found %v", id, dirs)
	}
	disk, err := loopdisk.New(ctx, d.dir, dirs[0], d.sizeMiB)
	if err != nil {
		return nil, err
	}
	d.mu.byID[id] = disk
	return disk, nil
}

// disk is node id's disk, nil if it has none.
func (d *Disks) disk(id int32) *loopdisk.Disk {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.byID[id]
}

// Path is p, a path under node id's data directory, where the harness
// reads it: through the disk's mount namespace. Without a disk it is p.
func (d *Disks) Path(id int32, p string) string {
	if disk := d.disk(id); disk != nil {
		return disk.Path(p)
	}
	return p
}

// Freeze freezes node id's file system.
func (d *Disks) Freeze(ctx context.Context, id int32) error {
	disk := d.disk(id)
	if disk == nil {
		return fmt.Errorf("chaos: node %d has no disk of its own", id)
	}
	return disk.Freeze(ctx)
}

// Thaw thaws node id's file system (a no-op when it is not frozen).
func (d *Disks) Thaw(id int32) error {
	if disk := d.disk(id); disk != nil {
		return disk.Thaw()
	}
	return nil
}

// Frozen reports whether node id's file system is frozen.
func (d *Disks) Frozen(id int32) bool {
	disk := d.disk(id)
	return disk != nil && disk.Frozen()
}

// ids are the nodes with a disk, in order.
func (d *Disks) ids() []int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]int32, 0, len(d.mu.byID))
	for id := range d.mu.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ThawAll thaws every frozen disk and returns the nodes whose disk was frozen.
func (d *Disks) ThawAll() ([]int32, error) {
	if d == nil {
		return nil, nil
	}
	ids := d.ids()
	var frozen []int32
	var errs []error
	for _, id := range ids {
		if d.Frozen(id) {
			frozen = append(frozen, id)
			errs = append(errs, d.Thaw(id))
		}
	}
	return frozen, errors.Join(errs...)
}

// Usage describes every disk's use ("node 1 12.3/512 MiB, ..."), read
// while mounted.
func (d *Disks) Usage() string {
	if d == nil {
		return ""
	}
	ids := d.ids()
	var parts []string
	for _, id := range ids {
		avail, err := d.disk(id).Avail()
		if err != nil {
			parts = append(parts, fmt.Sprintf("node %d: %v", id, err))
			continue
		}
		parts = append(parts, fmt.Sprintf("node %d %.1f/%d MiB", id, float64(int64(d.sizeMiB)<<20-avail)/(1<<20), d.sizeMiB))
	}
	return strings.Join(parts, ", ")
}

// Close thaws, unmounts and detaches every disk (the cluster's processes
// should be gone: a disk stays mounted while one runs in its namespace).
// The directory stays: the caller removes it, or keeps it (the images hold
// the nodes' data; the data directories in the cluster directory are
// empty mount points).
func (d *Disks) Close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	d.mu.closed = true
	disks := d.mu.byID
	d.mu.byID = map[int32]*loopdisk.Disk{}
	d.mu.Unlock()
	var errs []error
	for _, disk := range disks {
		errs = append(errs, disk.Close())
	}
	return errors.Join(errs...)
}

// diskStall freezes the victim's file system for the fault's hold, then
// thaws it, whatever ctx says (a frozen disk left behind would block the
// node's kill and its unmount for ever). The note says whether the node
// logged that it found its disk stalled.
func (n *Nemesis) diskStall(ctx context.Context, f Fault, victim int32, ev *Event) error {
	mark := n.C.LogMarks()[victim]
	if err := n.Disks.Freeze(ctx, victim); err != nil {
		ev.NotApplied = true
		return err
	}
	wait(ctx, f.Hold)
	err := n.Disks.Thaw(victim)
	if lines, _, lerr := n.C.LogSince(victim, mark); lerr == nil && bytes.Contains(lines, []byte("disk stalled")) {
		ev.Note = joinNote(ev.Note, "the node logged its disk stalled")
	}
	return err
}

// thawBeforeKill thaws the victim's disk if it is frozen: SIGKILL of a
// process blocked on a frozen file system completes only after the thaw.
func (n *Nemesis) thawBeforeKill(victim int32, ev *Event) error {
	if !n.Disks.Frozen(victim) {
		return nil
	}
	ev.Note = joinNote(ev.Note, fmt.Sprintf("node %d's disk was frozen: thawed before the kill", victim))
	return n.Disks.Thaw(victim)
}

// diskStallLine says how a run's disk stalls are set up.
func diskStallLine(sizeMiB int, stallTimeout time.Duration) string {
	s := fmt.Sprintf("disk stalls: every node on a loop disk of %d MiB (ext4, frozen with fsfreeze); ", sizeMiB)
	if stallTimeout > 0 {
		return s + fmt.Sprintf("the nodes' %s %v", diskStallFlag, stallTimeout)
	}
	return s + "the binary has no " + diskStallFlag + ": a node keeps its leaderships while its disk is frozen"
}
