package quic

import (
	"context"
	"sync"
	"testing"
	"time"

	qgo "github.com/quic-go/quic-go"
)

// probeLog records the liveness probes an endpoint ran (see peerConnected).
type probeLog struct {
	mu   sync.Mutex
	errs []error
}

func watchProbes(e *Endpoint) *probeLog {
	l := &probeLog{}
	e.pool.probeHook = func(_ string, err error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.errs = append(l.errs, err)
	}
	return l
}

func (l *probeLog) results() (ok, failed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, err := range l.errs {
		if err == nil {
			ok++
		} else {
			failed++
		}
	}
	return ok, failed
}

// pooledConn is e's pooled connection to addr once dialed, else nil.
func pooledConn(e *Endpoint, addr string) *qgo.Conn {
	e.pool.mu.Lock()
	defer e.pool.mu.Unlock()
	ent := e.pool.mu.conns[addr]
	if ent == nil {
		return nil
	}
	select {
	case <-ent.ready:
		return ent.conn
	default:
		return nil
	}
}

// probing reports whether a liveness probe runs in e's pool.
func probing(e *Endpoint) bool {
	e.pool.mu.Lock()
	defer e.pool.mu.Unlock()
	for _, ent := range e.pool.mu.conns {
		if ent.probe != nil {
			return true
		}
	}
	return false
}

func shutdownAtEnd(t *testing.T, e *Endpoint, done chan error) {
	t.Cleanup(func() {
		e.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("Serve did not return after Close")
		}
	})
}

// Node A holds a pooled connection to node B; B is killed and restarts on
// the same address, then dials A (as a restarted raft node does). A's next
// request to B must reach the new process: without the probe it went into
// the dead connection and came back as a stateless reset (a lost raft frame).
func TestRestartedPeerDialingUsReplacesPooledConnection(t *testing.T) {
	a, doneA := startServer(t, "127.0.0.1:0", Config{IdleTimeout: 30 * time.Second})
	shutdownAtEnd(t, a, doneA)
	probes := watchProbes(a)
	b1, doneB1 := startServer(t, "127.0.0.1:0", Config{})
	bAddr := b1.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Call(ctx, bAddr, typeEcho, echoMsg{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	old := pooledConn(a, bAddr)
	if old == nil {
		t.Fatal("no pooled connection to B")
	}

	kill(b1)
	<-doneB1
	b2, doneB2 := startServer(t, bAddr, Config{})
	shutdownAtEnd(t, b2, doneB2)
	if err := b2.Call(ctx, a.Addr(), typeEcho, echoMsg{N: 2}, nil); err != nil {
		t.Fatalf("restarted B calling A: %v", err)
	}

	// The very next request from A to B, at once: no retry, no waiting.
	payload := make([]byte, 200) // big enough to draw a stateless reset
	var got echoMsg
	cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
	defer ccancel()
	if err := a.Call(cctx, bAddr, typeEcho, echoMsg{N: 3, Data: payload}, &got); err != nil {
		t.Fatalf("A's first request to the restarted B: %v", err)
	}
	if got.N != 3 {
		t.Fatalf("echo N = %d, want 3", got.N)
	}
	if now := pooledConn(a, bAddr); now == old {
		t.Fatal("A still pools the connection to the dead process")
	}
	if old.Context().Err() == nil {
		t.Fatal("the connection to the dead process is still open")
	}
	// Normally the probe finds the stale connection; on a loaded machine
	// quic-go may have seen its stateless reset first (a keep-alive the
	// new process answered) and closed it before any probe was needed.
	if ok, failed := probes.results(); failed > 1 || ok != 0 {
		t.Fatalf("probes: %d answered, %d failed; want at most the stale connection's probe, failed", ok, failed)
	}
}

// Two live nodes dialing each other at once, over and over: each accepted
// connection probes the other direction's pooled connection, and every
// probe must be answered. No connection is torn down, so there is no redial
// that would in turn tear down the other side's (a loop).
func TestPeersDialingEachOtherKeepTheirConnections(t *testing.T) {
	a, doneA := startServer(t, "127.0.0.1:0", Config{})
	shutdownAtEnd(t, a, doneA)
	b, doneB := startServer(t, "127.0.0.1:0", Config{})
	shutdownAtEnd(t, b, doneB)
	probesA, probesB := watchProbes(a), watchProbes(b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	callBoth := func(n int64) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for _, c := range []struct {
			from *Endpoint
			to   string
		}{{a, b.Addr()}, {b, a.Addr()}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.from.Call(ctx, c.to, typeEcho, echoMsg{N: n}, nil); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("call %d: %v", n, err)
		}
	}
	// A dials B, then B dials A: A's accept probes its older A->B
	// connection, which must pass. Every accept (and so every probe it
	// starts) happens before the call that caused it returns.
	if err := a.Call(ctx, b.Addr(), typeEcho, echoMsg{N: 0}, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Call(ctx, a.Addr(), typeEcho, echoMsg{N: 0}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "probes to finish", func() bool { return !probing(a) && !probing(b) })
	if ok, failed := probesA.results(); ok != 1 || failed != 0 {
		t.Fatalf("A's probes: %d answered, %d failed; want one answered", ok, failed)
	}
	ab, ba := pooledConn(a, b.Addr()), pooledConn(b, a.Addr())
	if ab == nil || ba == nil {
		t.Fatalf("pooled connections after the first calls: A->B %v, B->A %v", ab, ba)
	}
	for i := int64(1); i <= 20; i++ {
		callBoth(i)
	}
	waitFor(t, 10*time.Second, "probes to finish", func() bool { return !probing(a) && !probing(b) })
	if pooledConn(a, b.Addr()) != ab || pooledConn(b, a.Addr()) != ba {
		t.Fatal("a pooled connection was replaced between two live nodes")
	}
	if ab.Context().Err() != nil || ba.Context().Err() != nil {
		t.Fatal("a connection between two live nodes was closed")
	}
	okA, failedA := probesA.results()
	okB, failedB := probesB.results()
	if failedA+failedB != 0 {
		t.Fatalf("probes failed between live nodes: A %d, B %d", failedA, failedB)
	}
	t.Logf("probes answered: A %d, B %d", okA, okB)
	for _, e := range []*Endpoint{a, b} {
		e.mu.Lock()
		n := len(e.mu.conns)
		e.mu.Unlock()
		if n != 1 {
			t.Fatalf("%s has %d accepted connections, want 1 (a redial happened)", e.Addr(), n)
		}
	}
}

// A live connection answers the probe.
func TestPingLiveConnection(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	ctx := context.Background()
	conn, err := cli.pool.get(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.ping(conn, 5*time.Second); err != nil {
		t.Fatalf("ping: %v", err)
	}
	// The connection still serves calls afterwards.
	if err := cli.Call(ctx, srv.Addr(), typeEcho, echoMsg{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
}
