package raftnode

import (
	"errors"
	"testing"

	"paymentlog/quic"
)

// TestCheckSender: under mutual TLS a raft frame's sender must be the node
// id in the peer's node certificate, including senders that only look like
// it once truncated to 32 bits; in dev mode anyone may send as anyone.
func TestCheckSender(t *testing.T) {
	node2 := quic.Peer{Name: "node2", Authenticated: true, Role: quic.RoleNode, NodeID: 2}
	for _, tc := range []struct {
		name string
		peer quic.Peer
		from uint64
		ok   bool
	}{
		{"node 2 as itself", node2, 2, true},
		{"node 2 as node 3", node2, 3, false},
		{"node 2 as 2^32+2", node2, 1<<32 + 2, false},
		{"node 2 as 2^63+2", node2, 1<<63 + 2, false},
		{"client as node 2", quic.Peer{Name: "client", Authenticated: true, Role: quic.RoleClient}, 2, false},
		{"dev mode", quic.Peer{}, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkSender(tc.peer, tc.from)
			if (err == nil) != tc.ok {
				t.Fatalf("checkSender = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, quic.ErrClusterAuthorizationFailed) {
				t.Fatalf("%v does not match quic.ErrClusterAuthorizationFailed", err)
			}
		})
	}
}
