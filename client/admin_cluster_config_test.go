package client

import (
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// AlterClusterConfigs and AlterTopicConfigs return only once every node's
// broker has applied the change (DescribeCluster's BrokerOffset), not once
// its metadata image has: those configs take effect in the broker, which
// trails the image. So do CreateTopic and CreatePartitions: a leader's
// broker refuses a produce for a partition it has not taken yet. ACLs and
// quotas take effect from the image, so their calls do not wait for the
// broker.
func TestAdminChangesWaitForTheBrokers(t *testing.T) {
	fc := clienttest.New(3)
	fc.SetController(2)
	a := mustFakeClient(t, fc).Admin()
	ctx := testCtx(t)
	fc.CreateTopic("payments", 1)
	for _, alter := range []struct {
		what string
		call func() error
	}{
		{"AlterClusterConfigs", func() error {
			return a.AlterClusterConfigs(ctx, ConfigChange{Set: map[string]string{"log.cleaner.threads": "3"}})
		}},
		{"AlterTopicConfigs", func() error {
			return a.AlterTopicConfigs(ctx, "payments", ConfigChange{Set: map[string]string{"retention.ms": "60000"}})
		}},
		{"CreateTopic", func() error {
			_, err := a.CreateTopic(ctx, TopicSpec{Name: "refunds", Partitions: 3})
			return err
		}},
		{"CreatePartitions", func() error { return a.CreatePartitions(ctx, "payments", 4) }},
		// The answer to the first attempt is lost: the retry is refused
		// (the count is already 6) without an offset, and the call still
		// waits for the brokers.
		{"CreatePartitions retried", func() error {
			var lost atomic.Bool
			fc.SetIntercept(func(_ string, ty quic.FrameType, _ any) clienttest.Action {
				if ty == wire.TypeCreatePartitions && lost.CompareAndSwap(false, true) {
					return clienttest.Action{Kind: clienttest.DropResponse}
				}
				return clienttest.Action{}
			})
			defer fc.SetIntercept(nil)
			return a.CreatePartitions(ctx, "payments", 6)
		}},
	} {
		t.Run(alter.what, func(t *testing.T) { waitsForTheBroker(t, fc, a, alter.what, alter.call) })
	}
}

func waitsForTheBroker(t *testing.T, fc *clienttest.Cluster, a *Admin, what string, call func() error) {
	ctx := testCtx(t)
	fc.HoldBroker(3, true)
	polled := fc.Calls(wire.TypeDescribeCluster)
	done := make(chan error, 1)
	go func() { done <- call() }()
	// Three rounds of polls of the three nodes, node 3's image there and
	// its broker not.
	waitFor(t, "three rounds of polls", func() bool { return fc.Calls(wire.TypeDescribeCluster) >= polled+9 || len(done) > 0 })
	select {
	case err := <-done:
		t.Fatalf("%s returned (%v) while node 3's broker had not applied the change", what, err)
	default:
	}
	// An ACL is in force once it is in the image: no wait for the broker.
	if _, err := a.CreateACLs(ctx, []wire.ACLBinding{topicACL("User:billing", wire.OpRead, wire.PermissionAllow, "payments")}); err != nil {
		t.Fatal(err)
	}
	fc.HoldBroker(3, false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return once node 3's broker applied the change", what)
	}
}
