package quic

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// typeCount answers echoMsg and counts the requests its endpoint processed.
const typeCount FrameType = 6

func countRequests(e *Endpoint) *atomic.Int64 {
	var n atomic.Int64
	e.Handle(typeCount, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		var m echoMsg
		if err := req.Decode(&m); err != nil {
			return 0, nil, err
		}
		n.Add(1)
		return typeCount, m, nil
	})
	return &n
}

// restartedPeer returns a client holding a pooled connection to a server
// that was then killed (no CONNECTION_CLOSE) and started again on the same
// address, and the new server's request counter. The client's idle timeout
// (30 s, but the server's 5 s is the one negotiated) is far beyond what the
// callers' contexts allow: a call that succeeds did not wait for it.
func restartedPeer(t *testing.T) (cli *Endpoint, addr string, served *atomic.Int64) {
	t.Helper()
	srv1, done1 := startServer(t, "127.0.0.1:0", Config{})
	countRequests(srv1)
	addr = srv1.Addr()
	cli = mustClient(t, Config{IdleTimeout: 30 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.Call(ctx, addr, typeCount, echoMsg{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	kill(srv1)
	<-done1
	srv2, done2 := startServer(t, addr, Config{})
	served = countRequests(srv2)
	shutdownAtEnd(t, srv2, done2)
	if pooledConn(cli, addr) == nil {
		t.Fatal("the client no longer pools its connection to the killed server")
	}
	return cli, addr, served
}

// The first Idempotent request after the peer restarted succeeds: the
// stateless reset it draws from the new process sends it again on a new
// connection, at once (the call's deadline is below the idle timeout).
func TestIdempotentCallToRestartedPeerSucceedsFirstTime(t *testing.T) {
	cli, addr, served := restartedPeer(t)
	old := pooledConn(cli, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var got echoMsg
	start := time.Now()
	if err := cli.Call(Idempotent(ctx), addr, typeCount, echoMsg{N: 2, Data: make([]byte, 100)}, &got); err != nil {
		t.Fatalf("first idempotent call to the restarted peer: %v", err)
	}
	t.Logf("first call after the restart answered in %s (reset, redial, resend)", time.Since(start))
	if got.N != 2 {
		t.Fatalf("answer N = %d, want 2", got.N)
	}
	if n := served.Load(); n != 1 {
		t.Fatalf("the new process processed %d requests, want 1", n)
	}
	if n := cli.Stats().RequestsResent; n != 1 {
		t.Fatalf("RequestsResent = %d, want 1", n)
	}
	if old.Context().Err() == nil {
		t.Fatal("the connection to the killed process is still open")
	}
	if now := pooledConn(cli, addr); now == nil || now == old {
		t.Fatal("the pool does not hold a new connection to the restarted peer")
	}
	// CallRaw takes the same path.
	f, err := cli.CallRaw(Idempotent(ctx), addr, typeCount, []byte{0x81, 0xa1, 0x6e, 0x03}) // {"n": 3}
	if err != nil || f.Type != typeCount {
		t.Fatalf("CallRaw after the resend: %v (type %d)", err, f.Type)
	}
}

// A request without the mark is not sent again: the old process may have
// processed it before it died (the transport cannot tell), so the caller
// gets the reset and decides. The new process never sees it.
func TestNonIdempotentCallToRestartedPeerIsNotResent(t *testing.T) {
	cli, addr, served := restartedPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	err := cli.Call(ctx, addr, typeCount, echoMsg{N: 2, Data: make([]byte, 100)}, nil)
	if err == nil || !isStatelessReset(err) {
		t.Fatalf("first plain call to the restarted peer: %v, want a stateless reset", err)
	}
	if n := served.Load(); n != 0 {
		t.Fatalf("the new process processed %d requests, want 0", n)
	}
	if n := cli.Stats().RequestsResent; n != 0 {
		t.Fatalf("RequestsResent = %d, want 0", n)
	}
	// The next call dials the new process.
	if err := cli.Call(ctx, addr, typeCount, echoMsg{N: 3}, nil); err != nil {
		t.Fatalf("second call: %v", err)
	}
}

// A failure that is not a restart is not resent, marked or not: a handler's
// error is an answer, and an idle timeout is a dead or unreachable peer.
func TestIdempotentCallNotResentOnOtherErrors(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	ctx := Idempotent(context.Background())
	var re *RemoteError
	if err := cli.Call(ctx, srv.Addr(), typeFail, echoMsg{}, nil); !errors.As(err, &re) {
		t.Fatalf("got %v, want the handler's error", err)
	}
	if n := cli.Stats().RequestsResent; n != 0 {
		t.Fatalf("RequestsResent = %d, want 0", n)
	}
}

// typeHang never answers on the first server; the restarted one answers it.
const typeHang FrameType = 7

// inFlightAtRestart starts a call of typeHang (marked per ctx) that the first
// server holds unanswered, kills that server while the call waits, starts a
// new one on the same address and returns the call's result. The call's
// deadline (4 s) is below the idle timeout (5 s): only a stateless reset
// ends it in time, and the waiting call sends nothing that could draw one.
func inFlightAtRestart(t *testing.T, mark func(context.Context) context.Context) (err error, served *atomic.Int64) {
	t.Helper()
	srv1, done1 := startServer(t, "127.0.0.1:0", Config{})
	held := make(chan struct{}, 1)
	srv1.Handle(typeHang, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		held <- struct{}{}
		<-ctx.Done()
		return 0, nil, ctx.Err()
	})
	addr := srv1.Addr()
	cli := mustClient(t, Config{IdleTimeout: 30 * time.Second, KeepAlivePeriod: 200 * time.Millisecond})
	// A path MTU probe is a large packet: one sent after the restart would
	// draw the reset by itself, whenever quic-go happens to send it.
	cli.dialCfg.DisablePathMTUDiscovery = true
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	if err := cli.Call(ctx, addr, typeEcho, echoMsg{N: 0}, nil); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- cli.Call(mark(ctx), addr, typeHang, echoMsg{N: 1}, nil) }()
	select {
	case <-held:
	case err := <-errc:
		t.Fatalf("call ended before the server held it: %v", err)
	}
	// Any packet the server sends from now on acknowledges the held
	// request: once one arrived nothing is left to retransmit (a
	// retransmission of the request would draw the reset by itself). The
	// server's keep-alive sends one within a second at the latest.
	conn := pooledConn(cli, addr)
	rcv := conn.ConnectionStats().PacketsReceived
	waitFor(t, 2*time.Second, "a packet from the server after it held the request", func() bool {
		return conn.ConnectionStats().PacketsReceived > rcv
	})
	kill(srv1)
	<-done1
	defer func(start time.Time) { t.Logf("the call ended %s after the restart", time.Since(start)) }(time.Now())
	var n atomic.Int64
	srv2, err := New(context.Background(), Config{Addr: addr, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv2.Handle(typeHang, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		n.Add(1)
		return typeHang, echoMsg{N: 2}, nil
	})
	done2 := make(chan error, 1)
	go func() { done2 <- srv2.Serve(context.Background()) }()
	shutdownAtEnd(t, srv2, done2)
	return <-errc, &n
}

// A call waiting on a peer that is killed and restarts meanwhile learns it
// within a nudge period (nudge.go: the connection is nudged with a ping
// large enough to draw the stateless reset), not at the idle timeout: an
// Idempotent one is answered by the new process...
func TestIdempotentCallInFlightAtRestartIsAnsweredByTheNewProcess(t *testing.T) {
	err, served := inFlightAtRestart(t, Idempotent)
	if err != nil {
		t.Fatalf("idempotent call in flight across the restart: %v", err)
	}
	if n := served.Load(); n != 1 {
		t.Fatalf("the new process processed %d requests, want 1", n)
	}
}

// ...and a plain one fails with the reset (its outcome is unknown: the old
// process held it), without reaching the new process.
func TestCallInFlightAtRestartFailsWithTheReset(t *testing.T) {
	err, served := inFlightAtRestart(t, func(ctx context.Context) context.Context { return ctx })
	if !isStatelessReset(err) {
		t.Fatalf("plain call in flight across the restart: %v, want a stateless reset", err)
	}
	if n := served.Load(); n != 0 {
		t.Fatalf("the new process processed %d requests, want 0", n)
	}
}
