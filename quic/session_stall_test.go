package quic

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	qgo "github.com/quic-go/quic-go"
)

// Session frame types of these tests.
const (
	typeStallSend   FrameType = 42 // the handler sends big frames until Send fails
	typeStallNoRead FrameType = 43 // the handler never reads
	typeSlowFeed    FrameType = 44 // the handler sends slowFeedFrames big frames, then closes
)

// bigRaw is a body far above a fresh stream's receive window (4 MiB).
func bigRaw(n int) Raw {
	b := make(Raw, n)
	b[0] = 0xc0
	return b
}

// openRawSession opens a session of type t by hand (quic-go directly), so
// the test decides when, and whether, the stream is read.
func openRawSession(t *testing.T, addr string, typ FrameType) (*qgo.Conn, *qgo.Stream) {
	t.Helper()
	conn, err := rawDial(t, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	str, err := conn.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := str.Write([]byte{0, 0, 0, 2, byte(typ), 0xc0}); err != nil {
		t.Fatal(err)
	}
	return conn, str
}

// A session peer that keeps its connection alive but stops reading stops
// the handler's Send (flow control). Send must give up once the peer
// accepts nothing for IdleTimeout, with the stream canceled both ways, so
// the handler ends and releases what the frame pinned (for a replica fetch
// session: the segment views of the answer).
func TestSessionSendToPeerThatStopsReadingIsAbandoned(t *testing.T) {
	srv := mustServe(t, Config{IdleTimeout: time.Second, KeepAlivePeriod: 200 * time.Millisecond})
	big := bigRaw(8 << 20)
	released := make(chan struct{})
	var sendErr error
	srv.HandleSession(typeStallSend, func(ctx context.Context, p Peer, first Frame, s *Session) error {
		for {
			err := s.Send(ctx, typeStallSend, big)
			if err != nil {
				// As the leader's fetch session does: the frame's pins are
				// released once Send returns.
				sendErr = err
				close(released)
				return nil
			}
		}
	})
	conn, str := openRawSession(t, srv.Addr(), typeStallSend)
	// The peer acknowledges the server's keep-alives but never reads.
	select {
	case <-released:
	case <-time.After(15 * time.Second):
		t.Fatal("Send to a peer that never reads was still blocked after 15s")
	}
	if !errors.Is(sendErr, ErrSendStalled) {
		t.Fatalf("Send returned %v, want ErrSendStalled", sendErr)
	}
	waitFor(t, 10*time.Second, "the session handler to end", func() bool { return srv.active.count() == 0 })
	// Both ways: the server reset its sending side (our Read fails with its
	// code) and stopped reading (our sending side is canceled).
	_ = str.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64<<10)
	var rerr error
	for rerr == nil {
		_, rerr = str.Read(buf)
	}
	var se *qgo.StreamError
	if !errors.As(rerr, &se) || !se.Remote || se.ErrorCode != StreamCodeCanceled {
		t.Fatalf("reading the abandoned session: %v, want a reset with code %d", rerr, StreamCodeCanceled)
	}
	select {
	case <-str.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop reading the abandoned session")
	}
	if conn.Context().Err() != nil {
		t.Fatal("the connection died: only the stream should end")
	}
	stillServes(t, srv)
}

// The same on the opening side (a follower's fetch session, a raft stream):
// a Send to a server that stops reading returns ErrSendStalled, the session
// is done, and the server's handler sees its stream end.
func TestOpenedSessionSendToPeerThatStopsReadingFails(t *testing.T) {
	srv := mustServe(t, Config{})
	handlerDone := make(chan struct{})
	srv.HandleSession(typeStallNoRead, func(ctx context.Context, p Peer, first Frame, s *Session) error {
		defer close(handlerDone)
		<-ctx.Done()
		return nil
	})
	cli := mustClient(t, Config{IdleTimeout: time.Second, KeepAlivePeriod: 200 * time.Millisecond})
	s, err := cli.OpenSession(context.Background(), srv.Addr(), typeStallNoRead, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := bigRaw(8 << 20)
	errc := make(chan error, 1)
	go func() {
		for {
			if err := s.Send(context.Background(), typeStallNoRead, big); err != nil {
				errc <- err
				return
			}
		}
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrSendStalled) {
			t.Fatalf("Send returned %v, want ErrSendStalled", err)
		}
		var oe *OpError
		if !errors.As(err, &oe) || oe.Op != "send" {
			t.Fatalf("Send returned %v, want an *OpError for send", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Send to a peer that never reads was still blocked after 15s")
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("the session is not done after a stalled Send")
	}
	select {
	case <-handlerDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler did not see the abandoned session end")
	}
	waitFor(t, 10*time.Second, "the session to end on the server", func() bool { return srv.active.count() == 0 })
	stillServes(t, srv)
}

// A Send blocked on flow control still returns promptly, with the context's
// error, when its context ends before the stall limit.
func TestSessionSendContextEndsWhileBlocked(t *testing.T) {
	srv := mustServe(t, Config{})
	srv.HandleSession(typeStallNoRead, func(ctx context.Context, p Peer, first Frame, s *Session) error {
		<-ctx.Done()
		return nil
	})
	cli := mustClient(t, Config{IdleTimeout: time.Minute})
	s, err := cli.OpenSession(context.Background(), srv.Addr(), typeStallNoRead, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := bigRaw(8 << 20)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	for err == nil {
		err = s.Send(ctx, typeStallNoRead, big)
	}
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrSendStalled) {
		t.Fatalf("Send returned %v, want the context's error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Send returned %s after its context ended", d)
	}
	waitFor(t, 10*time.Second, "the session to end on the server", func() bool { return srv.active.count() == 0 })
}

// A slow peer that keeps reading is not cut off, even when one Send lasts
// much longer than the stall limit and the peer reads less than a stallChunk
// per stall limit: the deadline restarts whenever the peer has accepted
// bytes. The reader is paced (a Ticker drops the ticks it misses, so a
// loaded machine only makes it slower): 32 KiB every 50 ms, 1 MiB in 1.6 s,
// more than the 1 s limit. Once the deadline restarted only per MiB written,
// so every run was cut off in the frame's second MiB. The peer's flow
// control window opens every 128 KiB it reads (a quarter of quic-go's
// initial 512 KiB stream window), every 200 ms at this pace: 800 ms short
// of the limit.
func TestSessionSendToSlowReaderIsNotCutOff(t *testing.T) {
	const (
		stall      = time.Second
		frameBody  = 2 << 20 // the second MiB needs 1.6 s of reading
		readChunk  = 32 << 10
		readPeriod = 50 * time.Millisecond // 640 KiB/s
	)
	srv := mustServe(t, Config{IdleTimeout: stall, KeepAlivePeriod: 200 * time.Millisecond})
	big := bigRaw(frameBody)
	type result struct {
		err  error
		took time.Duration
	}
	res := make(chan result, 1)
	srv.HandleSession(typeSlowFeed, func(ctx context.Context, p Peer, first Frame, s *Session) error {
		start := time.Now()
		err := s.Send(ctx, typeSlowFeed, big)
		res <- result{err, time.Since(start)}
		return err
	})
	_, str := openRawSession(t, srv.Addr(), typeSlowFeed)
	want := frameHeaderLen + frameBody
	buf := make([]byte, readChunk)
	tick := time.NewTicker(readPeriod)
	defer tick.Stop()
	got := 0
	_ = str.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		<-tick.C
		n, err := io.ReadFull(str, buf[:min(readChunk, max(want-got, 1))])
		got += n
		if err != nil {
			if got == want && errIsEOF(err) {
				break
			}
			t.Fatalf("after %d of %d bytes: %v", got, want, err)
		}
	}
	r := <-res
	if r.err != nil {
		t.Fatalf("Send to a slow but reading peer failed: %v", r.err)
	}
	if r.took <= stall {
		t.Fatalf("the Send took %s, not longer than the stall limit %s: the test did not exercise a slow reader", r.took, stall)
	}
	t.Logf("Send %s with a stall limit of %s", r.took, stall)
}
