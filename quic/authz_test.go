package quic

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for a logger and a test to share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestNodeOnly(t *testing.T) {
	const nodeType, clientType FrameType = 21, 6
	authz := NodeOnly(nodeType)
	node := Peer{Name: "node2", Authenticated: true, Role: RoleNode, NodeID: 2}
	for _, tc := range []struct {
		name string
		peer Peer
		t    FrameType
		ok   bool
	}{
		{"node sends node frame", node, nodeType, true},
		{"node sends client frame", node, clientType, true},
		{"client sends client frame", Peer{Name: "client", Authenticated: true, Role: RoleClient}, clientType, true},
		{"client sends node frame", Peer{Name: "client", Authenticated: true, Role: RoleClient}, nodeType, false},
		{"role-less certificate sends node frame", Peer{Name: "node1", Authenticated: true}, nodeType, false},
		{"role-less certificate sends client frame", Peer{Name: "node1", Authenticated: true}, clientType, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := authz(tc.peer, tc.t)
			if (err == nil) != tc.ok {
				t.Fatalf("authorize = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrClusterAuthorizationFailed) {
				t.Fatalf("%v does not match ErrClusterAuthorizationFailed", err)
			}
		})
	}
}

func TestPeerCheckNodeID(t *testing.T) {
	for _, tc := range []struct {
		name string
		peer Peer
		id   int32
		ok   bool
	}{
		{"node as itself", Peer{Authenticated: true, Role: RoleNode, NodeID: 2}, 2, true},
		{"node as another node", Peer{Authenticated: true, Role: RoleNode, NodeID: 2}, 3, false},
		{"client as a node", Peer{Authenticated: true, Role: RoleClient}, 0, false},
		{"role-less certificate", Peer{Authenticated: true}, 0, false},
		{"dev mode: anyone as anyone", Peer{}, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.peer.CheckNodeID("broker id", tc.id)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckNodeID = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrClusterAuthorizationFailed) {
				t.Fatalf("%v does not match ErrClusterAuthorizationFailed", err)
			}
		})
	}
}

// TestAuthorizerRefusesClientCertificate: under mutual TLS a client
// certificate's node-only stream (unary or session) is refused before its
// handler runs, with CodeClusterAuthorizationFailed; the same connection
// keeps serving its other requests, and a node certificate gets through.
func TestAuthorizerRefusesClientCertificate(t *testing.T) {
	cluster, _ := mustCertDirs(t)
	var logs lockedBuffer
	srv := mustServe(t, Config{TLS: TLSConfig{Dir: cluster, Name: "node1"}, Authorize: NodeOnly(typeSession, typeFail),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	ran := make(chan Peer, 10)
	srv.Handle(typeFail, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		ran <- p
		return typeFail, nil, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	cli := mustClient(t, Config{TLS: TLSConfig{Dir: cluster, Name: "client"}})
	err := cli.Call(ctx, srv.Addr(), typeFail, nil, nil)
	if !errors.Is(err, ErrClusterAuthorizationFailed) {
		t.Fatalf("client certificate's node-only call: %v, want ErrClusterAuthorizationFailed", err)
	}
	s, err := cli.OpenSession(ctx, srv.Addr(), typeSession, echoMsg{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(ctx); !errors.Is(err, ErrClusterAuthorizationFailed) {
		t.Fatalf("client certificate's node-only session: %v, want ErrClusterAuthorizationFailed", err)
	}
	s.Close()
	select {
	case p := <-ran:
		t.Fatalf("handler ran for %+v", p)
	default:
	}
	var m echoMsg
	if err := cli.Call(ctx, srv.Addr(), typeEcho, echoMsg{N: 7}, &m); err != nil || m.N != 7 {
		t.Fatalf("client request after a refusal: %v %+v", err, m)
	}

	// Two refusals on one connection: one warning naming the peer.
	if got := strings.Count(logs.String(), "cluster authorization failed (logged once"); got != 1 {
		t.Fatalf("%d refusal warnings for one connection, want 1:\n%s", got, logs.String())
	}
	if !strings.Contains(logs.String(), "name=client") {
		t.Fatalf("the warning does not name the peer's certificate:\n%s", logs.String())
	}

	node := mustClient(t, Config{TLS: TLSConfig{Dir: cluster, Name: "node2"}})
	if err := node.Call(ctx, srv.Addr(), typeFail, nil, nil); err != nil {
		t.Fatalf("node certificate refused: %v", err)
	}
	if p := <-ran; !p.Authenticated || p.Role != RoleNode || p.NodeID != 2 || p.Name != "node2" {
		t.Fatalf("handler saw peer %+v, want node2 as node 2", p)
	}
}

// TestAuthorizerDevModeIsPermissive: without mutual TLS nobody is
// authenticated, so the authorizer is not consulted.
func TestAuthorizerDevModeIsPermissive(t *testing.T) {
	srv := mustServe(t, Config{Authorize: func(Peer, FrameType) error { return ClusterAuthorizationError("no") }})
	cli := mustClient(t, Config{})
	var m echoMsg
	if err := cli.Call(context.Background(), srv.Addr(), typeEcho, echoMsg{N: 3}, &m); err != nil || m.N != 3 {
		t.Fatalf("dev mode call: %v %+v", err, m)
	}
}
