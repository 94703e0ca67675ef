// Package freeport picks UDP ports for test nodes on 127.0.0.1 that are
// free when picked and that the sockets other tests open meanwhile cannot
// take: ports below Linux's default ephemeral range (32768-60999), from
// which the kernel draws the port of every socket bound to port 0 (each
// QUIC dial is one). A port picked by asking for port 0 and closing the
// socket could be handed to such a socket before the node binds it, and
// the node then fails with "address already in use". Ports handed out
// once are not handed out again by this process.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
)

const (
	low  = 20000 // the range searched: [low, low+span)
	span = 12000
)

var given struct {
	sync.Mutex
	ports map[int]bool
}

// Run returns the first of n consecutive UDP ports on 127.0.0.1 that were
// all free a moment ago and that this process has not handed out before.
func Run(tb testing.TB, n int) int {
	tb.Helper()
	given.Lock()
	defer given.Unlock()
	if given.ports == nil {
		given.ports = map[int]bool{}
	}
	for range 100 {
		base := low + rand.IntN(span-n)
		if free(base, n) {
			for p := base; p < base+n; p++ {
				given.ports[p] = true
			}
			return base
		}
	}
	tb.Fatalf("freeport: no run of %d free UDP ports found in [%d, %d)", n, low, low+span)
	return 0
}

// UDPAddr returns "127.0.0.1:PORT" for one port as Run picks it.
func UDPAddr(tb testing.TB) string {
	tb.Helper()
	return fmt.Sprintf("127.0.0.1:%d", Run(tb, 1))
}

// free reports whether ports [base, base+n) are not handed out yet and can
// be bound now (each is closed again at once).
func free(base, n int) bool {
	var held []net.PacketConn
	defer func() {
		for _, pc := range held {
			pc.Close()
		}
	}()
	for p := base; p < base+n; p++ {
		if given.ports[p] {
			return false
		}
		pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return false
		}
		held = append(held, pc)
	}
	return true
}
