package raftnode

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"paymentlog/internal/portprobe"
	"paymentlog/quic"
	"paymentlog/segment"
)

// Defaults for zero Config fields.
const (
	DefaultTickInterval   = 50 * time.Millisecond
	DefaultElectionTicks  = 10
	DefaultHeartbeatTicks = 1
	DefaultSnapshotEvery  = 10000
	DefaultCatchUpEntries = 5000
	DefaultSegmentBytes   = 8 << 20
	DefaultDiskFullRetry  = time.Second
	DefaultMaxSizePerMsg  = 1 << 20
	DefaultMaxInflight    = 256
	DefaultPeerQueue      = 4096
	DefaultEntryCache     = 4 << 20
)

// Config configures a Node. Zero values take the documented defaults.
type Config struct {
	ID       uint64
	Voters   map[uint64]string // controller-eligible nodes: id -> addr (from --controllers)
	Addr     string            // this node's address (a learner's address is added by the leader)
	DataDir  string            // <data-dir>/__cluster_metadata-0
	Endpoint *quic.Endpoint    // shared endpoint; raftnode registers wire.TypeRaftMessage on it

	// TickInterval is raft's logical clock period (default 50ms). An election
	// starts after ElectionTicks..2*ElectionTicks-1 ticks without a leader
	// (default 10, so 0.5–1 s); the leader heartbeats every HeartbeatTicks
	// ticks (default 1).
	TickInterval   time.Duration // default 50ms
	ElectionTicks  int           // default 10
	HeartbeatTicks int           // default 1
	// LeaderProbe, when set, checks the port of a leader this follower has
	// not heard from for LeaderProbeTicks (leadergone.go): Closed (its
	// process is gone) skips the rest of the leader's lease, so that the
	// election starts within the randomized part of the timeout. It is
	// given when the follower last heard from the leader. Nil: the election
	// timeout alone.
	LeaderProbe portprobe.Func
	// LeaderProbeTicks is the silence before a probe; default 3.
	LeaderProbeTicks int
	SnapshotEvery    uint64 // entries between snapshots, default 10000
	CatchUpEntries   uint64 // entries kept behind a snapshot, default 5000
	NoSync           bool   // skip fsync (tests only)
	// DropIncoming, if set and true for a frame's sender, drops the frame
	// unread, as a link that loses the raft traffic would (tests only).
	DropIncoming func(from uint64) bool
	// ForwardProposals lets a follower's Propose be forwarded to the leader.
	// Off by default: only the active controller proposes, and only what it
	// decided as leader; a proposal made by a node that has lost leadership
	// (a controller paused past its term) must be dropped, not committed.
	ForwardProposals bool
	// RejoinGuard protects committed entries from a voter that lost its raft
	// storage (disk replaced, data directory wiped) and restarts with an
	// empty log: without it, such a node votes at once, and a node lacking
	// committed entries can be elected with its vote. With it, a voter that
	// starts with empty storage (a first start looks the same) is
	// vote-guarded: it follows the leader but grants no vote and does not
	// campaign until it has reached the target given to CatchUpTo, which the
	// caller learns from the other voters (see guard.go and the package doc).
	// The guard is recorded on disk and survives restarts until lifted.
	RejoinGuard bool

	// ManualTick turns the internal ticker off: time advances only through
	// Node.Tick (tests drive elections deterministically this way).
	ManualTick bool
	// DiskFullRetry is how often a node whose metadata log found the disk
	// full tries again to persist what it could not (default 1s; see
	// diskfull.go).
	DiskFullRetry time.Duration
	// SegmentBytes is the metadata log's segment size (default 8 MiB).
	SegmentBytes int64
	// MaxSizePerMsg bounds the entries in one append message (default 1 MiB).
	MaxSizePerMsg uint64
	// PeerQueue is the number of messages queued per peer before new ones are
	// dropped and the peer reported unreachable (default 4096).
	PeerQueue int
	// EntryCacheBytes bounds the in-memory cache of recent entries (default 4 MiB).
	EntryCacheBytes uint64
	// FS is the file system DataDir lives on (default the OS; tests use
	// segment.MemFS to inject faults and crashes).
	FS segment.FS

	SM     StateMachine
	Logger *slog.Logger // default slog.Default(); should name the node (the node's logger carries node=ID)

	// Test seams (package tests only): an in-memory network and storage.
	net   network
	log   logStore
	files fileStore
	hooks *testHooks
}

// ConfigError names the offending field.
type ConfigError struct {
	Field string
	Err   error
}

func (e *ConfigError) Error() string { return fmt.Sprintf("raftnode config: %s: %v", e.Field, e.Err) }
func (e *ConfigError) Unwrap() error { return e.Err }

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.TickInterval == 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.ElectionTicks == 0 {
		c.ElectionTicks = DefaultElectionTicks
	}
	if c.LeaderProbeTicks <= 0 {
		c.LeaderProbeTicks = 3
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = DefaultHeartbeatTicks
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = DefaultSnapshotEvery
	}
	if c.CatchUpEntries == 0 {
		c.CatchUpEntries = DefaultCatchUpEntries
	}
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.DiskFullRetry == 0 {
		c.DiskFullRetry = DefaultDiskFullRetry
	}
	if c.MaxSizePerMsg == 0 {
		c.MaxSizePerMsg = DefaultMaxSizePerMsg
	}
	if c.PeerQueue == 0 {
		c.PeerQueue = DefaultPeerQueue
	}
	if c.EntryCacheBytes == 0 {
		c.EntryCacheBytes = DefaultEntryCache
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate checks a Config after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.ID == 0:
		return &ConfigError{"ID", errors.New("must be > 0")}
	case len(c.Voters) == 0:
		return &ConfigError{"Voters", errors.New("required")}
	case c.DataDir == "" && c.log == nil:
		return &ConfigError{"DataDir", errors.New("required")}
	case c.Endpoint == nil && c.net == nil:
		return &ConfigError{"Endpoint", errors.New("required")}
	case c.SM == nil:
		return &ConfigError{"SM", errors.New("required")}
	case c.TickInterval < 0:
		return &ConfigError{"TickInterval", errors.New("must be > 0")}
	case c.HeartbeatTicks < 0:
		return &ConfigError{"HeartbeatTicks", errors.New("must be > 0")}
	case c.ElectionTicks <= c.HeartbeatTicks:
		return &ConfigError{"ElectionTicks", errors.New("must be greater than HeartbeatTicks")}
	case c.PeerQueue < 0:
		return &ConfigError{"PeerQueue", errors.New("must be > 0")}
	}
	for id := range c.Voters {
		if id == 0 {
			return &ConfigError{"Voters", errors.New("id 0 is reserved")}
		}
	}
	return nil
}

// testHooks lets package tests observe work in flight (see network_test.go).
type testHooks struct {
	// work is called with +n when n messages start their way to a peer or
	// into the Ready loop, and with -n when they are done (stepped and the
	// resulting Ready handled, or dropped).
	work func(delta int)
	// redialBackoff replaces the production redial backoff (tests that drive
	// time by ticks use 0: wall-clock backoff would outlast many ticks).
	redialBackoff time.Duration
	// queued, if set, sees every message as the Ready loop hands it to the
	// transport (tests check what is durable by then).
	queued func(from uint64, m *pb.Message)
}

func (h *testHooks) add(n int) {
	if h != nil && h.work != nil && n != 0 {
		h.work(n)
	}
}
