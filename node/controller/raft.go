package controller

import (
	"context"

	"paymentlog/raftnode"
)

// Raft is what the controller needs from the metadata raft node
// (*raftnode.Node implements it; tests use a fake).
type Raft interface {
	// Propose returns once data is committed and applied to the local Store.
	Propose(ctx context.Context, data []byte) (uint64, error)
	Status() raftnode.Status
	// LeaderChanges signals leadership changes (the controller also polls
	// Status on every check tick, so a missed signal only delays it).
	LeaderChanges() <-chan uint64
	AddLearner(ctx context.Context, id uint64, addr string) error
	RemoveLearner(ctx context.Context, id uint64) error
	SetPeerAddr(id uint64, addr string)
}

var _ Raft = (*raftnode.Node)(nil)
