//go:build linux

package quic

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	qgo "github.com/quic-go/quic-go"
)

// TestCallToDeadPeerFailsOnItsClosedPort: a call waiting for a response from
// a peer whose process dies fails once the nudge's probe finds the peer's
// port closed, not at the idle timeout or the call's deadline; the pool
// drops the connection. Without it the call failed only at the idle
// timeout (the server's 5 s, the smaller of the two sides').
func TestCallToDeadPeerFailsOnItsClosedPort(t *testing.T) {
	srv, done := startServer(t, "127.0.0.1:0", Config{})
	addr := srv.Addr()
	cli := mustClient(t, Config{IdleTimeout: 30 * time.Second})
	if _, ok := cli.tr.Conn.(*groConn); !ok {
		t.Skip("no raw sender and receiver on this kernel: ICMP errors are not read")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := cli.Call(ctx, addr, typeEcho, echoMsg{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- cli.Call(ctx, addr, typeSlow, 20*time.Second, nil) }()
	// The slow call is waiting (its handler sleeps): the process dies.
	waitFor(t, 5*time.Second, "the slow call to be waiting", func() bool {
		cli.pool.mu.Lock()
		defer cli.pool.mu.Unlock()
		ent := cli.pool.mu.conns[addr]
		return ent != nil && ent.waiting.Load() > 0
	})
	start := time.Now()
	kill(srv)
	<-done
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		t.Fatalf("the call to the dead peer was still waiting %s after it died", time.Since(start).Round(time.Millisecond))
	}
	took := time.Since(start)
	var ae *qgo.ApplicationError
	if !errors.As(err, &ae) || ae.ErrorCode != ConnCodePeerGone || !strings.Contains(err.Error(), addr) {
		t.Fatalf("call to the dead peer: %v (after %s), want a connection closed as peer gone naming %s", err, took, addr)
	}
	if took > 2*time.Second {
		t.Fatalf("the call failed %s after the peer died, want within a few nudges", took)
	}
	waitFor(t, 5*time.Second, "pool to drop the dead connection", func() bool { return poolSize(cli) == 0 })
	if st := cli.Stats(); st.PeersGone != 1 {
		t.Fatalf("PeersGone %d, want 1", st.PeersGone)
	}
	t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)
}

// TestDialToClosedPortFailsAtOnce: a dial whose datagrams find no process
// on the port fails with ErrPortClosed as soon as the refusal is read, not
// at the handshake timeout (5 s here; without it the dial waited it out).
func TestDialToClosedPortFailsAtOnce(t *testing.T) {
	cli := mustClient(t, Config{HandshakeTimeout: 5 * time.Second})
	if _, ok := cli.tr.Conn.(*groConn); !ok {
		t.Skip("no raw sender and receiver on this kernel: ICMP errors are not read")
	}
	srv, done := startServer(t, "127.0.0.1:0", Config{})
	addr := srv.Addr()
	kill(srv) // its port is closed now
	<-done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := cli.Call(ctx, addr, typeEcho, echoMsg{N: 1}, nil)
	took := time.Since(start)
	var oe *OpError
	if !errors.Is(err, ErrPortClosed) || !errors.As(err, &oe) || oe.Op != "dial" || oe.Addr != addr {
		t.Fatalf("call to a closed port: %v (after %s), want a dial of %s failed with ErrPortClosed", err, took, addr)
	}
	if took > time.Second {
		t.Fatalf("the dial failed %s after it began, want within a few polls", took)
	}
	if st := cli.Stats(); st.DialsRefused != 1 {
		t.Fatalf("DialsRefused %d, want 1", st.DialsRefused)
	}
	t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)
}
