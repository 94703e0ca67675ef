package raftnode

import (
	"errors"
	"testing"
)

// Every voter crashes during its first Ready, after the bootstrap entries
// reached the log but before the hard state (term 1, commit n) did. The
// bootstrap entries are committed by construction (every voter writes the
// same ones, and no leader can exist in term 1); if recovery forgets it,
// no node has a configuration, none can campaign, and the cluster never forms.
func TestCrashDuringBootstrapStillForms(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	boom := errors.New("power cut")
	for id := range c.voters {
		c.disks[id] = &memDisk{log: newMemLog(), files: newMemFiles()}
		c.disks[id].files.fail = boom
	}
	for id := range c.voters {
		n := c.start(id)
		n.Tick() // the loop handles the bootstrap Ready after its first input
		<-n.Done()
		if !errors.Is(n.Err(), boom) {
			t.Fatalf("node %d: Err() = %v", id, n.Err())
		}
	}
	for id := range c.voters {
		// Power cut: Close cannot write the hard state either.
		_ = c.nodes[id].Close()
		delete(c.nodes, id)
		d := c.disks[id]
		c.disks[id] = &memDisk{log: d.log.crash(), files: d.files.clone()}
		c.disks[id].files.fail = nil
		if got := c.disks[id].log.End(); got != 4 {
			t.Fatalf("node %d: log end %d after the crash, want the 3 bootstrap entries", id, got)
		}
	}
	c.startVoters()
	lead := c.leader()
	c.propose(lead, "formed")
	c.waitApplied(c.nodes[lead].Status().Applied)
	c.checkSame([]string{"formed"})
}
