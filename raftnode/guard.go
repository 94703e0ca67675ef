package raftnode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	pb "go.etcd.io/raft/v3/raftpb"
)

// rejoinGuardFile, in the metadata directory, marks a voter that started
// with empty storage under Config.RejoinGuard, or whose log a scrub's
// repair truncated (scrub_repair.go), and has not yet caught up. Its
// presence keeps the node guarded. Its content is the guard's nonce,
// guardNonceLen random bytes in lowercase hex (32 characters, no newline),
// drawn when the guard starts: it names this storage, so that another
// controller that saw it at the cluster's first start can vouch for it (see
// GuardNonce and LiftGuard). A marker of an older build is empty; one that is
// not exactly a nonce is read as no nonce (the node is guarded all the same).
// It is written (atomically and durably) before the bootstrap entries, and
// removed when the guard lifts; the removal is not followed by a directory
// fsync, so a crash may bring it back, which only costs another catch-up.
const rejoinGuardFile = "rejoin-guard"

// guardNonceLen is the number of random bytes in a guard nonce.
const guardNonceLen = 16

// ErrGuardNonceMismatch is returned by LiftGuard when the nonce it is given
// is not this node's.
var ErrGuardNonceMismatch = errors.New("raftnode: rejoin guard nonce does not match")

// voteGuard is the rejoin guard's state. Owned by the Ready loop.
//
// While on, the node's outgoing MsgVote, MsgPreVote, MsgVoteResp and
// MsgPreVoteResp are dropped and incoming MsgTimeoutNow is ignored: it
// grants no vote and wins no election, but otherwise follows the leader
// (appends, snapshots, heartbeats). Dropping messages is always safe in
// raft. It lifts once a target is set (CatchUpTo) and this node's commit
// index and term have reached it.
type voteGuard struct {
	on bool
	// nonce is the marker's content while on ("" for a marker without a
	// valid one).
	nonce     string
	targetSet bool
	index     uint64 // commit index to reach
	term      uint64 // term to reach
}

// startGuard decides, before the bootstrap, whether the node starts
// guarded: always if the marker file is present (a guarded start that has
// not caught up yet, even if its log is no longer empty); and for a voter
// with empty storage when cfg.RejoinGuard is set and the group has other
// voters (then the marker is written first).
func (n *Node) startGuard(fresh, voter bool) error {
	names, err := n.st.files.List()
	if err != nil {
		return err
	}
	if slices.Contains(names, rejoinGuardFile) {
		b, err := n.st.files.ReadFile(rejoinGuardFile)
		if err != nil {
			return fmt.Errorf("raftnode: rejoin guard: %w", err)
		}
		n.guard.on, n.guard.nonce = true, parseGuardNonce(b)
		n.lg.Warn("raftnode: this node started with an empty raft log (or one a repair truncated) and has not yet caught up; it will not vote until it has (rejoin guard)",
			"nonce", n.guard.nonce)
		return nil
	}
	if !fresh || !voter || !n.cfg.RejoinGuard || len(n.cfg.Voters) < 2 {
		return nil
	}
	nonce := newGuardNonce()
	if err := n.st.files.WriteFile(rejoinGuardFile, []byte(nonce)); err != nil {
		return fmt.Errorf("raftnode: rejoin guard: %w", err)
	}
	n.guard.on, n.guard.nonce = true, nonce
	n.lg.Info("raftnode: starting with an empty raft log; not voting until caught up with the other voters (rejoin guard)", "nonce", nonce)
	return nil
}

// newGuardNonce draws a fresh nonce for the marker.
func newGuardNonce() string {
	b := make([]byte, guardNonceLen)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// parseGuardNonce returns the marker's nonce, or "" when b is not one (an
// older build's empty marker).
func parseGuardNonce(b []byte) string {
	raw, err := hex.DecodeString(string(b))
	if err != nil || len(raw) != guardNonceLen || hex.EncodeToString(raw) != string(b) {
		return ""
	}
	return string(b)
}

// IsGuardNonce reports whether s is a guard nonce as a marker holds it.
func IsGuardNonce(s string) bool { return s != "" && parseGuardNonce([]byte(s)) == s }

// LiftGuard lifts the rejoin guard at once, without a catch-up target, if
// the node is guarded and nonce is the nonce in its marker (see
// GuardNonce). The caller (node/rejoin.go) does so when another voter that
// saw this node's storage, by its nonce, at the cluster's first start — when
// no leader had been elected — vouches for it: storage kept since then holds
// everything the node ever acknowledged. ErrGuardNonceMismatch if the nonce
// is empty or another; nothing on a node that is not guarded. Like
// CatchUpTo, it returns once the loop has it: Status.VoteGuarded turns false
// at the end of that loop pass.
func (n *Node) LiftGuard(ctx context.Context, nonce string) error {
	var err error
	if derr := n.do(ctx, func() {
		g := &n.guard
		if !g.on {
			return
		}
		if nonce == "" || nonce != g.nonce {
			err = ErrGuardNonceMismatch
			return
		}
		g.targetSet, g.index, g.term = true, 0, 0
		n.lg.Info("raftnode: rejoin guard vouched for by its nonce; lifting it", "nonce", nonce)
	}); derr != nil {
		return derr
	}
	return err
}

// CatchUpTo sets the target a vote-guarded node (Config.RejoinGuard) must
// reach before it votes again: a commit index of at least index and a term
// of at least term. A second call raises the target to the larger of the
// two. It returns once the loop has the target; the guard lifts later, when
// the node has caught up (Status.VoteGuarded turns false). On a node that is
// not guarded it does nothing.
func (n *Node) CatchUpTo(ctx context.Context, index, term uint64) error {
	return n.do(ctx, func() {
		if !n.guard.on {
			return
		}
		g := &n.guard
		g.targetSet, g.index, g.term = true, max(g.index, index), max(g.term, term)
		n.lg.Info("raftnode: rejoin guard target", "commit", g.index, "epoch", g.term)
	})
}

// guardDrops reports whether the guard withholds outgoing m. Loop only.
func (n *Node) guardDrops(m *pb.Message) bool {
	if !n.guard.on {
		return false
	}
	switch m.GetType() {
	case pb.MsgVote, pb.MsgVoteResp, pb.MsgPreVote, pb.MsgPreVoteResp:
		return true
	}
	return false
}

// guardIgnores reports whether the guard ignores incoming m: a leader's
// MsgTimeoutNow would make this node campaign. Loop only.
func (n *Node) guardIgnores(m *pb.Message) bool {
	return n.guard.on && m.GetType() == pb.MsgTimeoutNow
}

// maybeLiftGuard lifts the guard once the target is reached: the marker is
// removed first, so that a failure leaves the node guarded. Loop only.
func (n *Node) maybeLiftGuard() error {
	g := &n.guard
	if !g.on || !g.targetSet {
		return nil
	}
	bs := n.rn.BasicStatus()
	if bs.GetCommit() < g.index || bs.GetTerm() < g.term {
		return nil
	}
	if err := n.st.files.Remove(rejoinGuardFile); err != nil {
		return fmt.Errorf("raftnode: lifting the rejoin guard: %w", err)
	}
	g.on, g.nonce = false, ""
	n.lg.Info("raftnode: caught up; voting again (rejoin guard lifted)",
		"commit", bs.GetCommit(), "epoch", bs.GetTerm(), "target_commit", g.index, "target_epoch", g.term)
	return nil
}
