package raftnode

// This file is the API contract of package raftnode that node compiles
// against. The raftnode helper replaces every body (and may move declarations
// into files named after their concept) but keeps these signatures; additions
// are fine.

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"paymentlog/quic"
)

var (
	ErrStopped         = errors.New("raftnode: stopped")
	ErrNotLeader       = errors.New("raftnode: not the leader")
	ErrProposalDropped = errors.New("raftnode: proposal dropped")
)

// StateMachine receives committed entries in order. Apply is called from the
// Ready loop; it must not block on raft (no Propose from inside Apply).
type StateMachine interface {
	// Apply applies one committed normal entry (index is the raft index).
	Apply(index uint64, data []byte)
	// Snapshot returns the state as of the last applied index.
	Snapshot() ([]byte, error)
	// Restore replaces the state with a snapshot taken at index.
	Restore(index uint64, data []byte) error
}

// Config configures a Node. Zero durations take the documented defaults.
type Config struct {
	ID       uint64
	Voters   map[uint64]string // controller-eligible nodes: id -> addr (from --controllers)
	Addr     string            // this node's address (a learner's address is added by the leader)
	DataDir  string            // <data-dir>/__cluster_metadata-0
	Endpoint *quic.Endpoint    // shared endpoint; raftnode registers wire.TypeRaftMessage on it

	TickInterval   time.Duration // default 50ms
	ElectionTicks  int           // default 10
	HeartbeatTicks int           // default 1
	SnapshotEvery  uint64        // entries between snapshots, default 10000
	CatchUpEntries uint64        // entries kept behind a snapshot, default 5000
	NoSync         bool          // skip fsync (tests only)

	SM     StateMachine
	Logger *slog.Logger
}

// Status is a snapshot of raft's view.
type Status struct {
	ID       uint64
	Leader   uint64 // 0 when unknown
	Term     uint64
	Applied  uint64
	Commit   uint64
	IsLeader bool
	Voters   []uint64
	Learners []uint64
}

// Node is one member of the metadata raft group. Lifecycle: Start restores
// snapshot+log from DataDir and starts the Ready loop; Close stops it.
type Node struct{}

// Start opens storage and starts the node. A controller-eligible node with no
// state bootstraps with Voters; a non-voter starts empty and waits to be added
// as a learner.
func Start(ctx context.Context, cfg Config) (*Node, error) { panic("unimplemented") }

// Propose submits data and returns once it is committed AND applied locally
// (its raft index), or ctx ends, or leadership is lost (ErrProposalDropped).
func (n *Node) Propose(ctx context.Context, data []byte) (uint64, error) { panic("unimplemented") }

// Status returns raft's current view.
func (n *Node) Status() Status { panic("unimplemented") }

// LeaderChanges delivers the new leader id (0 = none) whenever it changes.
// The channel is buffered and drops stale values; read Status for the latest.
func (n *Node) LeaderChanges() <-chan uint64 { panic("unimplemented") }

// AddLearner proposes a conf change adding id at addr as a learner (idempotent).
func (n *Node) AddLearner(ctx context.Context, id uint64, addr string) error { panic("unimplemented") }

// SetPeerAddr tells the transport where a peer lives.
func (n *Node) SetPeerAddr(id uint64, addr string) { panic("unimplemented") }

// TransferLeadership asks raft to hand leadership to another voter and waits
// until it has moved or ctx ends.
func (n *Node) TransferLeadership(ctx context.Context, to uint64) error { panic("unimplemented") }

// Close stops the Ready loop, closes peer streams and storage.
func (n *Node) Close() error { panic("unimplemented") }
