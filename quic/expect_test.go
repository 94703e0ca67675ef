package quic

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestExpectNodeChecksTheServerDialed: a node that dials node N (ExpectNode)
// refuses a server holding another node's certificate or a client
// certificate, before any request leaves it; without an expectation, and in
// dev mode, any server is accepted.
func TestExpectNodeChecksTheServerDialed(t *testing.T) {
	cluster, _ := mustCertDirs(t)
	var served atomic.Int64
	serve := func(cfg Config) *Endpoint {
		srv := mustServe(t, cfg)
		srv.Handle(50, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
			served.Add(1)
			return 50, nil, nil
		})
		return srv
	}
	node1 := serve(Config{TLS: TLSConfig{Dir: cluster, Name: "node1"}})
	// A client certificate valid for the server's address: the handshake
	// accepts it, only its role tells it from a node.
	if err := IssueCert(cluster, "client-127", []string{"127.0.0.1"}, CertOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	impostor := serve(Config{TLS: TLSConfig{Dir: cluster, Name: "client-127"}})
	dialer := mustClient(t, Config{TLS: TLSConfig{Dir: cluster, Name: "node2"}})

	both := func(ctx context.Context, addr string) (callErr, sessErr error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		callErr = dialer.Call(ctx, addr, 50, nil, nil)
		s, err := dialer.OpenSession(ctx, addr, typeSession, echoMsg{})
		if err == nil {
			s.Close()
		}
		return callErr, err
	}
	for _, tc := range []struct {
		name string
		addr string
		ctx  context.Context
		ok   bool
	}{
		{"node 1 expected, node 1 answers", node1.Addr(), ExpectNode(context.Background(), 1), true},
		{"node 3 expected, node 1 answers", node1.Addr(), ExpectNode(context.Background(), 3), false},
		{"node 1 expected, a client certificate answers", impostor.Addr(), ExpectNode(context.Background(), 1), false},
		{"no expectation", impostor.Addr(), context.Background(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := served.Load()
			callErr, sessErr := both(tc.ctx, tc.addr)
			for what, err := range map[string]error{"Call": callErr, "OpenSession": sessErr} {
				if tc.ok && err != nil {
					t.Errorf("%s: %v", what, err)
				}
				if !tc.ok && !errors.Is(err, ErrUnexpectedServer) {
					t.Errorf("%s: err %v, want ErrUnexpectedServer", what, err)
				}
			}
			if n := served.Load() - before; !tc.ok && n != 0 {
				t.Errorf("the unexpected server was sent %d requests", n)
			}
		})
	}

	t.Run("dev mode", func(t *testing.T) {
		dev := serve(Config{})
		devDialer := mustClient(t, Config{})
		ctx, cancel := context.WithTimeout(ExpectNode(context.Background(), 3), 10*time.Second)
		defer cancel()
		if err := devDialer.Call(ctx, dev.Addr(), 50, nil, nil); err != nil {
			t.Fatalf("dev mode authenticates nobody, so it expects nothing: %v", err)
		}
	})
}
