package node_test

import (
	"testing"
	"time"

	"paymentlog/node"
)

// A broker that dies without a goodbye (its socket closed, as SIGKILL
// leaves it) is fenced once the active controller's probe of its port is
// refused, long before its session (30 s here) runs out, and the
// controller counts the fence under cause="port_closed".
func TestDeadBrokerIsFencedByItsClosedPort(t *testing.T) {
	tc := mustStartClusterWith(t, 3, func(c *node.Config) {
		c.SessionTimeout = 30 * time.Second
		c.MetricsAddr = "127.0.0.1:0"
	})
	a, victim, took := killUntilFenced(t, tc)
	t.Logf("broker %d fenced %v after it was killed (session timeout 30s)", victim, took)
	e := scrape(t, tc.node(a).MetricsAddr())
	if v := value(t, e, "paymentlog_controller_broker_fences_total", "cause", "port_closed"); v != 1 {
		t.Fatalf("fences for a closed port = %v; want 1", v)
	}
	if v := value(t, e, "paymentlog_controller_broker_fences_total", "cause", "session"); v != 0 {
		t.Fatalf("fences for a session = %v; want 0", v)
	}
	if v := value(t, e, "paymentlog_controller_port_probes_total"); v < 1 {
		t.Fatalf("probes = %v; want at least 1", v)
	}
}

// Between hosts a probe often goes unanswered: the dead host sends each
// peer a few ICMP errors, then one a second, and the peer's own traffic to
// the dead port draws them first. The controller's node reads those errors
// from its QUIC socket (here its raft heartbeats to the dead voter draw
// them) and fences the dead broker on them, with the probes answering
// nothing.
func TestDeadBrokerIsFencedByTheErrorsItsTrafficDrew(t *testing.T) {
	tc := mustStartClusterWith(t, 3, func(c *node.Config) {
		c.SessionTimeout = 30 * time.Second
		c.MetricsAddr = "127.0.0.1:0"
		node.SetProbesUnanswered(c)
	})
	a, victim, took := killUntilFenced(t, tc)
	t.Logf("broker %d fenced %v after it was killed, its probes unanswered (session timeout 30s)", victim, took)
	e := scrape(t, tc.node(a).MetricsAddr())
	if v := value(t, e, "paymentlog_controller_broker_fences_total", "cause", "port_closed"); v != 1 {
		t.Fatalf("fences for a closed port = %v; want 1", v)
	}
	if v := value(t, e, "paymentlog_quic_ports_closed_total"); v < 1 {
		t.Fatalf("ports found closed by the node's traffic = %v; want at least 1", v)
	}
	if v := value(t, e, "paymentlog_controller_port_closed_fences_total", "found_by", "traffic"); v != 1 {
		t.Fatalf("port_closed fences found by the node's traffic = %v; want 1", v)
	}
}

// killUntilFenced kills a node of tc other than the active controller a
// and waits until a has fenced it; it returns a, the victim, and how long
// the fence took.
func killUntilFenced(t *testing.T, tc *testCluster) (a, victim int32, took time.Duration) {
	t.Helper()
	tc.waitAlive(3)
	a = tc.activeController()
	victim = 1
	for victim == a {
		victim++
	}
	killed := time.Now()
	tc.kill(victim)
	waitFor(t, "the dead broker fenced", 15*time.Second, func() bool {
		b, _ := tc.node(a).Store().Image().Broker(victim)
		return b.Fenced
	})
	return a, victim, time.Since(killed).Round(time.Millisecond)
}
