package quic

import (
	"context"
	"runtime"
	"testing"
	"time"

	qgo "github.com/quic-go/quic-go"
)

// heapAlloc returns the live heap after collecting garbage twice (the second
// collection also empties sync.Pool victim caches).
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A caller that got its answer but never closes its side of the stream keeps
// the server's stream open until the connection ends (see serveUnary). It
// must not also keep the request's bytes: otherwise every such stream pins
// up to MaxFrameSize of server memory, MaxIncomingStreams times per
// connection.
func TestAnsweredStreamDoesNotPinRequestBuffer(t *testing.T) {
	srv := mustServe(t, Config{FirstFrameTimeout: time.Minute}) // the race detector makes large writes slow
	conn, err := rawDial(t, srv.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	const (
		streams = 6
		body    = 5 << 20 // above maxPooledReadBuf: a pinned buffer is never reused
	)
	frame := make([]byte, frameHeaderLen+body)
	putHeader(frame, typeFail, body)
	frame[frameHeaderLen] = 0xc0
	before := heapAlloc()
	var strs []*qgo.Stream
	for range streams {
		str, err := conn.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := str.Write(frame); err != nil {
			t.Fatal(err)
		}
		// No FIN: the caller keeps its side open.
		strs = append(strs, str)
	}
	for _, str := range strs {
		if re := readErrorFrame(t, str); re.Code != CodeHandler {
			t.Fatalf("got %+v, want the handler's error", re)
		}
	}
	frame = nil
	const limit = 12 << 20 // the pinned buffers would be 30 MiB
	deadline := time.Now().Add(5 * time.Second)
	for {
		after := heapAlloc()
		grew := int64(after) - int64(before)
		if grew < limit {
			t.Logf("heap grew by %d KiB with %d answered streams held open", grew>>10, streams)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heap grew by %d MiB while %d answered streams are held open: the request buffers are pinned", grew>>20, streams)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The streams are still held (the server waits for the caller's FIN),
	// and end with the connection.
	conn.CloseWithError(0, "")
	waitFor(t, 5*time.Second, "held streams to end with the connection", func() bool { return srv.active.count() == 0 })
}

// A caller that never reads its answer stops the server's response write
// (flow control). The write must give up once the caller accepts nothing for
// IdleTimeout, so the handler's resources (Reply.Done: e.g. segment views
// that keep deleted segments mapped) are released and the stream ends.
func TestResponseToCallerThatNeverReadsIsAbandoned(t *testing.T) {
	srv := mustServe(t, Config{IdleTimeout: time.Second, KeepAlivePeriod: 200 * time.Millisecond})
	const typeBig FrameType = 40
	released := make(chan struct{})
	big := make(Raw, 8<<20) // far above a fresh stream's receive window
	big[0] = 0xc0
	srv.Handle(typeBig, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		return typeBig, Reply{Body: big, Done: func() { close(released) }}, nil
	})
	conn, err := rawDial(t, srv.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	str, err := conn.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := str.Write([]byte{0, 0, 0, 2, byte(typeBig), 0xc0}); err != nil {
		t.Fatal(err)
	}
	// The caller keeps the connection alive (it acknowledges the server's
	// keep-alives) but never reads the stream.
	select {
	case <-released:
	case <-time.After(15 * time.Second):
		t.Fatal("the response to a caller that never reads was still being written after 15s")
	}
	waitFor(t, 10*time.Second, "the abandoned call to end", func() bool { return srv.active.count() == 0 })
	if conn.Context().Err() != nil {
		t.Fatal("the connection died: only the stream should end")
	}
	stillServes(t, srv)
}
