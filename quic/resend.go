package quic

import (
	"context"
	"errors"

	qgo "github.com/quic-go/quic-go"
)

// Resending a request after the peer restarted.
//
// A peer killed and started again on the same address forgets every
// connection it had. Our pooled connection to it looks alive until a packet
// we send reaches the new process, which answers with a stateless reset
// (quic-go's keep-alive PINGs are too small to draw one: a restart is
// noticed by the next request, or by the idle timeout). So the first request
// after the restart fails, though the new process is up: a consumer's fetch,
// a producer's batch or a metadata poll costs the caller a failed attempt, a
// metadata refresh and a retry backoff. (A restarted peer that dials us first
// is caught earlier by the probe in reconnect.go.)
//
// What a stateless reset proves: the process now at the address holds no
// state for the connection, so it did not process our request. It proves
// nothing about the process before it. The request may have reached the old
// process, been processed (a produce appended, a topic created), and the old
// process killed before its answer left, or before it acknowledged the
// packets; our next packet then draws the new process's reset. Nor does an
// unacknowledged request prove non-delivery: a handler runs as soon as the
// frame is read, before the acknowledgement goes out (up to the peer's ACK
// delay later), so a process killed in between processed a request it never
// acknowledged. The transport cannot tell "never reached the old process"
// from "processed by it, answer lost", so it never resends on its own.
//
// The caller can: Idempotent(ctx) declares that processing the request twice
// has the effect of processing it once (reads; an idempotent producer's
// batch, which the partition deduplicates by producer id and sequence). Such
// a request, when its connection died by a stateless reset (or was closed by
// our own liveness probe as stale) before its answer came, is sent once more
// on a fresh connection to the new process, within the caller's context. A
// request without the mark fails as before with the reset, and its caller
// decides (the outcome is unknown).

type idempotentKey struct{}

// Idempotent returns a context under which Call and CallRaw may send their
// request a second time, on a new connection, when the first connection
// turned out to belong to a peer process that no longer exists (the peer
// restarted). Use it only for requests whose second processing changes
// nothing: a resent request may be processed twice, once by the old process
// and once by the new one.
func Idempotent(ctx context.Context) context.Context {
	return context.WithValue(ctx, idempotentKey{}, true)
}

// isIdempotent reports whether ctx carries Idempotent's mark.
func isIdempotent(ctx context.Context) bool {
	v, _ := ctx.Value(idempotentKey{}).(bool)
	return v
}

// peerLostConn reports whether conn died because its peer no longer knows
// it: a stateless reset from the process now at the address (it restarted),
// or our liveness probe closing it as stale after a reconnect (reconnect.go).
// err is the request's error: quic-go fails the streams with the reset
// before it cancels the connection's context. Any other end (idle timeout,
// the peer's close, our shutdown) is not a restart a resend could reach.
func peerLostConn(conn *qgo.Conn, err error) bool {
	if isStatelessReset(err) || isStaleClose(err) {
		return true
	}
	if conn.Context().Err() == nil {
		return false
	}
	cause := context.Cause(conn.Context())
	return isStatelessReset(cause) || isStaleClose(cause)
}

// isStaleClose reports whether err is our own close of a connection that
// failed a liveness probe.
func isStaleClose(err error) bool {
	var ae *qgo.ApplicationError
	return errors.As(err, &ae) && !ae.Remote && ae.ErrorCode == ConnCodeStale
}
