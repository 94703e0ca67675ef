package node_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/node"
	"paymentlog/quic"
)

// TestNodeDialsOnlyTheNodeItMeans: under mutual TLS, nodes 1 and 2 of a
// three-controller cluster whose third controller's address is held by an
// impostor — a server with a valid certificate of the cluster CA, but node
// 2's — elect a controller and register without sending the impostor a
// single request: raft streams and controller calls to node 3 are refused
// once the handshake shows the server is not node 3 (quic.ExpectNode).
func TestNodeDialsOnlyTheNodeItMeans(t *testing.T) {
	certs := mustClusterCerts(t, 3)
	var streams atomic.Int64
	imp, err := quic.New(context.Background(), quic.Config{Addr: "127.0.0.1:0",
		TLS: quic.TLSConfig{Dir: certs, Name: "node2"}, Logger: testLogger(t),
		Authorize: func(quic.Peer, quic.FrameType) error {
			streams.Add(1)
			return errors.New("impostor")
		}})
	if err != nil {
		t.Fatal(err)
	}
	go imp.Serve(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		imp.Shutdown(ctx)
	})

	tc := &testCluster{t: t, dir: t.TempDir(), ctrls: map[int32]string{}, addrs: map[int32]string{},
		nodes: map[int32]*node.Node{},
		configure: func(c *node.Config) {
			c.TLSDir, c.CertName = certs, fmt.Sprintf("node%d", c.ID)
			// Node 3 never starts: the new cluster forms with two of its
			// three controllers only with this (see node/rejoin.go).
			c.FirstStartWithMajority = true
		}}
	for id := int32(1); id <= 2; id++ {
		a := freeUDPAddr(t)
		tc.ctrls[id], tc.addrs[id] = a, a
	}
	tc.ctrls[3] = imp.Addr()
	t.Cleanup(tc.killAll)
	tc.start(1)
	tc.start(2)
	// An election and two registrations: raft messages went to every
	// peer, node 3 included, many times over.
	tc.waitAlive(2)
	if n := streams.Load(); n != 0 {
		t.Fatalf("the impostor at node 3's address was sent %d streams", n)
	}
}
