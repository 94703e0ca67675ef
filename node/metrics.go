package node

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"
)

// startMetrics serves /metrics (Prometheus text format), the health checks
// (/healthz, /readyz, /safe-to-stop: health.go) and /debug/pprof on
// cfg.MetricsAddr until ctx ends. The server is one of the node's tasks:
// Shutdown and Kill return only after it has stopped listening and its
// handlers have returned.
func (n *Node) startMetrics(ctx context.Context) error {
	ln, err := net.Listen("tcp", n.cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("node: metrics listen: %w", err)
	}
	n.metricsAddr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/metrics", n.serveMetrics)
	mux.HandleFunc("/healthz", n.serveHealth(alive))
	mux.HandleFunc("/readyz", n.serveHealth(healthView.notReady))
	mux.HandleFunc("/safe-to-stop", n.serveHealth(healthView.unsafeToStop))
	n.serveHTTP(ctx, "metrics", ln, mux)
	return nil
}

// MetricsAddr is the address /metrics is served on: Config.MetricsAddr with
// its port resolved (port 0 picks a free one), or "" when metrics are off.
func (n *Node) MetricsAddr() string { return n.metricsAddr }

// metricsShutdownGrace is how long a stopping metrics server lets requests
// in progress finish before it closes their connections.
const metricsShutdownGrace = 200 * time.Millisecond

// serveHTTP serves h on ln as a task of the node (see goRun) until ctx ends,
// then stops: it closes ln, gives requests in progress metricsShutdownGrace
// to finish, closes their connections (which cancels their contexts: pprof's
// profile and trace handlers stop early) and waits for every handler to
// return. A server that stops on its own is logged, not fatal.
func (n *Node) serveHTTP(ctx context.Context, name string, ln net.Listener, h http.Handler) {
	handlers := &trackedHandler{h: h}
	srv := &http.Server{Handler: handlers, ReadHeaderTimeout: 5 * time.Second}
	n.goRun(ctx, name, func(ctx context.Context) error {
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		select {
		case err := <-served:
			n.log.Warn("metrics server stopped", "err", err)
			srv.Close() // its connections
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), metricsShutdownGrace)
			if err := srv.Shutdown(sctx); err != nil {
				srv.Close()
			}
			cancel()
			<-served
		}
		handlers.stop()
		return nil
	})
}

// trackedHandler runs h until stop, which waits for the calls in progress;
// later requests are answered 503.
type trackedHandler struct {
	h      http.Handler
	active sync.WaitGroup
	mu     struct {
		sync.Mutex
		stopped bool
	}
}

func (t *trackedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t.mu.Lock()
	if t.mu.stopped {
		t.mu.Unlock()
		http.Error(w, "node stopping", http.StatusServiceUnavailable)
		return
	}
	t.active.Add(1)
	t.mu.Unlock()
	defer t.active.Done()
	t.h.ServeHTTP(w, r)
}

func (t *trackedHandler) stop() {
	t.mu.Lock()
	t.mu.stopped = true
	t.mu.Unlock()
	t.active.Wait()
}
