package quic

import (
	"context"
	"errors"
	"net/netip"
	"time"
)

// A dial to a port with no process behind it (a node killed and not yet
// started again) draws ICMP port unreachable from its host, which quic-go
// ignores: the dial waited out the handshake timeout (2 s by default), and
// so did every call that needed a connection to that node. Where the
// endpoint reads ICMP errors (closedports.go), a dial whose datagrams find
// the port closed fails at once with ErrPortClosed instead.
//
// Only a refusal recorded after the dial started counts. One drawn by a
// datagram sent earlier, to a process that has since started again on the
// port, could still come in within a round trip of the restart and fail one
// dial; the caller's next one succeeds.

// ErrPortClosed is a dial refused by the peer's host: no process listens on
// the port (ICMP port unreachable). Read only on Linux.
var ErrPortClosed = errors.New("port closed: no process listens there (ICMP port unreachable)")

// dialPortPoll is how often a dial looks for its port found closed.
const dialPortPoll = 10 * time.Millisecond

// failOnClosedPort cancels ctx's dial with ErrPortClosed (as the cause) once
// a datagram to raddr sent after start is refused, until stop is called.
func (e *Endpoint) failOnClosedPort(cancel context.CancelCauseFunc, raddr netip.AddrPort, start time.Time) (stop func()) {
	if e.closed == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(dialPortPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if e.closed.since(raddr, start) {
					cancel(ErrPortClosed)
					return
				}
			}
		}
	}()
	return func() { close(done) }
}
