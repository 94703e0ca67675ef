package freeport

import (
	"net"
	"testing"
)

// Ports come from below the ephemeral range, bind, and are never handed
// out twice by one process.
func TestRunHandsOutDistinctBindablePorts(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		base := Run(t, 3)
		for p := base; p < base+3; p++ {
			if p < low || p >= low+span || p >= 32768 {
				t.Fatalf("port %d outside [%d, %d)", p, low, low+span)
			}
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
		}
	}
	pc, err := net.ListenPacket("udp", UDPAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	pc.Close()
}
