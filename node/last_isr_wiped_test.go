package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/node"
	"paymentlog/node/metadata"
)

// The two replicas other than the partition's leader stall (their
// heartbeats stop, as under heavy load) long enough to be fenced, which
// takes them out of the ISR: the ISR is the leader alone. The leader then
// dies, its whole data directory is wiped, and it restarts with the same
// id; the stalled replicas recover meanwhile. They hold every acknowledged
// record; the wiped node holds none. The partition must not be led by the
// wiped node on the strength of the ISR its previous process was the last
// member of: the others would truncate to its empty log, and new records
// would be acknowledged at the offsets of lost ones (seen once under load
// in TestControllerWithWipedDataDirRejoins: "offset 0 acknowledged for
// "payment-0" and payment-50").
func TestWipedLastISRMemberDoesNotLead(t *testing.T) {
	// The ELR elects a stalled replica once it is back; the wiped node's
	// registration (its storage new) names the ELR as the ISR when it comes
	// back first.
	t.Run("stalled replicas back first", func(t *testing.T) { wipedLastISRMember(t, false) })
	t.Run("wiped node back first", func(t *testing.T) { wipedLastISRMember(t, true) })
}

func wipedLastISRMember(t *testing.T, wipedFirst bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var held [4]atomic.Bool
	tc := mustStartClusterWith(t, 3, func(cfg *node.Config) {
		id := cfg.ID
		node.SetHeartbeatHold(cfg, func() bool { return held[id].Load() })
		// Only held heartbeats fence: a loaded machine's stalls (which
		// fence at the default 250 ms) would move the leadership or the
		// ISR this test sets up.
		cfg.SessionTimeout = time.Second
	})
	w := startPayments(ctx, t, tc)
	image := func() *metadata.Image {
		if a := tc.activeController(); a != 0 {
			return tc.node(a).Store().Image()
		}
		return nil
	}
	partition := func() metadata.PartitionState {
		if img := image(); img != nil {
			p, _ := img.Partition("payments", 0)
			return p
		}
		return metadata.PartitionState{}
	}
	live := func(ids ...int32) bool {
		img := image()
		if img == nil {
			return false
		}
		for _, id := range ids {
			if !img.Live(id) {
				return false
			}
		}
		return true
	}
	waitFor(t, "full ISR", 15*time.Second, func() bool { return len(partition().ISR) == 3 })
	b := partition().Leader
	var others []int32
	for id := int32(1); id <= 3; id++ {
		if id != b {
			others = append(others, id)
			held[id].Store(true)
		}
	}
	waitFor(t, fmt.Sprintf("the ISR down to the leader %d", b), 30*time.Second, func() bool {
		p := partition()
		return p.Leader == b && slices.Equal(p.ISR, []int32{b})
	})
	t.Logf("ISR down to the leader %d: %v", b, partition())

	tc.kill(b)
	if err := os.RemoveAll(filepath.Join(tc.dir, fmt.Sprintf("node%d", b))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the partition offline", 30*time.Second, func() bool { return partition().Leader == metadata.NoLeader })
	release := func() {
		for _, id := range others {
			held[id].Store(false)
		}
		waitFor(t, "the stalled nodes unfenced", 30*time.Second, func() bool { return live(others...) })
		t.Logf("stalled nodes unfenced: %v", partition())
	}
	if !wipedFirst {
		release()
	}
	tc.start(b)
	waitFor(t, "the wiped node unfenced", 30*time.Second, func() bool { return live(b) })
	t.Logf("wiped node %d unfenced: %v", b, partition())
	if wipedFirst {
		if p := partition(); p.Leader != metadata.NoLeader {
			t.Fatalf("the wiped node is back, the others still fenced, and the partition is led: %v", p)
		}
		release()
	}
	waitFor(t, "a partition leader", 30*time.Second, func() bool { return partition().Leader > 0 })
	t.Logf("led: %v", partition())
	w.produce(ctx, 50, 100)
	byOffset := w.acknowledged(ctx)
	readBackPayments(ctx, t, tc.client(ctx), byOffset)
}
