package chaos

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHoldDownUntil: the end of a disk-stall hold-down is read from a
// node's /readyz body (node/diskstall_holddown.go's reason, among other
// lines) as the instant at that UTC time of day nearest now, across
// midnight both ways; a body without a hold-down names none.
func TestHoldDownUntil(t *testing.T) {
	const reason = "fenced by the controller (no heartbeat answered recently, or catching up on metadata)\n" +
		"disk stall hold-down: the disk stalled again 5s after the previous stall ended; heartbeats held back 30s after this one (until %s)\n"
	day := func(h, m, s int) time.Time { return time.Date(2026, 12, 4, h, m, s, 0, time.UTC) }
	for _, c := range []struct {
		name  string
		body  string
		now   time.Time
		want  time.Time
		found bool
	}{
		{"later today", fmt.Sprintf(reason, "12:00:35"), day(12, 0, 10), day(12, 0, 35), true},
		{"just past", fmt.Sprintf(reason, "12:00:35"), day(12, 0, 40), day(12, 0, 35), true},
		{"after midnight", fmt.Sprintf(reason, "00:04:30"), day(23, 59, 50), day(24, 4, 30), true},
		{"before midnight, read after it", fmt.Sprintf(reason, "23:59:58"), day(0, 0, 3), day(-1, 59, 58), true},
		{"now in another zone", fmt.Sprintf(reason, "12:00:35"), day(12, 0, 10).In(time.FixedZone("UTC+5", 5*3600)), day(12, 0, 35), true},
		{"ready", "ok\n", day(12, 0, 0), time.Time{}, false},
		{"a stall, no hold-down", "disk stalled: fdatasync of /data/payments-0/00000000000000000000.log in flight for 3.2s\n", day(12, 0, 0), time.Time{}, false},
		{"not a time", fmt.Sprintf(reason, "25:61:00"), day(12, 0, 0), time.Time{}, false},
	} {
		got, ok := holdDownUntil(c.body, c.now)
		if ok != c.found || !got.Equal(c.want) {
			t.Errorf("%s: %v %v, want %v %v", c.name, got, ok, c.want, c.found)
		}
	}
}

// TestHeldUntilReadsReadyz: the nodes' /readyz are read over HTTP; the
// latest hold-down named wins, a ready node and one that does not answer
// name none.
func TestHeldUntilReadsReadyz(t *testing.T) {
	serve := func(body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path != "/readyz":
				http.NotFound(w, r)
				return
			case body != "ok\n":
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			w.Write([]byte(body))
		}))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	soon := time.Now().UTC().Add(40 * time.Second).Truncate(time.Second)
	later := soon.Add(30 * time.Second)
	holding := func(until time.Time) string {
		return fmt.Sprintf("disk stall hold-down: the disk stalled again 5s after the previous stall ended; heartbeats held back 30s after this one (until %s)\n", until.Format(time.TimeOnly))
	}
	addrs := map[int32]string{1: serve("ok\n"), 2: serve(holding(soon)), 3: serve(holding(later)), 4: serve("")}
	until, node := heldUntil(context.Background(), addrs)
	if node != 3 || !until.Equal(later) {
		t.Fatalf("held until %v by node %d, want %v by node 3", until, node, later)
	}
	if until, node := heldUntil(context.Background(), map[int32]string{1: addrs[1], 4: "127.0.0.1:1"}); node != 0 || !until.IsZero() {
		t.Fatalf("held until %v by node %d with no node held aside", until, node)
	}
}
