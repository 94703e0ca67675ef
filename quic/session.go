package quic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	qgo "github.com/quic-go/quic-go"
)

// Session is a long-lived bidirectional stream of frames. Send may be called
// from one goroutine while another calls Recv; concurrent Sends are
// serialized (each frame is written whole), concurrent Recvs are not allowed.
//
// Cancellation: if the ctx given to Send or Recv ends while the call is
// blocked, the session is aborted both ways (it cannot resume mid-frame) and
// the call returns an error matching ctx.Err(). A Send whose peer accepts no
// bytes for the endpoint's IdleTimeout (it keeps its connection alive but
// stopped reading the stream) aborts the session the same way and returns an
// error matching ErrSendStalled. Close ends it gracefully: the peer's Recv
// returns io.EOF after the frames already sent.
type Session struct {
	str      *qgo.Stream
	peer     Peer
	fr       frameReader
	maxFrame int
	stall    time.Duration // a Send gives up when the peer accepts no bytes for this long
	sendMu   sync.Mutex
	closed   atomic.Bool
	aborted  atomic.Bool
	// ent is the pool entry of a dialed session's connection (nil for a
	// served one): Recv counts as a response awaited (see nudge.go).
	ent *poolEntry
}

func newSession(str *qgo.Stream, peer Peer, fr frameReader, maxFrame int, stall time.Duration) *Session {
	return &Session{str: str, peer: peer, fr: fr, maxFrame: maxFrame, stall: stall}
}

// Peer is the remote side.
func (s *Session) Peer() Peer { return s.peer }

// Done is closed once the session can no longer deliver what Send writes:
// its sending side was closed or aborted, the peer stopped reading, or the
// connection died (closed by the peer, a stateless reset from a restarted
// peer, an idle timeout).
func (s *Session) Done() <-chan struct{} { return s.str.Context().Done() }

// Send encodes v as a frame of type t (a Raw v is sent verbatim). Large
// wire.Bytes fields and a large Raw are written from their own arrays: they must
// not change until Send returns, and nothing refers to them afterwards, even
// when Send failed (the caller may release them at once). A failed write
// ends the session for sending (a frame may have been cut short); a frame
// that could not be encoded (too large) was not written.
func (s *Session) Send(ctx context.Context, t FrameType, v any) error {
	if t.Reserved() {
		return fmt.Errorf("quic: send: frame type 0x%02x is reserved for the transport", uint8(t))
	}
	enc := getEncoder()
	defer putEncoder(enc)
	parts, err := enc.frameParts(t, v, s.maxFrame)
	if err != nil {
		return &OpError{Op: "send", Addr: s.peer.Addr, Err: err}
	}
	return s.write(ctx, parts)
}

func (s *Session) write(ctx context.Context, parts [][]byte) error {
	if err := ctx.Err(); err != nil {
		s.abort(StreamCodeCanceled)
		return &OpError{Op: "send", Addr: s.peer.Addr, Err: err}
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { s.abort(StreamCodeCanceled) })
		defer stop()
	}
	s.sendMu.Lock()
	err := writeStallBounded(s.str, parts, s.stall)
	s.sendMu.Unlock()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, os.ErrDeadlineExceeded) {
			// The peer keeps its connection alive but stopped reading: give
			// up the stream both ways, as for a canceled ctx.
			s.abort(StreamCodeCanceled)
			return &OpError{Op: "send", Addr: s.peer.Addr, Err: fmt.Errorf("%w: no bytes accepted for %s", ErrSendStalled, s.stall)}
		}
		return s.opErr(ctx, "send", err)
	}
	return nil
}

// Recv waits for the next frame. It returns io.EOF when the peer closed the
// session, and a *RemoteError when the peer ended it with an error frame. The
// frame's Body is valid until the next Recv.
func (s *Session) Recv(ctx context.Context) (Frame, error) {
	if err := ctx.Err(); err != nil {
		s.abort(StreamCodeCanceled)
		return Frame{}, &OpError{Op: "recv", Addr: s.peer.Addr, Err: err}
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { s.abort(StreamCodeCanceled) })
		defer stop()
	}
	done := nudged(s.ent)
	f, err := s.fr.next()
	done()
	if err != nil {
		if errIsEOF(err) && ctx.Err() == nil {
			return Frame{}, io.EOF
		}
		if errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrMalformed) {
			// Stop the peer's sending; our side stays open so a handler
			// returning this error can still send its error frame.
			s.str.CancelRead(StreamCodeProtocol)
		}
		return Frame{}, s.opErr(ctx, "recv", err)
	}
	if f.Type == FrameError {
		return Frame{}, remoteErrorFrom(s.peer.Addr, f)
	}
	return f, nil
}

// remoteErrorFrom decodes an error frame.
func remoteErrorFrom(addr string, f Frame) error {
	var eb errorBody
	if err := f.Decode(&eb); err != nil {
		return &OpError{Op: "recv", Addr: addr, Err: fmt.Errorf("undecodable error frame: %w", err)}
	}
	return &RemoteError{Addr: addr, Code: eb.Code, Message: eb.Message}
}

// Close ends the stream both ways: frames already sent are delivered, then
// the peer's Recv returns io.EOF; frames the peer sends afterwards are
// discarded. Close does not wait for a Send blocked on flow control: it
// aborts it.
func (s *Session) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.str.CancelRead(StreamCodeDone)
	if s.aborted.Load() {
		return nil
	}
	if s.sendMu.TryLock() {
		s.str.Close()
		s.sendMu.Unlock()
	} else {
		s.str.CancelWrite(StreamCodeDone)
	}
	return nil
}

// closeWithError sends an error frame, then closes.
func (s *Session) closeWithError(code uint16, msg string) {
	if s.closed.Load() || s.aborted.Load() {
		s.Close()
		return
	}
	if s.sendMu.TryLock() {
		_ = s.str.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
		if _, err := s.str.Write(encodeErrorFrame(code, msg)); err != nil {
			s.aborted.Store(true)
			s.str.CancelWrite(StreamCodeCanceled)
		}
		s.sendMu.Unlock()
	}
	s.Close()
}

// abort cancels the stream both ways with code.
func (s *Session) abort(code qgo.StreamErrorCode) {
	s.aborted.Store(true)
	s.str.CancelRead(code)
	s.str.CancelWrite(code)
}

// opErr wraps a stream error, reporting the caller's context error when the
// stream was aborted because of it.
func (s *Session) opErr(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return &OpError{Op: op, Addr: s.peer.Addr, Err: cerr}
	}
	return opError(op, s.peer.Addr, err)
}
