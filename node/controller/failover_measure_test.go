package controller

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"paymentlog/node/metadata"
)

// TestMeasureFailover measures, with the production defaults of `node start`
// (raft tick 25ms, election after 10–20 ticks, heartbeat 50ms, session 250ms;
// see node/config.go, which this package cannot import) on real raft
// over QUIC on loopback, per trial:
//
//   - detection: from the kill of a broker (not the controller) to its
//     BrokerFenced record applied on a surviving node;
//   - failover: from the kill of the active controller's node to the first
//     committed metadata write (its ControllerMarker) of the successor;
//   - detection of the dead controller's own broker: from that kill to its
//     fence (failover + one session of grace).
//
// Set CONTROLLER_TRIALS=20 to run it (about 4 s per trial).
func TestMeasureFailover(t *testing.T) {
	trials, _ := strconv.Atoi(os.Getenv("CONTROLLER_TRIALS"))
	if trials <= 0 {
		t.Skip("set CONTROLLER_TRIALS=N to measure")
	}
	c := newRaftCluster(t, 3)
	c.tick, c.heartbeat, c.session = 25*time.Millisecond, 50*time.Millisecond, 250*time.Millisecond
	for id := uint64(1); id <= 3; id++ {
		c.start(id)
	}
	all := map[int32]bool{1: true, 2: true, 3: true}
	c.waitFor("brokers unfenced", func() bool { return c.converged(all) })
	var detect, failover, detectCtrl []time.Duration
	for i := range trials {
		ctrlID := c.activeID()
		victim := uint64(1 + (int(ctrlID)+i%2)%3) // a broker that is not the controller
		if victim == ctrlID {
			victim = 1 + victim%3
		}
		killed := time.Now()
		c.kill(victim)
		fenced := c.waitFor("victim fenced", func() bool { return c.fencedEverywhere(int32(victim)) })
		detect = append(detect, fenced.Sub(killed))
		c.start(victim)
		c.waitFor("victim back", func() bool { return c.converged(all) })

		ctrlID = c.activeID()
		before := c.node(victim).store.Image().ControllerTerm()
		killed = time.Now()
		c.kill(ctrlID)
		marker := c.waitFor("new controller marker", func() bool {
			img := c.node(victim).store.Image()
			return img.ControllerTerm() > before && img.ControllerID() != int32(ctrlID)
		})
		failover = append(failover, marker.Sub(killed))
		fenced = c.waitFor("dead controller's broker fenced", func() bool { return c.fencedEverywhere(int32(ctrlID)) })
		detectCtrl = append(detectCtrl, fenced.Sub(killed))
		c.start(ctrlID)
		c.waitFor("controller node back", func() bool { return c.converged(all) })
		t.Logf("trial %d: detection %v, failover %v, dead controller's broker fenced after %v",
			i, detect[i].Round(time.Millisecond), failover[i].Round(time.Millisecond), detectCtrl[i].Round(time.Millisecond))
	}
	t.Logf("detection (broker kill -> fence record), %d trials: %s", trials, percentiles(detect))
	t.Logf("controller failover (kill -> successor's first commit), %d trials: %s", trials, percentiles(failover))
	t.Logf("dead controller's broker (kill -> fence record), %d trials: %s", trials, percentiles(detectCtrl))
}

func (c *raftCluster) activeID() uint64 {
	var id uint64
	c.waitFor("an active controller", func() bool {
		for _, x := range c.ids() {
			if n := c.node(x); n != nil && n.ctrl != nil && n.ctrl.Active() {
				id = x
				return true
			}
		}
		return false
	})
	return id
}

func (c *raftCluster) fencedEverywhere(id int32) bool {
	for _, x := range c.ids() {
		img := c.node(x).store.Image()
		if b, ok := img.Broker(id); !ok || !b.Fenced {
			return false
		}
		ok := true
		img.EachPartition(func(p metadata.PartitionState) bool { ok = p.Leader != id; return ok })
		if !ok {
			return false
		}
	}
	return true
}

func percentiles(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))].Round(time.Millisecond)
	}
	return fmt.Sprintf("p50 %v  p99 %v  max %v  min %v", at(0.5), at(0.99), s[len(s)-1].Round(time.Millisecond), s[0].Round(time.Millisecond))
}
