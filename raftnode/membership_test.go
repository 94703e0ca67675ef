package raftnode

import (
	"fmt"
	"testing"
)

// A controller moved to a new address and every node restarts with the new
// --controllers list. The list is the operator's current truth: it must win
// over the address the metadata log remembers (the bootstrap conf change's
// context, re-applied at restart) and the one in the snapshot. With node 2
// down, nodes 1 and 3 can only elect a leader if node 1 reaches node 3 at its
// new address.
func TestRestartWithMovedController(t *testing.T) {
	for _, snap := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%t", snap), func(t *testing.T) {
			const newAddr = "node3-moved"
			moved := false
			var c *testCluster
			c = newTestCluster(t, 3, func(cfg *Config) {
				if snap {
					cfg.SnapshotEvery, cfg.CatchUpEntries = 5, 2
				}
				if moved && cfg.ID == 3 {
					cfg.Addr, cfg.net = newAddr, c.nw.endpoint(newAddr)
				}
			})
			c.startVoters()
			lead := c.leader()
			var want []string
			for i := range 8 {
				want = append(want, fmt.Sprintf("m%d", i))
				c.propose(lead, want[len(want)-1])
			}
			c.waitApplied(c.nodes[lead].Status().Applied)
			if snap {
				if si := c.nodes[1].st.snapshotIndex(); si == 0 {
					t.Fatal("node 1 took no snapshot")
				}
			}
			for _, id := range []uint64{1, 2, 3} {
				c.kill(id)
			}
			moved = true
			c.voters[3] = newAddr
			c.start(1)
			c.start(3)
			lead = c.leader()
			want = append(want, "after-move")
			c.propose(lead, "after-move")
			c.waitApplied(c.nodes[lead].Status().Applied)
			c.checkSame(want)
			c.nw.unlisten(newAddr)
		})
	}
}
