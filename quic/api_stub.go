package quic

// This file is the API contract of package quic that node, raftnode and client
// compile against. The transport helper replaces every body (and may move
// declarations into files named after their concept) but keeps these
// signatures; additions are fine.

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"time"
)

// ALPN is the only protocol spoken.
const ALPN = "paymentlog/1"

// FrameType selects a handler (first frame of a stream) or a message kind.
// Types 0xF0–0xFF are reserved for the transport itself (errors, close).
type FrameType uint8

// Defaults.
const (
	DefaultMaxFrameSize = 16 << 20
	DefaultMaxListItems = 1 << 20
)

var (
	ErrFrameTooLarge = errors.New("quic: frame too large")
	ErrMalformed     = errors.New("quic: malformed frame")
	ErrServerClosed  = errors.New("quic: server closed")
	ErrUnknownType   = errors.New("quic: unknown frame type")
)

// RemoteError is an error a handler returned, carried back to the caller.
type RemoteError struct {
	Addr    string
	Code    uint16
	Message string
}

func (e *RemoteError) Error() string { return "quic: remote " + e.Addr + ": " + e.Message }

// Frame is one received frame. Body aliases an internal buffer valid until the
// next Recv on the same stream; Decode copies what it keeps.
type Frame struct {
	Type FrameType
	Body []byte
}

// Decode checks every length in the msgpack body against the frame's size and
// the list-item limit before allocating anything, then decodes into v.
func (f Frame) Decode(v any) error { panic("unimplemented") }

// TLSConfig says how to authenticate. A zero Dir means dev mode: an ephemeral
// self-signed certificate, no verification, one loud warning.
type TLSConfig struct {
	Dir  string // holds ca.crt, <Name>.crt, <Name>.key (from `paymentlog cert`)
	Name string // certificate name, e.g. "node1" or "client"
}

// Config configures an Endpoint. Zero fields take defaults.
type Config struct {
	Addr               string // UDP listen address, "127.0.0.1:0" for a random port; empty for a client-only endpoint
	TLS                TLSConfig
	MaxFrameSize       int           // DefaultMaxFrameSize
	MaxListItems       int           // DefaultMaxListItems
	MaxIncomingStreams int64         // default 10000
	HandshakeTimeout   time.Duration // default 2s
	IdleTimeout        time.Duration // default 5s
	KeepAlivePeriod    time.Duration // default 1s
	FirstFrameTimeout  time.Duration // default 5s: a stream that never sends its first frame is closed
	Logger             *slog.Logger
	// tlsOverride lets tests inject broken configurations.
	ServerTLS *tls.Config
	ClientTLS *tls.Config
}

// Peer identifies the remote side of a stream.
type Peer struct {
	Addr string
	Name string // certificate common name under mutual TLS
}

// UnaryHandler answers one request frame with one response.
// Returning a non-nil error sends an error frame that the caller's Call returns as *RemoteError.
type UnaryHandler func(ctx context.Context, peer Peer, req Frame) (respType FrameType, resp any, err error)

// SessionHandler owns a long-lived stream; first is the frame that opened it.
type SessionHandler func(ctx context.Context, peer Peer, first Frame, s *Session) error

// Endpoint is one node's UDP socket: it serves registered handlers and dials out
// (client-side calls share the same socket). Lifecycle: New, Handle*, Serve
// (returns ErrServerClosed after Shutdown), Shutdown(ctx).
type Endpoint struct{}

// New creates an endpoint; with an empty cfg.Addr it can only dial.
func New(ctx context.Context, cfg Config) (*Endpoint, error) { panic("unimplemented") }

// Addr is the bound UDP address.
func (e *Endpoint) Addr() string { panic("unimplemented") }

// Handle registers a unary handler for frame type t; HandleSession a session handler.
func (e *Endpoint) Handle(t FrameType, h UnaryHandler)          { panic("unimplemented") }
func (e *Endpoint) HandleSession(t FrameType, h SessionHandler) { panic("unimplemented") }

// Serve accepts connections until Shutdown; it returns ErrServerClosed afterwards.
func (e *Endpoint) Serve(ctx context.Context) error { panic("unimplemented") }

// Shutdown stops accepting, lets in-flight unary calls finish until ctx
// expires, then closes every connection with a code and the socket.
func (e *Endpoint) Shutdown(ctx context.Context) error { panic("unimplemented") }

// Call sends req as a frame of type t to addr on a new stream of the shared
// connection and decodes the single response frame into resp. Context
// cancellation cancels the stream both ways.
func (e *Endpoint) Call(ctx context.Context, addr string, t FrameType, req any, resp any) error {
	panic("unimplemented")
}

// CallRaw is Call with a pre-encoded msgpack body; the response frame is returned
// (its Body valid until the next call by the same goroutine is not guaranteed: copy it).
func (e *Endpoint) CallRaw(ctx context.Context, addr string, t FrameType, body []byte) (Frame, error) {
	panic("unimplemented")
}

// OpenSession opens a long-lived stream to addr whose first frame is (t, first).
func (e *Endpoint) OpenSession(ctx context.Context, addr string, t FrameType, first any) (*Session, error) {
	panic("unimplemented")
}

// Session is a long-lived bidirectional stream of frames. Send may be called
// from one goroutine while another calls Recv.
type Session struct{}

// Send encodes v as a frame of type t.
func (s *Session) Send(ctx context.Context, t FrameType, v any) error { panic("unimplemented") }

// Recv waits for the next frame.
func (s *Session) Recv(ctx context.Context) (Frame, error) { panic("unimplemented") }

// Close ends the stream both ways.
func (s *Session) Close() error { panic("unimplemented") }

// Peer is the remote side.
func (s *Session) Peer() Peer { panic("unimplemented") }
