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
// (segment.Options.OnDiskFull), or the first time the metadata log is
// stalled on it (raftnode Status.DiskFull), until a probe, every
// diskProbeInterval, manages to write and fsync diskProbeBytes in the data
// directory and the resume rule (diskresume.go: enough free space, no
// backoff after a relapse) lets it go; and while the metadata log is
// stalled, until that log has persisted what it could not. Then heartbeats
// resume: the controller unfences the node once it has applied the metadata
// log, its followers catch up and rejoin the ISR, and preferred-leader
// election gives its leaderships back. The probe loop also keeps the disk
// reserve (diskreserve.go) in place whenever there is room for it.

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
	raftStalled bool       // the metadata log was stalled on a full disk at the last look
	resume      diskResume // when a full disk lets the node resume
	whyLogged   time.Time  // when the resume rule's refusal was last logged

	// reserve guards the disk reserve file (diskreserve.go); not mu: the
	// reserve is created and removed (I/O) with it held.
	reserve struct {
		sync.Mutex
		present bool
	}
}

// partitionDiskFull is segment.Options.OnDiskFull: it may run with a log's
// locks held, so it only records.
func (n *Node) partitionDiskFull(dir string, err error) {
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	n.filledLocked(err)
}

// filledLocked marks the disk full (disk.mu held), which pauses the
// followers' fetching (broker.SetDiskFull).
func (n *Node) filledLocked(err error) {
	d := &n.disk
	if !d.full {
		d.full, d.since, d.err = true, time.Now(), err
		d.resume.filled(d.since)
		if n.broker != nil {
			n.broker.SetDiskFull(true)
		}
	}
}

// diskFullReason says why this node's disk counts as full ("" when it does
// not).
func (n *Node) diskFullReason() string {
	s := n.raft.Status().DiskFull
	d := &n.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	stalled := s != ""
	if stalled && !d.raftStalled {
		// A stall that starts counts as a filling: resuming then also waits
		// for the probe and the resume rule. Only when it starts: the stall
		// outlives the probe's verdict by up to a raft retry.
		n.filledLocked(errors.New("metadata log: " + s))
	}
	d.raftStalled = stalled
	if stalled {
		return "metadata log: " + s
	}
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

// probeDisk clears the full state once the data directory takes
// diskProbeBytes again and the resume rule allows it, and keeps the disk
// reserve in place whenever there is room for it.
func (n *Node) probeDisk(ctx context.Context) error {
	t := time.NewTicker(diskProbeInterval)
	defer t.Stop()
	fs := n.logFS()
	path := filepath.Join(n.cfg.DataDir, diskProbeFile)
	buf := make([]byte, diskProbeBytes)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		n.keepDiskReserve()
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
		sp, serr := segment.SpaceOf(fs, n.cfg.DataDir)
		now := time.Now()
		d.mu.Lock()
		d.incarnation = false
		ok, why := d.resume.may(now, sp, serr == nil)
		if !ok {
			logIt := now.Sub(d.whyLogged) >= time.Minute
			if logIt {
				d.whyLogged = now
			}
			d.mu.Unlock()
			if logIt {
				n.log.Warn("disk full: the probe fits but the node does not resume yet", "why", why)
			}
			continue
		}
		d.resume.resumed(now)
		since := d.since
		d.full, d.err, d.whyLogged = false, nil, time.Time{}
		d.mu.Unlock()
		n.broker.SetDiskFull(false)
		n.log.Info("disk full: room again in the data directory", "full_for", time.Since(since).Round(time.Millisecond),
			"free_bytes", sp.Avail, "total_bytes", sp.Total)
	}
}

// keepDiskReserve creates the disk reserve again when it is missing and
// the file system has room for it on top of what the resume rule asks for
// (so that a reserve just released for a deletion is not taken back before
// the deletion has freed segments).
func (n *Node) keepDiskReserve() {
	d := &n.disk
	d.reserve.Lock()
	present := d.reserve.present
	d.reserve.Unlock()
	if present {
		return
	}
	if sp, err := segment.SpaceOf(n.logFS(), n.cfg.DataDir); err == nil {
		d.mu.Lock()
		need := max(d.resume.need(sp), diskProbeBytes)
		d.mu.Unlock()
		if sp.Avail < diskReserveBytes+need {
			return
		}
	}
	if err := n.ensureDiskReserve(); err != nil {
		n.log.Debug("disk reserve not created yet", "err", err)
		return
	}
	n.log.Info("disk reserve in place", "path", filepath.Join(n.cfg.DataDir, diskReserveFile), "bytes", diskReserveBytes)
}
