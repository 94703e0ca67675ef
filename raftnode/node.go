package raftnode

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"paymentlog/segment"
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

// Node is one member of the metadata raft group.
//
// Lifecycle: Start restores the snapshot and the log from DataDir (restoring
// the state machine from the snapshot before it returns), registers the raft
// stream handler on the endpoint and starts the Ready loop; committed entries
// after the snapshot are re-applied by the loop. Close stops the loop (pending
// proposals fail with ErrStopped), stops the peer streams, writes the last hard
// state and closes the log; later calls return nil. If persisting fails the
// loop stops on its own: Done is closed, Err returns the cause and every call
// fails with it; Close must still be called.
type Node struct {
	cfg   Config
	id    uint64
	lg    *slog.Logger
	st    *diskStorage
	rn    *raft.RawNode
	peers *peers
	hooks *testHooks
	seq   atomic.Uint64 // last proposal sequence number

	recvc   chan inbound
	propc   chan *proposal
	opc     chan func()
	tickc   chan chan struct{}
	reportc chan peerReport
	stopc   chan struct{} // closed by Close
	donec   chan struct{} // closed when the loop has exited
	leaderc chan uint64   // LeaderChanges: capacity 1, newest value wins

	// Owned by the Ready loop.
	pending   pendingSet
	confState *pb.ConfState
	applied   uint64
	lead      uint64
	// refused is the last snapshot from the leader the state machine
	// refused (err nil: none since the last one installed).
	refused struct {
		index uint64
		err   error
	}
	// lostLogNotes are rejections for leaders that believe this node holds
	// entries it lost (lostlog.go); lostLogWarned the leader last warned
	// about; lostLogStuck the follower last warned about as unable to catch
	// up (no voter to hand leadership to).
	lostLogNotes  []*pb.Message
	lostLogWarned uint64
	lostLogStuck  uint64
	lostLogTried  map[uint64]bool // transfer targets tried since the last reset
	// lostLogRetry is the tick before which no voter is tried a second
	// time (see lostLogRetryTicks); ticks counts raft ticks.
	lostLogRetry uint64
	ticks        uint64
	lw           leaderWatch // leadergone.go
	// leaderGone is OnLeaderGone's function (nil: none).
	leaderGone atomic.Pointer[func(id uint64)]
	guard      voteGuard // see Config.RejoinGuard
	// stall is the Ready the disk had no room for, nil while none
	// (diskfull.go).
	stall *stalledReady
	// snapRetry is the applied index before which no snapshot is tried
	// after one failed.
	snapRetry uint64
	// fatal, set by an operation run on the loop, stops it (scrub.go).
	fatal error

	scrub scrubCounters // scrub.go

	closeOnce sync.Once
	closeErr  error

	mu struct {
		sync.Mutex
		status  Status
		changed chan struct{} // closed and replaced whenever status changes
		err     error         // why the loop stopped, if it failed
	}
}

// inbound is a frame's messages on their way into the Ready loop.
type inbound struct {
	msgs []*pb.Message
	done func() // may be nil
}

// Start opens storage and starts the node. A controller-eligible node with no
// state bootstraps with Voters; a non-voter starts empty and waits to be added
// as a learner.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	lg := cfg.Logger // the caller's logger names the node

	files, logs := cfg.files, cfg.log
	var repair *scrubRepair
	if files == nil {
		fsys := cfg.FS
		if fsys == nil {
			fsys = segment.OSFS{}
		}
		if err := fsys.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("raftnode: %w", err)
		}
		files = newDirFiles(fsys, cfg.DataDir)
	}
	if logs == nil {
		// Before the open repairs what a scrub found (scrub_repair.go).
		r, err := prepareScrubRepair(cfg, files)
		if err != nil {
			return nil, err
		}
		sl, err := openSegmentLog(ctx, cfg.DataDir, &cfg)
		if err != nil {
			return nil, err
		}
		logs, repair = sl, r
	}
	st, err := openStorage(ctx, logs, files, cfg.EntryCacheBytes, lg)
	if err != nil {
		_ = logs.Close()
		return nil, err
	}
	if repair != nil {
		if err := repair.settle(st, logs.(*segmentLog), lg); err != nil {
			_ = st.close()
			return nil, err
		}
	}
	n, err := newNode(cfg, st)
	if err != nil {
		_ = st.close()
		return nil, err
	}
	net := cfg.net
	if net == nil {
		net = &quicNetwork{ep: cfg.Endpoint, lg: lg}
	}
	n.peers = newPeers(n.id, net, cfg.PeerQueue, n.reportFromPeer, cfg.hooks, lg)
	for id, addr := range cfg.Voters {
		n.peers.setAddr(id, addr)
	}
	if err := n.restoreFromStorage(); err != nil {
		n.peers.close()
		_ = st.close()
		return nil, err
	}
	net.Listen(n.receive)
	lg.Info("raftnode: started", "applied", n.applied, "last_index", st.lastIndex(),
		"term", st.hs.GetTerm(), "voters", n.confState.GetVoters(), "learners", n.confState.GetLearners())
	n.publishStatus()
	go n.run()
	return n, nil
}

func newNode(cfg Config, st *diskStorage) (*Node, error) {
	n := &Node{
		cfg:     cfg,
		id:      cfg.ID,
		lg:      cfg.Logger,
		st:      st,
		hooks:   cfg.hooks,
		recvc:   make(chan inbound),
		propc:   make(chan *proposal),
		opc:     make(chan func()),
		tickc:   make(chan chan struct{}),
		reportc: make(chan peerReport, reportChanSize),
		stopc:   make(chan struct{}),
		donec:   make(chan struct{}),
		leaderc: make(chan uint64, 1),
		pending: newPendingSet(),
	}
	n.mu.changed = make(chan struct{})
	var b [8]byte
	_, _ = rand.Read(b[:])
	n.seq.Store(binary.LittleEndian.Uint64(b[:]) >> 1) // random start: ids stay unique across restarts

	_, cs, _ := st.InitialState()
	n.confState = cs
	n.applied = st.snapshotIndex()
	rn, err := raft.NewRawNode(&raft.Config{
		ID:                        cfg.ID,
		ElectionTick:              cfg.ElectionTicks,
		HeartbeatTick:             cfg.HeartbeatTicks,
		Storage:                   st,
		Applied:                   n.applied,
		MaxSizePerMsg:             cfg.MaxSizePerMsg,
		MaxInflightMsgs:           DefaultMaxInflight,
		CheckQuorum:               true,
		PreVote:                   true,
		DisableProposalForwarding: !cfg.ForwardProposals,
		Logger:                    raftLogger{lg: cfg.Logger},
	})
	if err != nil {
		return nil, fmt.Errorf("raftnode: %w", err)
	}
	n.rn = rn
	fresh := st.lastIndex() == 0 && st.snapshotIndex() == 0 && raft.IsEmptyHardState(st.hs)
	_, voter := cfg.Voters[cfg.ID]
	if err := n.startGuard(fresh, voter); err != nil {
		return nil, err
	}
	if fresh && voter {
		// Every voter bootstraps the same entries 1..len(Voters): one
		// ConfChangeAddNode per voter in id order, term 1, with its address.
		var ps []raft.Peer
		for _, id := range sortedIDs(cfg.Voters) {
			ps = append(ps, raft.Peer{ID: id, Context: encodeEnvelope(proposalID{}, []byte(cfg.Voters[id]))})
		}
		if err := rn.Bootstrap(ps); err != nil {
			return nil, fmt.Errorf("raftnode: bootstrap: %w", err)
		}
	}
	return n, nil
}

// Propose submits data and returns once it is committed AND applied locally
// (its raft index), or ctx ends, or leadership is lost (ErrProposalDropped).
// On a follower it fails at once with ErrProposalDropped unless
// Config.ForwardProposals is set (then it is forwarded to the leader).
// ErrProposalDropped means
// this node could not see it commit: raft refused it (no leader, leadership
// transfer in progress), or the leader changed before it was applied here —
// in that last case it may still be applied later, so proposals should be
// safe to retry (decisions are re-derived from the applied state).
func (n *Node) Propose(ctx context.Context, data []byte) (uint64, error) {
	id := proposalID{node: n.id, seq: n.seq.Add(1)}
	p := newProposal(id, &pb.Entry{Type: pb.EntryNormal.Enum(), Data: encodeEnvelope(id, data)})
	return n.propose(ctx, p)
}

func (n *Node) propose(ctx context.Context, p *proposal) (uint64, error) {
	select {
	case n.propc <- p:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-n.donec:
		return 0, n.stoppedErr()
	}
	select {
	case r := <-p.done:
		return r.index, r.err
	case <-ctx.Done():
		n.tryDo(func() { n.pending.forget(p.id) })
		return 0, ctx.Err()
	}
}

// do runs fn on the Ready loop and waits for it.
func (n *Node) do(ctx context.Context, fn func()) error {
	done := make(chan struct{})
	select {
	case n.opc <- func() { fn(); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.donec:
		return n.stoppedErr()
	}
	select {
	case <-done:
		return nil
	case <-n.donec:
		return n.stoppedErr()
	}
}

// tryDo runs fn on the Ready loop if the loop takes it at once.
func (n *Node) tryDo(fn func()) {
	select {
	case n.opc <- fn:
	default:
	}
}

// Tick advances raft's clock by one tick and waits until the loop has handled
// it and the Ready it produced. With Config.ManualTick it is the only clock.
func (n *Node) Tick() {
	ack := make(chan struct{})
	select {
	case n.tickc <- ack:
	case <-n.donec:
		return
	}
	select {
	case <-ack:
	case <-n.donec:
	}
}

// Campaign makes this node start an election now (tests; operators normally
// let the election timeout do it). raft ignores it while the node has conf
// changes committed but not yet applied, e.g. right after bootstrap.
func (n *Node) Campaign(ctx context.Context) error {
	var err error
	if derr := n.do(ctx, func() { err = n.rn.Campaign() }); derr != nil {
		return derr
	}
	return err
}

// receive is the inbound handler: it checks a frame and hands its messages to
// the loop, waiting until the loop takes them (back-pressure on the stream).
func (n *Node) receive(ctx context.Context, f *raftFrame, done func()) error {
	if drop := n.cfg.DropIncoming; drop != nil && drop(f.From) {
		if done != nil {
			done()
		}
		return nil
	}
	msgs, err := decodeFrameMessages(f, n.id)
	if err != nil {
		n.lg.Warn("raftnode: rejecting frame", "from", f.From, "err", err)
		return err
	}
	select {
	case n.recvc <- inbound{msgs: msgs, done: done}:
		return nil
	case <-n.stopc:
		return ErrStopped
	case <-n.donec:
		return n.stoppedErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reportFromPeer passes a peer goroutine's report to the loop.
func (n *Node) reportFromPeer(r peerReport) {
	select {
	case n.reportc <- r:
	case <-n.stopc:
	case <-n.donec:
	}
}

// SetPeerAddr tells the transport where a peer lives.
func (n *Node) SetPeerAddr(id uint64, addr string) { n.peers.setAddr(id, addr) }

// Done is closed when the Ready loop has stopped (Close, or a fatal error).
func (n *Node) Done() <-chan struct{} { return n.donec }

// Err returns the fatal error that stopped the loop, or nil.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.err
}

func (n *Node) stoppedErr() error {
	if err := n.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrStopped, err)
	}
	return ErrStopped
}

// Close stops the Ready loop, closes peer streams and storage.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		close(n.stopc)
		<-n.donec
		n.peers.close()
		n.closeErr = n.st.close()
		n.lg.Info("raftnode: stopped")
	})
	return n.closeErr
}
