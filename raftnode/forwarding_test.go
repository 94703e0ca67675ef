package raftnode

import (
	"context"
	"testing"
	"time"
)

// By default a follower's proposal is dropped, never forwarded: a controller
// that lost leadership (paused past its term) must not get a decision taken
// on a stale image committed through the new leader.
func TestFollowerProposalIsDroppedByDefault(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.ForwardProposals = false })
	c.startVoters()
	lead := c.leader()
	var follower uint64
	for id := range c.nodes {
		if id != lead {
			follower = id
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.nodes[follower].Propose(ctx, []byte("stale decision")); err == nil {
		t.Fatalf("a follower's proposal was committed")
	}
	if _, err := c.nodes[lead].Propose(ctx, []byte("leader decision")); err != nil {
		t.Fatalf("leader proposal: %v", err)
	}
	for _, v := range c.sms[lead].values() {
		if v == "stale decision" {
			t.Fatalf("the follower's proposal was applied")
		}
	}
}
