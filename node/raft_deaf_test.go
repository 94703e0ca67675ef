package node_test

import (
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/node"
)

// A broker whose raft hears nothing of the metadata log while the rest of
// its traffic flows (its heartbeats and their answers, fetches) is fenced
// with cause no_metadata once its heartbeats have named no metadata leader
// for 1.5 session timeouts, long before anything else would notice; once it
// hears the log again it catches up and is unfenced. A voter's raft forgets
// the leader when it campaigns; a broker-only node's raft (a learner) never
// campaigns, and its heartbeats stop naming a leader it has not heard from
// for an election timeout (raftnode.Node.FollowedLeader).
func TestBrokerDeafToTheMetadataLogIsFenced(t *testing.T) {
	for _, learner := range []bool{false, true} {
		name := "voter"
		if learner {
			name = "learner"
		}
		t.Run(name, func(t *testing.T) {
			var deaf [5]atomic.Bool
			tc := mustStartClusterWith(t, 3, func(c *node.Config) {
				c.MetricsAddr = "127.0.0.1:0"
				node.SetRaftDeaf(c, deaf[c.ID].Load)
			})
			tc.waitAlive(3)
			a := tc.activeController()
			victim := int32(1)
			for victim == a {
				victim++
			}
			if learner {
				tc.start(4) // not in --controllers: a broker-only learner
				tc.waitAlive(4)
				victim = 4
			}
			fenced := func() bool {
				b, _ := tc.node(a).Store().Image().Broker(victim)
				return b.Fenced
			}
			deaf[victim].Store(true)
			deafAt := time.Now()
			waitFor(t, "the broker deaf to the metadata log fenced", 15*time.Second, fenced)
			t.Logf("broker %d fenced %v after its raft went deaf (session timeout %v)", victim, time.Since(deafAt).Round(time.Millisecond), node.DefaultConfig().SessionTimeout)
			e := scrape(t, tc.node(a).MetricsAddr())
			if v := value(t, e, "paymentlog_controller_broker_fences_total", "cause", "no_metadata"); v != 1 {
				t.Fatalf("fences for no metadata = %v; want 1", v)
			}
			for _, cause := range []string{"session", "deaf", "port_closed"} {
				if v := value(t, e, "paymentlog_controller_broker_fences_total", "cause", cause); v != 0 {
					t.Fatalf("fences for %s = %v; want 0", cause, v)
				}
			}
			deaf[victim].Store(false)
			waitFor(t, "the broker unfenced once it hears the log again", 15*time.Second, func() bool { return !fenced() })
		})
	}
}
