package quic

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	qgo "github.com/quic-go/quic-go"
)

var (
	ErrFrameTooLarge = errors.New("quic: frame too large")
	ErrMalformed     = errors.New("quic: malformed frame")
	// ErrServerClosed is returned by Serve after Shutdown, and (wrapped) by
	// calls on an endpoint that was shut down.
	ErrServerClosed = errors.New("quic: server closed")
	ErrUnknownType  = errors.New("quic: unknown frame type")
	// ErrSendStalled is returned (wrapped in an *OpError) by a Session Send
	// whose peer accepted no bytes for the endpoint's IdleTimeout while its
	// connection stayed alive; the session is aborted both ways.
	ErrSendStalled = errors.New("quic: peer stopped reading")
)

// Error frame codes (RemoteError.Code). Part of the wire format.
const (
	CodeHandler       uint16 = 1 // the handler returned an error
	CodeUnknownType   uint16 = 2 // no handler for the first frame's type
	CodeMalformed     uint16 = 3 // truncated frame or undecodable body
	CodeFrameTooLarge uint16 = 4 // length prefix above the server's limit
	CodeShuttingDown  uint16 = 5 // the server is shutting down; retry elsewhere
	// CodeInternal: the handler's response could not be encoded. A handler
	// that panics is not recovered and gets no error frame: the panic
	// crashes the node, and the caller sees its connection end. That is the
	// policy: a crashed node is fenced and its partitions move, whereas
	// recovering could leave a lock held or state half updated.
	CodeInternal uint16 = 6
	CodeTimeout  uint16 = 7 // the first frame did not arrive in time
	// CodeClusterAuthorizationFailed: the peer's certificate may not send
	// this request (a node-to-node frame from a client certificate) or not
	// as the node it names. Not retriable. See Authorizer.
	CodeClusterAuthorizationFailed uint16 = 8
)

// Stream error codes (QUIC RESET_STREAM / STOP_SENDING). Part of the wire format.
const (
	StreamCodeDone     qgo.StreamErrorCode = 0 // finished; no more data wanted
	StreamCodeCanceled qgo.StreamErrorCode = 1 // the caller's context ended
	StreamCodeProtocol qgo.StreamErrorCode = 2 // the peer broke the framing protocol
	StreamCodeTimeout  qgo.StreamErrorCode = 3 // first-frame timeout
	StreamCodeShutdown qgo.StreamErrorCode = 4 // the endpoint is shutting down
)

// Connection close codes (QUIC CONNECTION_CLOSE). Part of the wire format.
const (
	ConnCodeNoError  qgo.ApplicationErrorCode = 0 // closed without fault
	ConnCodeShutdown qgo.ApplicationErrorCode = 1 // the endpoint shut down
	ConnCodeStale    qgo.ApplicationErrorCode = 2 // the peer reconnected and this connection failed a liveness probe
	// ConnCodeUntrusted: a reloaded ca.crt no longer trusts the peer's
	// certificate (its CA was retired); see Endpoint.ReloadTLS.
	ConnCodeUntrusted qgo.ApplicationErrorCode = 3
	// ConnCodePeerGone: a response was overdue and the peer's port was
	// found closed since its last packet (its process is gone; nudge.go).
	// The peer never reads it; it is what the local calls fail with.
	ConnCodePeerGone qgo.ApplicationErrorCode = 4
)

func streamCodeName(c qgo.StreamErrorCode) string {
	switch c {
	case StreamCodeDone:
		return "done"
	case StreamCodeCanceled:
		return "canceled"
	case StreamCodeProtocol:
		return "protocol violation"
	case StreamCodeTimeout:
		return "first-frame timeout"
	case StreamCodeShutdown:
		return "shutting down"
	}
	return "unknown"
}

func connCodeName(c qgo.ApplicationErrorCode) string {
	switch c {
	case ConnCodeNoError:
		return "no error"
	case ConnCodeShutdown:
		return "shutdown"
	case ConnCodeStale:
		return "stale"
	case ConnCodeUntrusted:
		return "peer certificate no longer trusted"
	case ConnCodePeerGone:
		return "peer gone (its port was found closed)"
	}
	return "unknown"
}

// RemoteError is an error a handler returned, carried back to the caller.
// A handler may return a *RemoteError itself to choose the code (its Addr is
// ignored). It matches ErrUnknownType, ErrMalformed, ErrFrameTooLarge and
// ErrServerClosed with errors.Is for the corresponding transport codes.
type RemoteError struct {
	Addr    string
	Code    uint16
	Message string
}

func (e *RemoteError) Error() string { return "quic: remote " + e.Addr + ": " + e.Message }

// Is maps transport codes to this package's sentinels.
func (e *RemoteError) Is(target error) bool {
	switch e.Code {
	case CodeUnknownType:
		return target == ErrUnknownType
	case CodeMalformed:
		return target == ErrMalformed
	case CodeFrameTooLarge:
		return target == ErrFrameTooLarge
	case CodeShuttingDown:
		return target == ErrServerClosed
	case CodeClusterAuthorizationFailed:
		return target == ErrClusterAuthorizationFailed
	}
	return false
}

// OpError is a failure of Call, CallRaw, OpenSession or a Session operation
// toward one address: what was attempted, where, and what happened. Err is
// the cause (a context error, a quic-go error, ErrMalformed, ...).
type OpError struct {
	Op   string // "dial", "call", "open session", "send", "recv"
	Addr string
	Err  error
}

func (e *OpError) Error() string {
	if e.Op == "dial" && isTimeout(e.Err) {
		return "quic: dial " + e.Addr + ": dial timeout: no QUIC handshake answer (peer down, unreachable or not a paymentlog node)"
	}
	return "quic: " + e.Op + " " + e.Addr + ": " + describe(e.Err)
}

// isTimeout reports the ways a handshake can time out.
func isTimeout(err error) bool {
	var (
		hte *qgo.HandshakeTimeoutError
		ite *qgo.IdleTimeoutError
	)
	return errors.As(err, &hte) || errors.As(err, &ite) || errors.Is(err, context.DeadlineExceeded)
}

func (e *OpError) Unwrap() error { return e.Err }

// opError wraps err unless it is already an *OpError or a *RemoteError.
func opError(op, addr string, err error) error {
	var oe *OpError
	var re *RemoteError
	if errors.As(err, &oe) || errors.As(err, &re) {
		return err
	}
	return &OpError{Op: op, Addr: addr, Err: err}
}

// alertCertificateRequired is TLS alert 116: the server wanted a client
// certificate and got none.
const alertCertificateRequired = 116

// IsClientCertRequired reports whether err is a peer refusing the handshake
// because this side presented no certificate: the peer runs mutual TLS and
// this endpoint is in dev mode (no TLS directory) or has no certificate.
func IsClientCertRequired(err error) bool {
	var te *qgo.TransportError
	return errors.As(err, &te) && te.Remote && te.ErrorCode.IsCryptoError() &&
		uint8(te.ErrorCode) == alertCertificateRequired
}

// describe turns quic-go's errors into sentences that say what happened.
func describe(err error) string {
	var (
		hte *qgo.HandshakeTimeoutError
		ite *qgo.IdleTimeoutError
		ae  *qgo.ApplicationError
		te  *qgo.TransportError
		sre *qgo.StatelessResetError
		se  *qgo.StreamError
		vne *qgo.VersionNegotiationError
	)
	switch {
	case errors.As(err, &hte):
		return "dial timeout: no QUIC handshake answer (peer down or not a paymentlog node)"
	case errors.As(err, &ite):
		return "idle timeout: peer silent (dead, paused or partitioned)"
	case errors.As(err, &sre):
		return "connection reset by peer (stateless reset: the peer restarted or lost the connection)"
	case errors.As(err, &ae):
		side := "we"
		if ae.Remote {
			side = "peer"
		}
		msg := fmt.Sprintf("%s closed the connection with code %d (%s)", side, ae.ErrorCode, connCodeName(ae.ErrorCode))
		if ae.ErrorMessage != "" {
			msg += ": " + ae.ErrorMessage
		}
		return msg
	case errors.As(err, &te):
		if te.ErrorCode.IsCryptoError() {
			side := "we"
			if te.Remote {
				side = "peer"
			}
			msg := te.ErrorMessage
			if msg == "" {
				msg = tls.AlertError(uint8(te.ErrorCode)).Error()
			}
			return fmt.Sprintf("TLS rejected (%s sent alert %d): %s", side, uint8(te.ErrorCode), msg)
		}
		return "transport error: " + te.Error()
	case errors.As(err, &se):
		if se.Remote {
			return fmt.Sprintf("peer canceled the stream with code %d (%s)", se.ErrorCode, streamCodeName(se.ErrorCode))
		}
		return fmt.Sprintf("stream canceled locally with code %d (%s)", se.ErrorCode, streamCodeName(se.ErrorCode))
	case errors.As(err, &vne):
		return "no common QUIC version: " + vne.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline exceeded"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, net.ErrClosed):
		return "endpoint closed"
	}
	return err.Error()
}

// isConnGone reports whether err means the connection (not just a stream) is dead.
func isConnGone(err error) bool {
	var (
		hte *qgo.HandshakeTimeoutError
		ite *qgo.IdleTimeoutError
		ae  *qgo.ApplicationError
		te  *qgo.TransportError
		sre *qgo.StatelessResetError
	)
	return errors.As(err, &hte) || errors.As(err, &ite) || errors.As(err, &ae) ||
		errors.As(err, &te) || errors.As(err, &sre)
}

// isStatelessReset reports whether the peer answered with a stateless reset,
// which proves it never processed anything on that connection since it lost it.
func isStatelessReset(err error) bool {
	var sre *qgo.StatelessResetError
	return errors.As(err, &sre)
}
