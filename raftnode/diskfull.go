package raftnode

import (
	"errors"
	"syscall"
	"time"

	"go.etcd.io/raft/v3"

	"paymentlog/segment"
)

// A full disk stalls the node; it does not stop it.
//
// When persisting a Ready fails because the file system has no room
// (ENOSPC, EDQUOT: segment.ErrDiskFull for the entry log, the error of a
// checkpoint write for the hard state and snapshots), nothing of it was
// made durable that raft relies on, and nothing of it has been acted on:
// its messages are unsent, its committed entries unapplied, and Advance was
// not called. The node keeps that Ready and freezes: every
// Config.DiskFullRetry it persists the same Ready again (a partial append
// is completed, see diskStorage.append), and until that succeeds it steps
// nothing into raft — peer messages are dropped as a lossy network would,
// proposals fail with ErrProposalDropped, ticks do not advance raft's clock —
// so no further Ready can depend on the missing one. To the rest of the
// group the node is simply unreachable: a stalled leader sends no
// heartbeats and the other voters elect another; a stalled follower
// acknowledges nothing. Status reports no leader and says why
// (Status.DiskFull), and LeaderChanges delivers 0, so a controller on this
// node stops acting as the active one. Once the Ready is persisted the node
// sends its messages, applies its entries and goes on where it stopped;
// raft treats whatever is stale in them like delayed messages.
//
// Failing the node instead (as for any other storage error) would make
// every node whose disk fills exit at the next metadata record, and exit
// again at every restart while the disk stays full.
//
// A failed fsync is not a full disk even when it reports ENOSPC: the log
// has then failed (segment.ErrLogFailed) and the node stops.

// stalledReady is a Ready the disk had no room for.
type stalledReady struct {
	rd    raft.Ready
	err   error // the last attempt's
	since time.Time
	tries int
}

// isDiskFull reports whether err is a write refused for lack of space.
func isDiskFull(err error) bool {
	if err == nil || errors.Is(err, segment.ErrLogFailed) {
		return false
	}
	return errors.Is(err, segment.ErrDiskFull) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// stallOn freezes the node on rd (see above).
func (n *Node) stallOn(rd raft.Ready, err error) {
	n.stall = &stalledReady{rd: rd, err: err, since: time.Now(), tries: 1}
	n.lg.Error("raftnode: disk full: the metadata log cannot be written; this node takes no part in the metadata quorum until there is room (retrying)",
		"retry_every", n.cfg.DiskFullRetry, "err", err)
	n.leaderChanged(0) // fails waiting proposals and publishes the status
}

// runStalled is the loop while the node is stalled. It returns true when
// the node stopped (Close, or a storage failure other than a full disk).
func (n *Node) runStalled() (stopped bool) {
	t := time.NewTimer(n.cfg.DiskFullRetry)
	defer t.Stop()
	for n.stall != nil {
		select {
		case <-n.stopc:
			n.stop(nil)
			return true
		case <-t.C:
			if err := n.retryStalled(); err != nil {
				n.lg.Error("raftnode: stopping after a storage failure", "err", err)
				n.stop(err)
				return true
			}
			t.Reset(n.cfg.DiskFullRetry)
		case ack := <-n.tickc:
			close(ack) // raft's clock stands still
		case in := <-n.recvc:
			if in.done != nil {
				in.done()
			}
		case p := <-n.propc:
			p.done <- proposeResult{err: ErrProposalDropped}
		case op := <-n.opc:
			op()
		case r := <-n.reportc:
			n.handleReport(r)
		}
	}
	return false
}

// retryStalled persists the stalled Ready again and, once that succeeds,
// finishes it and handles whatever raft has next.
func (n *Node) retryStalled() error {
	s := n.stall
	if err := n.persist(s.rd); err != nil {
		if !isDiskFull(err) {
			return err
		}
		s.err = err
		s.tries++
		if s.tries%60 == 0 {
			n.lg.Warn("raftnode: disk still full; metadata log stalled", "for", time.Since(s.since).Round(time.Second), "err", err)
		}
		return nil
	}
	n.stall = nil
	n.lg.Info("raftnode: the metadata log has room again; resuming", "stalled_for", time.Since(s.since).Round(time.Millisecond))
	if err := n.afterPersist(s.rd); err != nil {
		return err
	}
	if lead := n.rn.BasicStatus().Lead; lead != n.lead {
		n.leaderChanged(lead)
	}
	var it iteration
	return n.process(&it)
}
