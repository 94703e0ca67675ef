// Package freeport picks ports for nodes on this machine (test nodes, the
// bench's local cluster) that are free when picked and that the sockets
// others open meanwhile cannot take: ports below Linux's default ephemeral
// range (32768-60999), from which the kernel draws the port of every
// socket bound to port 0 (each QUIC dial is one). A port picked by asking
// for port 0 and closing the socket could be handed to such a socket
// before the node binds it, and the node then fails with "address already
// in use". Run does not hand a port out twice in one process.
package freeport

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
)

const (
	low  = 20000 // the range searched: [low, low+span)
	span = 12000
)

// TB is what Run and UDPAddr need of a testing.TB (this package does not
// import testing: the bench binary uses Bind).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Bind calls bind with random ports of the range until one succeeds (100
// tries) and returns what it bound and the port.
func Bind(bind func(port int) (io.Closer, error)) (io.Closer, int, error) {
	var last error
	for range 100 {
		p := low + rand.IntN(span)
		c, err := bind(p)
		if err == nil {
			return c, p, nil
		}
		last = err
	}
	return nil, 0, fmt.Errorf("no free port in [%d, %d): %w", low, low+span, last)
}

var given struct {
	sync.Mutex
	ports map[int]bool
}

// Run returns the first of n consecutive UDP ports on 127.0.0.1 that were
// all free a moment ago and that this process has not handed out before.
func Run(tb TB, n int) int {
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
func UDPAddr(tb TB) string {
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
