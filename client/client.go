package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"paymentlog/quic"
	"paymentlog/wire"
)

// caller is the one transport operation the client needs. *quic.Endpoint
// satisfies it; tests substitute an in-memory transport.
type caller interface {
	Call(ctx context.Context, addr string, t quic.FrameType, req, resp any) error
}

// ErrClientClosed is returned by calls on a closed Client.
var ErrClientClosed = errors.New("client: closed")

// Client is a connection to one paymentlog cluster: a client-only QUIC
// endpoint and a metadata cache. It is safe for concurrent use.
//
// Lifecycle: New, then any number of Admin, NewProducer and NewConsumer;
// Close the producers and consumers first, then Close the Client, which
// closes the endpoint and every connection. Calls after Close fail with
// ErrClientClosed.
type Client struct {
	cfg  Config
	log  *slog.Logger
	tr   caller
	ep   *quic.Endpoint // nil when tr is a test transport
	meta *metadata

	closeOnce sync.Once
	closed    chan struct{}
}

// New creates a Client. It does not contact the cluster; the first request does.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	ep, err := quic.New(ctx, quic.Config{TLS: cfg.TLS, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("client: transport: %w", err)
	}
	c := newWithCaller(cfg, ep)
	c.ep = ep
	return c, nil
}

// newWithCaller builds a Client over any transport (tests).
func newWithCaller(cfg Config, tr caller) *Client {
	cfg = cfg.withDefaults()
	c := &Client{cfg: cfg, log: cfg.Logger, tr: tr, closed: make(chan struct{})}
	c.meta = newMetadata(c)
	return c
}

// Close shuts the endpoint down; in-flight calls fail. It waits for the
// endpoint's shutdown until ctx ends.
func (c *Client) Close(ctx context.Context) error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.ep != nil {
			err = c.ep.Shutdown(ctx)
			if errors.Is(err, quic.ErrServerClosed) {
				err = nil
			}
		}
	})
	return err
}

func (c *Client) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// call sends one request and decodes the response, bounded by timeout.
// Read-only requests go out marked quic.Idempotent: when the node restarted
// since the pooled connection was made, the transport sends them again to
// the new process instead of failing them.
func (c *Client) call(ctx context.Context, addr string, t quic.FrameType, req, resp any) error {
	if c.isClosed() {
		return ErrClientClosed
	}
	if readOnly(t) {
		ctx = quic.Idempotent(ctx)
	}
	return c.tr.Call(ctx, addr, t, req, resp)
}

// readOnly reports whether requests of type t change nothing on the node.
func readOnly(t quic.FrameType) bool {
	switch t {
	case wire.TypeMetadata, wire.TypeDescribeCluster, wire.TypeFetch, wire.TypeListOffsets, wire.TypeOffsetFetch, wire.TypeListGroups,
		wire.TypeDescribeACLs, wire.TypeDescribeProducers:
		return true
	}
	return false
}

// Bootstrap returns the configured bootstrap addresses.
func (c *Client) Bootstrap() []string { return append([]string(nil), c.cfg.Bootstrap...) }

// ErrorCode returns the wire error code carried by err (wire.None if err is
// nil, wire.Unknown if err carries no code).
func ErrorCode(err error) wire.ErrorCode {
	if err == nil {
		return wire.None
	}
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return wire.Unknown
}
