package quic

import (
	"context"
	"errors"
	"fmt"
	"io"

	qgo "github.com/quic-go/quic-go"
)

// Call sends req as a frame of type t to addr on a new stream of the shared
// connection and decodes the single response frame into resp (resp may be nil
// to discard it). Context cancellation cancels the stream both ways. A
// handler's error comes back as *RemoteError; transport failures as *OpError
// naming the address and what happened.
func (e *Endpoint) Call(ctx context.Context, addr string, t FrameType, req any, resp any) error {
	if t.Reserved() {
		return fmt.Errorf("quic: call: frame type 0x%02x is reserved for the transport", uint8(t))
	}
	enc := getEncoder()
	defer putEncoder(enc)
	parts, err := enc.frameParts(t, req, e.cfg.MaxFrameSize)
	if err != nil {
		return &OpError{Op: "call", Addr: addr, Err: err}
	}
	buf := getReadBuf()
	f, err := e.roundTrip(ctx, addr, parts, buf)
	if err != nil {
		putReadBuf(buf)
		return err
	}
	if resp != nil {
		err = f.Decode(resp)
	}
	putReadBuf(f.Body)
	if err != nil {
		return &OpError{Op: "call", Addr: addr, Err: err}
	}
	return nil
}

// CallRaw is Call with a pre-encoded msgpack body; the response frame is
// returned with a Body the caller owns.
func (e *Endpoint) CallRaw(ctx context.Context, addr string, t FrameType, body []byte) (Frame, error) {
	if t.Reserved() {
		return Frame{}, fmt.Errorf("quic: call: frame type 0x%02x is reserved for the transport", uint8(t))
	}
	enc := getEncoder()
	defer putEncoder(enc)
	parts, err := enc.frameParts(t, Raw(body), e.cfg.MaxFrameSize)
	if err != nil {
		return Frame{}, &OpError{Op: "call", Addr: addr, Err: err}
	}
	return e.roundTrip(ctx, addr, parts, nil)
}

// roundTrip writes one request frame on a new stream and reads the response
// into buf (grown as needed). A connection found dead before the request was
// written is replaced once. A request marked Idempotent whose connection
// turned out to belong to a process that no longer exists (a stateless
// reset: the peer restarted) is sent once more on a new connection (see
// resend.go).
func (e *Endpoint) roundTrip(ctx context.Context, addr string, parts [][]byte, buf []byte) (Frame, error) {
	turn := turnOf(ctx) // WriteAfter: released once written, or at the latest here
	defer turn.written()
	f, conn, err := e.roundTripOnce(ctx, turn, addr, parts, buf)
	var answer *RemoteError // the peer answered: processed, whatever happened to conn since
	if err == nil || conn == nil || ctx.Err() != nil || !isIdempotent(ctx) || errors.As(err, &answer) ||
		!peerLostConn(conn, err) {
		return f, err
	}
	e.pool.drop(addr, conn)
	e.stats.resent.Add(1)
	e.log.Debug("quic: resending an idempotent request: the peer restarted", "peer", addr, "err", describe(err))
	f, _, err = e.roundTripOnce(ctx, turn, addr, parts, buf)
	return f, err
}

// roundTripOnce is one attempt of roundTrip. conn is the connection the
// request was written to (nil if it never was). turn is the Call's place
// in a WriteAfter chain (nil: none).
func (e *Endpoint) roundTripOnce(ctx context.Context, turn *writeTurn, addr string, parts [][]byte, buf []byte) (Frame, *qgo.Conn, error) {
	if err := ctx.Err(); err != nil {
		return Frame{}, nil, &OpError{Op: "call", Addr: addr, Err: err}
	}
	if err := turn.wait(ctx); err != nil {
		return Frame{}, nil, &OpError{Op: "call", Addr: addr, Err: err}
	}
	var (
		str  *qgo.Stream
		ent  *poolEntry
		conn *qgo.Conn
	)
	for attempt := 0; ; attempt++ {
		var err error
		ent, err = e.pool.entry(ctx, addr)
		if err != nil {
			return Frame{}, nil, err
		}
		conn = ent.conn
		str, err = conn.OpenStreamSync(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return Frame{}, nil, &OpError{Op: "call", Addr: addr, Err: ctx.Err()}
		}
		e.pool.drop(addr, conn)
		if attempt > 0 || !isConnGone(err) {
			return Frame{}, nil, opError("call", addr, err)
		}
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			str.CancelRead(StreamCodeCanceled)
			str.CancelWrite(StreamCodeCanceled)
		})
		defer stop()
	}
	// The request goes out without FIN: closing our side after reading the
	// whole response tells the server it was delivered (see serveUnary).
	werr := writeGated(ctx, ent.bulk, str, parts)
	turn.written()
	if werr != nil {
		str.CancelWrite(StreamCodeCanceled)
	}
	// Even if the write failed (the server may have refused the stream early),
	// its error frame may be waiting: read it.
	fr := frameReader{r: str, maxFrame: e.cfg.MaxFrameSize, maxItems: e.cfg.MaxListItems, budget: e.decodeBudget, bodies: e.bodyBudget, buf: buf}
	done := nudged(ent)
	f, err := fr.next()
	done()
	str.CancelRead(StreamCodeDone) // a no-op once FIN was read
	if err != nil {
		str.CancelWrite(StreamCodeCanceled)
		if ctx.Err() != nil {
			return Frame{}, conn, &OpError{Op: "call", Addr: addr, Err: ctx.Err()}
		}
		if werr != nil {
			err = werr
		} else if errIsEOF(err) {
			err = errors.New("peer closed the stream without a response")
		}
		return Frame{}, conn, opError("call", addr, err)
	}
	if werr == nil {
		str.Close()
	}
	if f.Type == FrameError {
		rerr := remoteErrorFrom(addr, f)
		return Frame{}, conn, rerr
	}
	return f, conn, nil
}

// OpenSession opens a long-lived stream to addr whose first frame is (t,
// first). ctx bounds only the opening (dial, stream, first frame), like
// net.Dialer.DialContext; afterwards each Send and Recv takes its own.
func (e *Endpoint) OpenSession(ctx context.Context, addr string, t FrameType, first any) (*Session, error) {
	if t.Reserved() {
		return nil, fmt.Errorf("quic: open session: frame type 0x%02x is reserved for the transport", uint8(t))
	}
	enc := getEncoder()
	defer putEncoder(enc)
	parts, err := enc.frameParts(t, first, e.cfg.MaxFrameSize)
	if err != nil {
		return nil, &OpError{Op: "open session", Addr: addr, Err: err}
	}
	var (
		str  *qgo.Stream
		conn *qgo.Conn
		ent  *poolEntry
	)
	for attempt := 0; ; attempt++ {
		ent, err = e.pool.entry(ctx, addr)
		if err != nil {
			return nil, err
		}
		conn = ent.conn
		str, err = conn.OpenStreamSync(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, &OpError{Op: "open session", Addr: addr, Err: ctx.Err()}
		}
		e.pool.drop(addr, conn)
		if attempt > 0 || !isConnGone(err) {
			return nil, opError("open session", addr, err)
		}
	}
	peer := peerOf(addr, conn.ConnectionState().TLS, e.verifiesServers)
	fr := frameReader{r: str, maxFrame: e.cfg.MaxFrameSize, maxItems: e.cfg.MaxListItems, budget: e.decodeBudget, bodies: e.bodyBudget}
	s := newSession(str, peer, fr, e.cfg.MaxFrameSize, e.cfg.IdleTimeout)
	s.ent = ent
	if err := s.write(ctx, parts); err != nil {
		s.abort(StreamCodeCanceled)
		var oe *OpError
		if errors.As(err, &oe) {
			oe.Op = "open session"
		}
		return nil, err
	}
	return s, nil
}

// bulkWrite is the request size from which a Call's body waits for its
// connection's bulk gate.
const bulkWrite = 64 << 10

// writeGated writes a request; a large one first takes the connection's bulk
// gate, so concurrent large requests go out one after the other instead of
// interleaved packet by packet. Each then reaches the server as one run of
// packets: its reader wakes once per burst instead of once per packet, and
// the first request completes after its own bytes rather than after all of
// them (measured over loopback: about 10% less CPU on the receiving side
// for 10 concurrent 256 KiB calls). Small requests never wait.
func writeGated(ctx context.Context, gate chan struct{}, str io.Writer, parts [][]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n < bulkWrite || gate == nil {
		return writeParts(str, parts)
	}
	select {
	case gate <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-gate }()
	return writeParts(str, parts)
}
