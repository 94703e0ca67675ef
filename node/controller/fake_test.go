package controller

import (
	"context"
	"slices"
	"sync"
	"time"

	"paymentlog/node/metadata"
	"paymentlog/raftnode"
)

// fakeRaft commits every proposal at once into the store while it "leads".
type fakeRaft struct {
	store   *metadata.Store
	leaderc chan uint64
	mu      struct {
		sync.Mutex
		index      uint64
		status     raftnode.Status
		proposeErr error
		learners   map[uint64]string
		addrs      map[uint64]string
		proposals  int
		statusReqs int      // Status calls, to tell that checks have run
		committed  []string // formatted records, for scripts
		// unapplied are entries committed (by other controllers) that this
		// node's store has not applied yet; they are applied before the
		// next proposal's entry, as raft applies in index order.
		unapplied [][]byte
		// onPropose, when set, runs at the start of every Propose
		// (outside the lock): tests hold a proposal there.
		onPropose func()
	}
}

func newFakeRaft(store *metadata.Store, id uint64, voters ...uint64) *fakeRaft {
	f := &fakeRaft{store: store, leaderc: make(chan uint64, 1)}
	f.mu.status = raftnode.Status{ID: id, Voters: voters}
	f.mu.learners = map[uint64]string{}
	f.mu.addrs = map[uint64]string{}
	return f
}

func (f *fakeRaft) Propose(ctx context.Context, data []byte) (uint64, error) {
	f.mu.Lock()
	hook := f.mu.onPropose
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.proposeErr != nil {
		return 0, f.mu.proposeErr
	}
	if !f.mu.status.IsLeader {
		return 0, raftnode.ErrNotLeader
	}
	f.applyLateLocked()
	f.mu.index++
	f.mu.proposals++
	recs, err := metadata.DecodeEntry(data)
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		f.mu.committed = append(f.mu.committed, metadata.FormatRecord(r))
	}
	f.store.Apply(f.mu.index, data)
	return f.mu.index, nil
}

func (f *fakeRaft) Status() raftnode.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.statusReqs++
	s := f.mu.status
	s.Learners = nil
	for id := range f.mu.learners {
		s.Learners = append(s.Learners, id)
	}
	slices.Sort(s.Learners)
	return s
}

func (f *fakeRaft) LeaderChanges() <-chan uint64 { return f.leaderc }

func (f *fakeRaft) AddLearner(ctx context.Context, id uint64, addr string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.mu.status.IsLeader {
		return raftnode.ErrNotLeader
	}
	f.mu.learners[id] = addr
	return nil
}

func (f *fakeRaft) RemoveLearner(ctx context.Context, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.mu.status.IsLeader {
		return raftnode.ErrNotLeader
	}
	delete(f.mu.learners, id)
	return nil
}

func (f *fakeRaft) SetPeerAddr(id uint64, addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.addrs[id] = addr
}

// setLeader makes leader (0 = none) lead in term.
func (f *fakeRaft) setLeader(leader, term uint64) {
	f.mu.Lock()
	f.mu.status.Leader = leader
	f.mu.status.Term = term
	f.mu.status.IsLeader = leader == f.mu.status.ID
	f.mu.Unlock()
	select {
	case f.leaderc <- leader:
	default:
	}
}

// takeCommitted returns the records committed since the last call.
func (f *fakeRaft) takeCommitted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.mu.committed
	f.mu.committed = nil
	return out
}

func (f *fakeRaft) setProposeErr(err error) {
	f.mu.Lock()
	f.mu.proposeErr = err
	f.mu.Unlock()
}

func (f *fakeRaft) learners() map[uint64]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[uint64]string{}
	for k, v := range f.mu.learners {
		out[k] = v
	}
	return out
}

// fakeClock is a manually advanced clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// commitForeign commits data as if another node's controller had proposed it
// (this node's fake raft need not lead).
func (f *fakeRaft) commitForeign(data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.index++
	f.store.Apply(f.mu.index, data)
}

func (f *fakeRaft) statusCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.statusReqs
}

// commitForeignLate commits data as another node's controller's entry that
// this node's store applies only later: just before the next proposal's
// entry (a new leader's first entry commits everything before it).
func (f *fakeRaft) commitForeignLate(data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.unapplied = append(f.mu.unapplied, data)
}

func (f *fakeRaft) applyLateLocked() {
	for _, data := range f.mu.unapplied {
		f.mu.index++
		f.store.Apply(f.mu.index, data)
	}
	f.mu.unapplied = nil
}

// setOnPropose sets (nil: clears) the hook run at the start of Propose.
func (f *fakeRaft) setOnPropose(hook func()) {
	f.mu.Lock()
	f.mu.onPropose = hook
	f.mu.Unlock()
}
