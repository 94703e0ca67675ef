package node

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// The metrics server is one of the node's tasks: once the node's tasks have
// stopped (what Shutdown and Kill wait for), its listener is closed and no
// handler still runs (one would read the closed broker and raft node).
func TestMetricsServerStopsWithTheNode(t *testing.T) {
	n := &Node{log: slog.New(slog.DiscardHandler), done: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	entered, canceled, hold := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var returned atomic.Bool
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer returned.Store(true)
		close(entered)
		<-r.Context().Done() // like pprof's profile: runs until the client goes or the server closes
		close(canceled)
		<-hold // still busy after its connection is gone
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n.serveHTTP(ctx, "metrics", ln, h)
	go func() {
		if resp, err := http.Get("http://" + addr + "/debug/pprof/profile"); err == nil {
			resp.Body.Close()
		}
	}()
	waitChan(t, entered, "the request to reach its handler")

	cancel() // what Shutdown and Kill do first
	stopped := make(chan struct{})
	go func() {
		n.wg.Wait() // what Shutdown and Kill wait for
		close(stopped)
	}()
	waitChan(t, canceled, "the server to cancel the request in progress")
	select {
	case <-stopped:
		t.Fatal("the node's tasks stopped while a metrics handler was still running")
	default:
	}
	close(hold)
	waitChan(t, stopped, "the node's tasks to stop")
	if !returned.Load() {
		t.Fatal("the node's tasks stopped before the metrics handler returned")
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("the metrics address still accepts connections after the node stopped")
	}
}

func waitChan(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
