package bench

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The ring keeps debug lines whatever the user's level, passes on only
// what that level takes, keeps the newest lines once full, and returns the
// lines since an instant.
func TestRingLogTee(t *testing.T) {
	var out bytes.Buffer
	ring := &ringLog{}
	h := newTeeHandler(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}), ring).WithAttrs([]slog.Attr{slog.String("phase", "failover")})
	mid := time.Now()
	at := func(d time.Duration, lv slog.Level, msg string, args ...any) { // a record stamped mid+d
		r := slog.NewRecord(mid.Add(d), lv, msg, 0)
		r.Add(args...)
		if err := h.Handle(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	at(-time.Millisecond, slog.LevelDebug, "watch answered", "node", 2)
	at(0, slog.LevelWarn, "trial failed", "trial", 3)
	log := slog.New(h)
	if got := out.String(); strings.Contains(got, "watch answered") || !strings.Contains(got, "trial failed") {
		t.Fatalf("user's log at warn: %q", got)
	}
	all := string(ring.since(time.Time{}))
	if !strings.Contains(all, `msg="watch answered" phase=failover node=2`) || !strings.Contains(all, "trial failed") {
		t.Fatalf("ring: %q", all)
	}
	if got := string(ring.since(mid)); strings.Contains(got, "watch answered") || !strings.Contains(got, "trial failed") {
		t.Fatalf("ring since mid: %q", got)
	}
	for i := range ringLogLines + 5 {
		log.Debug("filler", "i", i)
	}
	all = string(ring.since(time.Time{}))
	if strings.Contains(all, "trial failed") || strings.Count(all, "\n") != ringLogLines ||
		!strings.HasSuffix(all, "i=20004\n") || !strings.Contains(all, " i=5\n") || strings.Contains(all, " i=4\n") {
		t.Fatalf("full ring: %d lines, ends %q", strings.Count(all, "\n"), all[len(all)-40:])
	}
}
