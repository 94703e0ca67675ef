package raftnode

import (
	"context"
	"errors"
	"testing"
	"time"

	"paymentlog/quic"
)

// TestQUICStreamSurvivesPeerRestart: a peer restarts on the same address
// while we hold a stream to its old incarnation. The next frame we send must
// reach the new one. It used to fail on the dead stream and be dropped; when
// it carried a vote, the election waited out another timeout (the tail of
// controller failover: p99 0.7–0.9 s before, 0.43–0.47 s after, in
// TestMeasureFailover of node/controller).
func TestQUICStreamSurvivesPeerRestart(t *testing.T) {
	ctx := context.Background()
	lg := failureLogger(t)
	listen := func(addr string, got chan<- uint64) (*quic.Endpoint, chan error) {
		ep, err := quic.New(ctx, quic.Config{Addr: addr, Logger: lg})
		if err != nil {
			t.Fatalf("endpoint on %s: %v", addr, err)
		}
		if got != nil {
			(&quicNetwork{ep: ep, lg: lg}).Listen(func(_ context.Context, f *raftFrame, done func()) error {
				got <- f.From
				if done != nil {
					done()
				}
				return nil
			})
		}
		served := make(chan error, 1)
		go func() { served <- ep.Serve(ctx) }()
		return ep, served
	}
	stop := func(ep *quic.Endpoint, served chan error) {
		_ = ep.Close()
		if err := <-served; !errors.Is(err, quic.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	}
	expect := func(got <-chan uint64, from uint64) {
		t.Helper()
		select {
		case f := <-got:
			if f != from {
				t.Fatalf("frame from %d, want %d", f, from)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("frame %d not delivered", from)
		}
	}

	a, aServed := listen("127.0.0.1:0", nil)
	defer stop(a, aServed)
	got := make(chan uint64, 4)
	b, bServed := listen("127.0.0.1:0", got)
	addr := b.Addr()
	out, err := (&quicNetwork{ep: a, lg: lg}).Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := out.Send(ctx, &raftFrame{From: 1, To: 2}); err != nil {
		t.Fatal(err)
	}
	expect(got, 1)

	stop(b, bServed) // closes its connections: our stream is now dead
	// Once we know the connection is gone (here: its close frame arrived;
	// after a SIGKILL: the new incarnation's stateless reset answering our
	// keepalive). A frame sent before that goes down the dead connection and
	// is lost. (The stream alone ends earlier: a closing peer stops reading
	// its streams before it closes the connection.)
	deadline := time.Now().Add(10 * time.Second)
	for a.Stats().Conns > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the connection to the stopped peer did not end")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-out.(*quicStream).session().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the stream to the stopped peer did not end")
	}
	b, bServed = listen(addr, got)
	defer func() { stop(b, bServed) }()
	if err := out.Send(ctx, &raftFrame{From: 2, To: 2}); err != nil {
		t.Fatalf("first send after the peer restarted: %v", err)
	}
	expect(got, 2)
}
