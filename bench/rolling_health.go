package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// healthWait is one wait for a node's health endpoint (node/health.go) to
// answer 200.
type healthWait struct {
	waited   time.Duration // from the first request to the 200
	refusals int           // 503 answers before it
	// unreachable counts requests that got no answer (the node not
	// listening yet, or a request timing out).
	unreachable int
	lastReason  string // the first line of the last 503 (or the last request error)
}

// healthRequestTimeout bounds one request to a health endpoint.
const healthRequestTimeout = time.Second

// waitHealth asks http://addr/path every poll until it answers 200 or ctx
// ends (the error then names the last reason the node gave).
func waitHealth(ctx context.Context, addr, path string, poll time.Duration) (healthWait, error) {
	var hw healthWait
	start := time.Now()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		ok, reason, err := askHealth(ctx, addr, path)
		switch {
		case ok:
			hw.waited = time.Since(start)
			return hw, nil
		case err != nil:
			hw.unreachable++
			hw.lastReason = err.Error()
		default:
			hw.refusals++
			hw.lastReason = reason
		}
		select {
		case <-ctx.Done():
			hw.waited = time.Since(start)
			return hw, fmt.Errorf("bench: %s%s not 200 after %v (%d refusals, %d unanswered; last: %s)",
				addr, path, hw.waited.Round(time.Millisecond), hw.refusals, hw.unreachable, hw.lastReason)
		case <-t.C:
		}
	}
}

// askHealth makes one request: ok on 200; otherwise the answer's first
// line, or the error of a request that got no answer.
func askHealth(ctx context.Context, addr, path string) (ok bool, reason string, err error) {
	ctx, cancel := context.WithTimeout(ctx, healthRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return false, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return true, "", nil
	}
	line, _ := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
	return false, fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(line)), nil
}
