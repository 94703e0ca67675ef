package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"paymentlog/segment"
)

// A node whose disk is full steps aside until there is room again.
//
// Kafka takes a log directory offline on an I/O error, a full disk
// included; a broker whose only log directory failed shuts down, and the
// controller moves its leaderships. Here a full disk does not stop the
// process (the metadata log stalls, raftnode/diskfull.go; a partition log
// refuses the append with ErrDiskFull and stays healthy), but a node that
// cannot write must not keep leaderships it cannot serve nor count as a
// live broker that placement and elections pick. So while the disk is full
// the node sends no broker heartbeats: the controller fences it after a
// session timeout, which removes it from every ISR and moves each of its
// leaderships to an in-sync replica, exactly as for a node that died; it
// fences itself after two (it then refuses writes). Its replicas keep
// trying to fetch (a full follower retries each partition once a second)
// and it keeps serving reads.
//
// The disk counts as full from the first append refused for lack of space
// (segment.Options.OnDiskFull) until a probe, every diskProbeInterval,
// manages to write and fsync diskProbeBytes in the data directory; and
// while the metadata log is stalled on it (raftnode Status.DiskFull), until
// that log has persisted what it could not. Then heartbeats resume: the
// controller unfences the node once it has applied the metadata log, its
// followers catch up and rejoin the ISR, and preferred-leader election
// gives its leaderships back.

const (
	diskProbeInterval = time.Second
	// diskProbeBytes is what the probe must be able to write: room for at
	// least a typical batch, so that heartbeats do not resume (and the node
	// take leaderships back) only to be refused again at once.
	diskProbeBytes = 1 << 20
	diskProbeFile  = ".disk-probe"
)

// diskFull is the partition logs' side of the state.
type diskFull struct {
	mu    sync.Mutex
	full  bool
	since time.Time
	err   error
	// held: heartbeats are being held back (for the log messages).
	held bool
	// incarnation: the node's incarnation is still to be recorded (the
	// disk was full at start).
	incarnation bool
}

// partitionDiskFull is segment.Options.OnDiskFull: it may run with a log's
// locks held, so it only records.
func (n *Node) partitionDiskFull(dir string, err error) {
	d := &n.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.full {
		d.full, d.since, d.err = true, time.Now(), err
	}
}

// diskFullReason says why this node's disk counts as full ("" when it does
// not).
func (n *Node) diskFullReason() string {
	if s := n.raft.Status().DiskFull; s != "" {
		return "metadata log: " + s
	}
	d := &n.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.full {
		return d.err.Error()
	}
	return ""
}

// holdHeartbeats reports whether heartbeats are to be held back now,
// logging when that starts and ends.
func (n *Node) holdHeartbeats() bool {
	reason := n.diskFullReason()
	d := &n.disk
	d.mu.Lock()
	was := d.held
	d.held = reason != ""
	d.mu.Unlock()
	switch {
	case reason != "" && !was:
		n.log.Error("disk full: holding back broker heartbeats so that the controller fences this node and moves its leaderships; writes to it are refused until there is room",
			"err", reason)
	case reason == "" && was:
		n.log.Info("disk has room again: heartbeating; the controller unfences this node once it has applied the metadata log")
	}
	return reason != ""
}

// probeDisk clears the partition logs' full state once the data directory
// takes diskProbeBytes again.
func (n *Node) probeDisk(ctx context.Context) error {
	t := time.NewTicker(diskProbeInterval)
	defer t.Stop()
	fs := n.cfg.LogFS
	if fs == nil {
		fs = segment.OSFS{}
	}
	path := filepath.Join(n.cfg.DataDir, diskProbeFile)
	buf := make([]byte, diskProbeBytes)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		d := &n.disk
		d.mu.Lock()
		full := d.full
		d.mu.Unlock()
		if !full {
			continue
		}
		err := segment.WriteCheckpoint(fs, path, buf)
		if rerr := fs.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = rerr
		}
		if err == nil && n.disk.incarnation {
			err = recordIncarnation(n.cfg.DataDir, n.incarnation)
		}
		if err != nil {
			continue
		}
		d.mu.Lock()
		d.incarnation = false
		since := d.since
		d.full, d.err = false, nil
		d.mu.Unlock()
		n.log.Info("disk full: room again in the data directory", "full_for", time.Since(since).Round(time.Millisecond))
	}
}
