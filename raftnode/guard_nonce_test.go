package raftnode

import (
	"context"
	"errors"
	"testing"
)

// The rejoin guard's marker carries a nonce that names the guarded storage:
// kept by restarts (a crash included), new after a wipe, absent in an older
// build's empty marker. LiftGuard lifts the guard only for the node's own
// nonce.
func TestRejoinGuardNonce(t *testing.T) {
	storageKinds(t, func(t *testing.T, seg bool) {
		guard := map[uint64]bool{}
		c := newTestCluster(t, 3, guardFor(guard))
		c.segment = seg
		c.startVoters()
		lead := c.leader()
		c.waitApplied(c.propose(lead, "x"))
		b := c.others(lead)[0]
		wipe := func() {
			c.kill(b)
			c.disks[b], c.fss[b] = nil, nil
			c.start(b)
		}
		ctx := context.Background()

		guard[b] = true
		wipe()
		n1 := c.nodes[b].Status().GuardNonce
		if !c.nodes[b].Status().VoteGuarded || len(n1) != 2*guardNonceLen || parseGuardNonce([]byte(n1)) != n1 {
			t.Fatalf("wiped node %d: status %+v, want guarded with a %d-byte hex nonce", b, c.nodes[b].Status(), guardNonceLen)
		}
		c.crash(b)
		c.start(b)
		if got := c.nodes[b].Status().GuardNonce; got != n1 {
			t.Fatalf("nonce after a restart = %q, want the marker's %q", got, n1)
		}
		for _, bad := range []string{"", n1[:len(n1)-1] + "x", newGuardNonce()} {
			if err := c.nodes[b].LiftGuard(ctx, bad); !errors.Is(err, ErrGuardNonceMismatch) {
				t.Fatalf("LiftGuard(%q) = %v, want ErrGuardNonceMismatch", bad, err)
			}
		}
		c.tick()
		if !c.nodes[b].Status().VoteGuarded {
			t.Fatalf("node %d lifted its guard for a nonce not its own", b)
		}
		if err := c.nodes[b].LiftGuard(ctx, n1); err != nil {
			t.Fatal(err)
		}
		// Lifted in the same loop pass, with no target: no tick needed.
		if err := c.nodes[b].do(ctx, func() {}); err != nil {
			t.Fatal(err)
		}
		if st := c.nodes[b].Status(); st.VoteGuarded || st.GuardNonce != "" {
			t.Fatalf("after LiftGuard with its nonce: %+v", st)
		}
		if err := c.nodes[b].LiftGuard(ctx, n1); err != nil {
			t.Fatalf("LiftGuard on a node no longer guarded: %v", err)
		}

		wipe()
		if n2 := c.nodes[b].Status().GuardNonce; n2 == n1 || len(n2) != 2*guardNonceLen {
			t.Fatalf("nonce after a second wipe = %q (first %q), want a new one", n2, n1)
		}

		// An older build's marker is empty: guarded, with no nonce to match.
		c.kill(b)
		var files fileStore = newDirFiles(c.fss[b], "/data/__cluster_metadata-0")
		if !seg {
			files = c.disks[b].files
		}
		if err := files.WriteFile(rejoinGuardFile, nil); err != nil {
			t.Fatal(err)
		}
		c.start(b)
		if st := c.nodes[b].Status(); !st.VoteGuarded || st.GuardNonce != "" {
			t.Fatalf("with an empty marker: %+v, want guarded without a nonce", st)
		}
		if err := c.nodes[b].LiftGuard(ctx, ""); !errors.Is(err, ErrGuardNonceMismatch) {
			t.Fatalf("LiftGuard(\"\") with an empty marker = %v, want ErrGuardNonceMismatch", err)
		}
	})
}

func TestParseGuardNonce(t *testing.T) {
	good := newGuardNonce()
	for in, want := range map[string]string{
		"":                 "", // an older build's marker
		good:               good,
		good + "\n":        "",
		good[:30]:          "",
		"XY" + good[2:]:    "",
		"AB" + good[2:]:    "", // not as written (lowercase)
		good[:31] + "g":    "",
		"0123456789abcdef": "", // 8 bytes
	} {
		if got := parseGuardNonce([]byte(in)); got != want {
			t.Errorf("parseGuardNonce(%q) = %q, want %q", in, got, want)
		}
		if got := IsGuardNonce(in); got != (want != "") {
			t.Errorf("IsGuardNonce(%q) = %t", in, got)
		}
	}
}
