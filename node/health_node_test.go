package node_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
)

// health asks node id's health endpoint path: its status and body.
func health(t *testing.T, tc *testCluster, id int32, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + tc.node(id).MetricsAddr() + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(body)
}

// waitHealth waits until node id's path answers want with a body holding
// each of parts.
func waitHealth(t *testing.T, tc *testCluster, id int32, path string, want int, parts ...string) string {
	t.Helper()
	var code int
	var body string
	waitFor(t, fmt.Sprintf("node %d %s %d %q", id, path, want, parts), 20*time.Second, func() bool {
		code, body = health(t, tc, id, path)
		if code != want {
			return false
		}
		for _, p := range parts {
			if !strings.Contains(body, p) {
				return false
			}
		}
		return true
	})
	return body
}

// The health endpoints through a rolling restart's steps: every node ready
// and safe to stop; with one node down the others are still ready, but
// stopping one more would refuse acks=all writes (min ISR 2) and leave the
// metadata quorum without a majority; the restarted node is ready once it
// is back in every ISR, and then the others are safe to stop again.
func TestHealthEndpointsThroughARestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, func(cfg *node.Config) { cfg.MetricsAddr = "127.0.0.1:0" })
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 3, ReplicationFactor: 3, MinISR: 2})
	for id := int32(1); id <= 3; id++ {
		waitHealth(t, tc, id, "/healthz", http.StatusOK, "ok")
		waitHealth(t, tc, id, "/readyz", http.StatusOK, "ok")
		waitHealth(t, tc, id, "/safe-to-stop", http.StatusOK, "ok")
	}

	tc.kill(3)
	body := waitHealth(t, tc, 1, "/safe-to-stop", http.StatusServiceUnavailable,
		"3 partitions would fall below min.insync.replicas (acks=all writes refused): payments-",
		"the metadata quorum would lose its majority: 1 other live voters of 3")
	t.Logf("node 1 /safe-to-stop with node 3 down:\n%s", body)
	if code, body := health(t, tc, 1, "/readyz"); code != http.StatusOK {
		t.Fatalf("node 1 /readyz with node 3 down: %d %q", code, body)
	}

	tc.start(3)
	waitHealth(t, tc, 3, "/readyz", http.StatusOK, "ok")
	for id := int32(1); id <= 3; id++ {
		waitHealth(t, tc, id, "/safe-to-stop", http.StatusOK, "ok")
	}
}
