package quic

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"
)

// Config defaults.
const (
	DefaultMaxIncomingStreams = 10000
	DefaultHandshakeTimeout   = 2 * time.Second
	DefaultIdleTimeout        = 5 * time.Second
	DefaultKeepAlivePeriod    = 1 * time.Second
	DefaultFirstFrameTimeout  = 5 * time.Second
)

// minMaxFrameSize keeps room for error frames.
const minMaxFrameSize = 1 << 10

// Config configures an Endpoint. Zero fields take defaults.
type Config struct {
	Addr               string // UDP listen address, "127.0.0.1:0" for a random port; empty for a client-only endpoint
	TLS                TLSConfig
	MaxFrameSize       int           // DefaultMaxFrameSize; counts type + body; applies to frames received and sent
	MaxListItems       int           // DefaultMaxListItems: list elements + map entries in one decoded frame
	MaxIncomingStreams int64         // default 10000 concurrent streams a peer may open per connection
	HandshakeTimeout   time.Duration // default 2s
	IdleTimeout        time.Duration // default 5s: a silent peer's connection is closed after this; so is the stream of a unary response or session its peer stops reading (no bytes accepted for this long)
	KeepAlivePeriod    time.Duration // default 1s
	FirstFrameTimeout  time.Duration // default 5s: a stream that never sends its first frame is closed
	Logger             *slog.Logger  // default slog.Default()
	// Authorize, when set, vets the first frame of every stream under mutual
	// TLS (nil, or dev mode: every frame type is allowed). A refused stream
	// gets an error frame with its error (CodeClusterAuthorizationFailed from
	// ClusterAuthorizationError); the first refusal on a connection is logged
	// at warn. See NodeOnly.
	Authorize Authorizer
	// ServerTLS and ClientTLS, when set, replace the configurations built from
	// TLS (tests use them to inject broken ones). NextProtos is left as given.
	ServerTLS *tls.Config
	ClientTLS *tls.Config
	// TLSReloadInterval is how often the endpoint reads its TLS files again
	// to pick up rotated certificates (DefaultTLSReloadInterval; negative:
	// only when ReloadTLS is called). Mutual TLS only.
	TLSReloadInterval time.Duration
	// OnTLSReload, when set, is told of every reload that put new TLS files
	// in force and of every refused one (once per set of files refused), as
	// ReloadTLS ran it: the audit trail records them. It must not call
	// ReloadTLS.
	OnTLSReload func(TLSReload)
	// OnRefusedPeer, when set, is told of every handshake this endpoint
	// refused because of its peer's certificate, with the peer's address
	// and RefusedPeer.Side: inbound, a client's certificate it accepted a
	// connection from: none, one that does not verify against ca.crt
	// (unknown CA, expired, not yet valid, not a client certificate) or one
	// revoked.txt lists (refused_peer.go); outbound, the certificate of a
	// server it dialed: the same, or not for the name or address dialed
	// (refused_server.go). It is also told of each call refused to a
	// certificate the handshake accepted but not for the node expected
	// (RefusedWrongNode, either side: Peer.CheckNodeID, ExpectNode;
	// wrong_node.go). The audit trail records them. Mutual TLS from
	// Config.TLS only; which certificates are accepted does not change. It
	// is called on the handshake's (or the call's) goroutine: it must not
	// block.
	OnRefusedPeer func(RefusedPeer)
	// ResetSeed is secret material, stable across restarts, from which the
	// stateless reset key of an endpoint with a fixed Addr is derived (with
	// the address). Default: the TLS key file's contents (mutual TLS), which
	// a certificate rotation changes; nodes keep a seed in their data
	// directory instead.
	ResetSeed []byte
}

// ConfigError names the Config field that is invalid.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "quic: config " + e.Field + ": " + e.Reason }

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.MaxFrameSize != 0 && (c.MaxFrameSize < minMaxFrameSize || c.MaxFrameSize > 1<<30):
		return &ConfigError{"MaxFrameSize", fmt.Sprintf("%d is outside [%d, 1 GiB]", c.MaxFrameSize, minMaxFrameSize)}
	case c.MaxListItems < 0:
		return &ConfigError{"MaxListItems", "negative"}
	case c.MaxIncomingStreams < 0:
		return &ConfigError{"MaxIncomingStreams", "negative"}
	case c.HandshakeTimeout < 0:
		return &ConfigError{"HandshakeTimeout", "negative"}
	case c.IdleTimeout < 0:
		return &ConfigError{"IdleTimeout", "negative"}
	case c.KeepAlivePeriod < 0:
		return &ConfigError{"KeepAlivePeriod", "negative"}
	case c.FirstFrameTimeout < 0:
		return &ConfigError{"FirstFrameTimeout", "negative"}
	case c.TLS.Dir != "" && c.TLS.Name == "":
		return &ConfigError{"TLS.Name", "required with TLS.Dir"}
	}
	return nil
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = DefaultMaxFrameSize
	}
	if c.MaxListItems == 0 {
		c.MaxListItems = DefaultMaxListItems
	}
	if c.MaxIncomingStreams == 0 {
		c.MaxIncomingStreams = DefaultMaxIncomingStreams
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.KeepAlivePeriod == 0 {
		c.KeepAlivePeriod = DefaultKeepAlivePeriod
	}
	if c.FirstFrameTimeout == 0 {
		c.FirstFrameTimeout = DefaultFirstFrameTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TLSReloadInterval == 0 {
		c.TLSReloadInterval = DefaultTLSReloadInterval
	}
	return c
}
