package chaos

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"paymentlog/bench/localcluster"
)

// TestHealNetworkUndoesLinkFaults: HealNetwork (called by HealAll, and by
// Run when the run is cancelled) removes every link fault and reconnects
// every isolated node: no clsact qdisc is left on any node's eth0.
func TestHealNetworkUndoesLinkFaults(t *testing.T) {
	if err := localcluster.TCAvailable(); err != nil {
		t.Skipf("link faults unusable here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, err := localcluster.NewNetNS(ctx)
	if err != nil {
		t.Skipf("network namespaces unusable here: %v", err)
	}
	defer ns.Close()
	var opts localcluster.Options
	ns.Apply(&opts)
	for _, id := range []int32{1, 2, 3} {
		if err := opts.BeforeStart(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := ns.OneWay(ctx, 1, localcluster.Outbound); err != nil {
		t.Fatal(err)
	}
	if err := ns.Cut(ctx, 2, 3); err != nil {
		t.Fatal(err)
	}
	if err := ns.Degrade(ctx, 3, localcluster.LinkQuality{Loss: 0.2, RateBits: 4_000_000, Latency: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := ns.Isolate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	hasClsact := func(id int32) bool {
		out, err := exec.CommandContext(ctx, "tc", "-n", ns.Namespace(id), "qdisc", "show", "dev", "eth0").CombinedOutput()
		if err != nil {
			t.Fatalf("tc qdisc show: %v: %s", err, out)
		}
		return strings.Contains(string(out), "clsact")
	}
	for _, id := range []int32{1, 2, 3} {
		if !hasClsact(id) {
			t.Fatalf("node %d: no fault in place", id)
		}
	}
	nem := &Nemesis{NS: ns}
	if err := nem.HealNetwork(context.WithoutCancel(ctx)); err != nil {
		t.Fatal(err)
	}
	if got := ns.Impaired(); len(got) != 0 {
		t.Fatalf("still impaired: %v", got)
	}
	if got := ns.Isolated(); len(got) != 0 {
		t.Fatalf("still isolated: %v", got)
	}
	for _, id := range []int32{1, 2, 3} {
		if hasClsact(id) {
			t.Fatalf("node %d: clsact left after HealNetwork", id)
		}
	}
	if err := (&Nemesis{}).HealNetwork(ctx); err != nil { // no namespaces: nothing to do
		t.Fatal(err)
	}
}
