package raftnode

import (
	"bytes"

	pb "go.etcd.io/raft/v3/raftpb"
)

// proposal is one Propose or conf change waiting to be applied.
type proposal struct {
	id    proposalID
	entry *pb.Entry          // what is proposed (type and enveloped data)
	done  chan proposeResult // buffered(1); receives exactly one result
	index uint64             // the log index it was appended at by this node as leader; 0 if unknown
}

type proposeResult struct {
	index uint64
	err   error
}

func newProposal(id proposalID, e *pb.Entry) *proposal {
	return &proposal{id: id, entry: e, done: make(chan proposeResult, 1)}
}

// pendingSet tracks proposals until they are applied or known to be lost.
// Owned by the Ready loop.
type pendingSet struct {
	byID    map[proposalID]*proposal
	byIndex map[uint64]*proposal
	// settled are finished proposals whose callers are told at flush, after
	// the loop has published the status that reflects them.
	settled []settledProposal
}

type settledProposal struct {
	p *proposal
	r proposeResult
}

func newPendingSet() pendingSet {
	return pendingSet{byID: map[proposalID]*proposal{}, byIndex: map[uint64]*proposal{}}
}

func (ps *pendingSet) add(p *proposal) { ps.byID[p.id] = p }

func (ps *pendingSet) len() int { return len(ps.byID) }

// located records that p was appended at index by this node as leader.
func (ps *pendingSet) located(p *proposal, index uint64) {
	if _, ok := ps.byID[p.id]; !ok {
		return
	}
	p.index = index
	ps.byIndex[index] = p
}

// locate matches the proposals that this node stepped as leader with the tail
// of the entries raft appended in response: raft appends a proposal's entries
// at the end of its log, in order, replacing a refused conf change with an
// empty normal entry.
func (ps *pendingSet) locate(props []*proposal, ents []*pb.Entry) {
	if len(props) == 0 || len(ents) < len(props) {
		return
	}
	tail := ents[len(ents)-len(props):]
	for i, p := range props {
		e := tail[i]
		same := e.GetType() == p.entry.GetType() && bytes.Equal(e.GetData(), p.entry.GetData())
		refused := e.GetType() == pb.EntryNormal && len(e.GetData()) == 0 && p.entry.GetType() != pb.EntryNormal
		if same || refused {
			ps.located(p, e.GetIndex())
		}
	}
}

// applied settles the proposals concerned by the entry at index carrying id
// (ok is false for entries without a proposal id).
func (ps *pendingSet) applied(index uint64, id proposalID, ok bool) {
	if p := ps.byIndex[index]; p != nil {
		delete(ps.byIndex, index)
		if !ok || p.id != id {
			ps.finish(p, proposeResult{err: ErrProposalDropped})
		}
	}
	if !ok {
		return
	}
	if p := ps.byID[id]; p != nil {
		ps.finish(p, proposeResult{index: index})
	}
}

// finish forgets p; its caller gets r at the next flush.
func (ps *pendingSet) finish(p *proposal, r proposeResult) {
	delete(ps.byID, p.id)
	if p.index != 0 && ps.byIndex[p.index] == p {
		delete(ps.byIndex, p.index)
	}
	ps.settled = append(ps.settled, settledProposal{p, r})
}

// flush answers the callers of settled proposals.
func (ps *pendingSet) flush() {
	for i, s := range ps.settled {
		s.p.done <- s.r
		ps.settled[i] = settledProposal{}
	}
	ps.settled = ps.settled[:0]
}

// fail finishes every pending proposal with err.
func (ps *pendingSet) fail(err error) {
	for _, p := range ps.byID {
		ps.finish(p, proposeResult{err: err})
	}
}

// forget drops p without answering (its caller gave up).
func (ps *pendingSet) forget(id proposalID) {
	if p := ps.byID[id]; p != nil {
		delete(ps.byID, id)
		if p.index != 0 && ps.byIndex[p.index] == p {
			delete(ps.byIndex, p.index)
		}
	}
}
