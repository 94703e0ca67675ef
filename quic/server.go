package quic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	qgo "github.com/quic-go/quic-go"
)

// Serve accepts connections until Shutdown; it returns ErrServerClosed
// afterwards. When ctx is canceled Serve closes the endpoint (as Close does)
// and returns ErrServerClosed. A client-only endpoint cannot serve.
func (e *Endpoint) Serve(ctx context.Context) error {
	if e.cfg.Addr == "" {
		return errors.New("quic: Serve on a client-only endpoint (Config.Addr is empty)")
	}
	e.mu.Lock()
	if e.mu.closing {
		e.mu.Unlock()
		return ErrServerClosed
	}
	if e.mu.ln != nil {
		e.mu.Unlock()
		return errors.New("quic: Serve called twice")
	}
	ln, err := e.tr.Listen(e.srvTLS, e.srvConf)
	if err != nil {
		e.mu.Unlock()
		return fmt.Errorf("quic: listen %s: %w", e.addr, err)
	}
	e.mu.ln = ln
	e.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { e.Close() })
	defer stop()
	e.log.Info("quic: serving", "addr", e.addr, "mutual_tls", !e.cfg.TLS.Dev())

	for {
		conn, err := ln.Accept(e.hardCtx)
		if err != nil {
			if e.closing() || errors.Is(err, qgo.ErrServerClosed) {
				return ErrServerClosed
			}
			return fmt.Errorf("quic: accept on %s: %w", e.addr, err)
		}
		if !e.trackConn(conn) {
			conn.CloseWithError(ConnCodeShutdown, "endpoint shutting down")
			continue
		}
		e.stats.watch(conn)
		peer := peerOf(conn.RemoteAddr().String(), conn.ConnectionState().TLS, e.mutualTLS)
		peer.ep = e
		// Before any of its streams is served: a request it carries may
		// be answered over our pooled connection to the same peer.
		e.pool.peerConnected(peer, time.Now())
		go e.serveConn(conn, peer)
	}
}

func (e *Endpoint) trackConn(c *qgo.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closing {
		return false
	}
	e.mu.conns[c] = struct{}{}
	return true
}

func (e *Endpoint) untrackConn(c *qgo.Conn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.mu.conns, c)
}

// serveConn accepts the streams of one connection until it dies.
func (e *Endpoint) serveConn(conn *qgo.Conn, peer Peer) {
	defer e.untrackConn(conn)
	pc := &peerConn{Peer: peer}
	seq := &streamSeq{}
	e.log.Debug("quic: connection accepted", "peer", pc.Addr, "name", pc.Name, "role", pc.Role, "node_id", pc.NodeID)
	for {
		str, err := conn.AcceptStream(context.Background())
		if err != nil {
			e.log.Debug("quic: connection ended", "peer", pc.Addr, "err", describe(err))
			e.reloadOnRefusal(context.Cause(conn.Context()))
			return
		}
		go e.serveStream(pc, str, seq, seq.accept())
	}
}

// peerConn is an accepted connection's peer, read once at handshake.
type peerConn struct {
	Peer
	refusalLogged atomic.Bool // the first authorization refusal was logged
}

// authorize applies cfg.Authorize to a stream's first frame under mutual TLS.
func (e *Endpoint) authorize(pc *peerConn, t FrameType) error {
	if e.cfg.Authorize == nil || !e.mutualTLS {
		return nil
	}
	err := e.cfg.Authorize(pc.Peer, t)
	if err != nil {
		e.noteRefusal(pc, t, err)
	}
	return err
}

// noteRefusal logs, at warn and once per connection, a request refused by
// the Authorizer or by a handler's identity check (an error matching
// ErrClusterAuthorizationFailed): a misconfigured or hostile peer would
// otherwise fill the log, and once says what is wrong.
func (e *Endpoint) noteRefusal(pc *peerConn, t FrameType, err error) {
	if pc.refusalLogged.Swap(true) {
		return
	}
	e.log.Warn("quic: request refused: cluster authorization failed (logged once per connection)", "peer", pc.Addr,
		"name", pc.Name, "role", pc.Role, "node_id", pc.NodeID, "type", uint8(t), "err", err)
}

// readBufPool holds unary request buffers.
var readBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxPooledReadBuf = 4 << 20

func getReadBuf() []byte { return (*readBufPool.Get().(*[]byte))[:0] }

func putReadBuf(b []byte) {
	if cap(b) > maxPooledReadBuf || cap(b) == 0 {
		return
	}
	b = b[:0]
	readBufPool.Put(&b)
}

// serveStream reads the first frame (bounded by FirstFrameTimeout), asks the
// Authorizer (under mutual TLS) and hands the stream to the handler
// registered for its type. n is the stream's place in seq, its
// connection's accept order (stream_order.go), released once: here when
// no ordered handler is to run (the first frame failed, a ping, a refusal,
// a type not ordered: as soon as that is known), else by the ordered
// handler's wrapper once the handler has returned. A panic ends the
// process: nothing is left holding a place.
func (e *Endpoint) serveStream(pc *peerConn, str *qgo.Stream, seq *streamSeq, n uint64) {
	peer := pc.Peer
	fr := frameReader{r: str, maxFrame: e.cfg.MaxFrameSize, maxItems: e.cfg.MaxListItems, budget: e.decodeBudget, bodies: e.bodyBudget, buf: getReadBuf()}
	_ = str.SetReadDeadline(time.Now().Add(e.cfg.FirstFrameTimeout))
	f, err := fr.next()
	if err != nil {
		seq.release(n)
		e.rejectStream(peer, str, err)
		putReadBuf(fr.buf)
		return
	}
	_ = str.SetReadDeadline(time.Time{})
	if f.Type == framePing { // the transport's liveness probe: carries nothing
		seq.release(n)
		answerPing(str)
		putReadBuf(fr.buf)
		return
	}
	// Authorization comes first: a refused peer learns nothing about
	// which handlers exist.
	if err := e.authorize(pc, f.Type); err != nil {
		seq.release(n)
		code, msg := errorCode(err)
		refuse(str, StreamCodeDone, code, msg)
		putReadBuf(fr.buf)
		return
	}
	uh, sh, ordered := e.handlers.lookup(f.Type)
	if !ordered {
		seq.release(n)
	}
	if uh == nil && sh == nil {
		e.log.Info("quic: stream with unknown frame type refused", "peer", peer.Addr, "type", uint8(f.Type))
		refuse(str, StreamCodeProtocol, CodeUnknownType, fmt.Sprintf("unknown frame type %d", f.Type))
		putReadBuf(fr.buf)
		return
	}
	if !e.active.add() {
		if ordered {
			seq.release(n)
		}
		refuse(str, StreamCodeShutdown, CodeShuttingDown, "server shutting down")
		putReadBuf(fr.buf)
		return
	}
	defer e.active.done()
	if uh != nil {
		ctx := str.Context()
		if ordered {
			o := &StreamOrder{seq: seq, n: n}
			ctx = context.WithValue(ctx, streamOrderKey{}, o)
			h := uh
			uh = func(ctx context.Context, peer Peer, req Frame) (FrameType, any, error) {
				defer o.Release() // unless h did: before the response is written
				return h(ctx, peer, req)
			}
		}
		e.serveUnary(ctx, pc, str, f, uh, func() { putReadBuf(fr.buf) })
		return
	}
	e.serveSession(pc, str, f, sh, fr)
}

// rejectStream answers a stream whose first frame could not be read.
func (e *Endpoint) rejectStream(peer Peer, str *qgo.Stream, err error) {
	var ne net.Error
	switch {
	case errors.Is(err, ErrFrameTooLarge):
		e.log.Info("quic: oversized frame refused", "peer", peer.Addr, "err", err)
		refuse(str, StreamCodeProtocol, CodeFrameTooLarge, err.Error())
	case errors.Is(err, ErrMalformed):
		e.log.Info("quic: malformed frame refused", "peer", peer.Addr, "err", err)
		refuse(str, StreamCodeProtocol, CodeMalformed, err.Error())
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		e.log.Info("quic: stream closed: no first frame in time", "peer", peer.Addr, "timeout", e.cfg.FirstFrameTimeout)
		refuse(str, StreamCodeTimeout, CodeTimeout, fmt.Sprintf("no complete first frame within %s", e.cfg.FirstFrameTimeout))
	case errIsEOF(err):
		str.CancelWrite(StreamCodeDone)
	default: // reset by the peer or connection gone
		e.log.Debug("quic: stream ended before its first frame", "peer", peer.Addr, "err", describe(err))
		str.CancelRead(StreamCodeCanceled)
		str.CancelWrite(StreamCodeCanceled)
	}
}

// refuseWriteTimeout bounds writing an error frame to a peer that may not read.
const refuseWriteTimeout = time.Second

// refuse stops reading, sends an error frame and closes the stream.
func refuse(str *qgo.Stream, sc qgo.StreamErrorCode, code uint16, msg string) {
	str.CancelRead(sc)
	_ = str.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	if _, err := str.Write(encodeErrorFrame(code, msg)); err != nil {
		str.CancelWrite(sc)
		return
	}
	str.Close()
}

// errorCode picks the error frame code and message for a handler error: a
// *RemoteError's own code, CodeMalformed / CodeFrameTooLarge for the
// transport's decoding errors (a request that failed Decode), else
// CodeHandler.
func errorCode(err error) (uint16, string) {
	var re *RemoteError
	switch {
	case errors.As(err, &re):
		return re.Code, re.Message
	case errors.Is(err, ErrFrameTooLarge):
		return CodeFrameTooLarge, err.Error()
	case errors.Is(err, ErrMalformed):
		return CodeMalformed, err.Error()
	}
	return CodeHandler, err.Error()
}

// serveUnary runs h with ctx (its stream's context, carrying its
// StreamOrder for an ordered handler) and writes its single response
// frame. The caller closes its side of the stream only after reading the
// whole response, so the caller's FIN acknowledges delivery: the call counts as in flight (for
// Shutdown) until it arrives. A caller that never sends it holds the stream
// until the connection ends, like an idle session; MaxIncomingStreams bounds
// how many streams one connection can hold. A caller that stops reading the
// response for IdleTimeout has its stream canceled (see writeStallBounded).
// release frees req's buffer; it is called once the response is written,
// before waiting for the FIN, so a held stream does not also hold the
// request's bytes.
func (e *Endpoint) serveUnary(ctx context.Context, pc *peerConn, str *qgo.Stream, req Frame, h UnaryHandler, release func()) {
	peer := pc.Peer
	respType, resp, herr := h(ctx, peer, req)
	abandoned := false
	var done func()
	if r, ok := resp.(Reply); ok {
		resp, done = r.Body, r.Done
	}
	if herr != nil {
		code, msg := errorCode(herr)
		if code == CodeClusterAuthorizationFailed {
			e.noteRefusal(pc, req.Type, herr)
		}
		writeErrorAndClose(str, code, msg)
	} else {
		enc := getEncoder()
		parts, err := enc.frameParts(respType, resp, e.cfg.MaxFrameSize)
		if err != nil {
			e.log.Error("quic: response could not be encoded", "peer", peer.Addr, "type", uint8(respType), "err", err)
			writeErrorAndClose(str, CodeInternal, err.Error())
		} else if err := writeStallBounded(str, parts, e.cfg.IdleTimeout); err != nil {
			e.log.Debug("quic: response not delivered", "peer", peer.Addr, "err", describe(err))
			str.CancelWrite(StreamCodeCanceled)
			// The call is over: there is no delivery to wait for.
			str.CancelRead(StreamCodeCanceled)
			abandoned = true
		} else {
			str.Close()
		}
		putEncoder(enc)
	}
	if done != nil {
		done()
	}
	release()
	if !abandoned {
		awaitFIN(str)
	}
}

// stallChunk is how much of a unary response or session frame one Write
// hands to the stream.
const stallChunk = 1 << 20

// writeStallBounded writes a unary response or a session frame, giving up
// with an error matching os.ErrDeadlineExceeded when the peer accepts no
// bytes for stall: a peer that does not read its stream (flow control stops
// the write) would otherwise hold the writer and what the bytes pin
// (Reply.Done, a fetch answer's segment views) for as long as its
// connection lives. A slow but reading peer is fine, however slow: each
// Write runs under a deadline stall ahead, and one that expires having
// handed some bytes to the stream goes on with the rest under a new one. So
// the write fails only after a whole stall in which the peer accepted
// nothing, at most twice stall after its last byte accepted. (The deadline
// once restarted only per stallChunk written: a peer reading less than a
// MiB per stall was cut off while it read.) The caller cancels the stream
// after a failure (the frame was cut short).
func writeStallBounded(str *qgo.Stream, parts [][]byte, stall time.Duration) error {
	defer str.SetWriteDeadline(time.Time{})
	parts, j := joinParts(parts)
	defer j.release()
	for _, p := range parts {
		for len(p) > 0 {
			_ = str.SetWriteDeadline(time.Now().Add(stall))
			n, err := str.Write(p[:min(len(p), stallChunk)])
			p = p[n:]
			if err != nil && (n == 0 || !errors.Is(err, os.ErrDeadlineExceeded)) {
				return err
			}
		}
	}
	return nil
}

// awaitFIN waits for the peer to end its side of the stream; more data is a
// protocol violation and cancels reading.
func awaitFIN(str *qgo.Stream) {
	var b [1]byte
	n, err := str.Read(b[:])
	if n > 0 || err != io.EOF {
		str.CancelRead(StreamCodeProtocol)
	}
}

func writeErrorAndClose(str *qgo.Stream, code uint16, msg string) {
	if _, err := str.Write(encodeErrorFrame(code, msg)); err != nil {
		str.CancelWrite(StreamCodeCanceled)
		return
	}
	str.Close()
}

// serveSession hands the stream to h and closes it when h returns.
func (e *Endpoint) serveSession(pc *peerConn, str *qgo.Stream, first Frame, h SessionHandler, fr frameReader) {
	s := newSession(str, pc.Peer, fr, e.cfg.MaxFrameSize, e.cfg.IdleTimeout)
	ctx, cancel := context.WithCancel(e.sessCtx)
	stop := context.AfterFunc(str.Context(), cancel)
	err := h(ctx, pc.Peer, first, s)
	stop()
	cancel()
	if err != nil {
		code, msg := errorCode(err)
		if code == CodeClusterAuthorizationFailed {
			e.noteRefusal(pc, first.Type, err)
		}
		s.closeWithError(code, msg)
		return
	}
	s.Close()
}

// isClosedErr reports a use of a closed socket.
func isClosedErr(err error) bool { return errors.Is(err, net.ErrClosed) }
