package node

import (
	"strings"
	"testing"
	"time"
)

// TestHoldDownReasonNamesItsEnd: /readyz's hold-down line starts with
// "disk stall hold-down:" and ends with "(until HH:MM:SS)" in UTC, the
// form the chaos nemesis reads to wait out a hold-down
// (bench/chaos/nemesis_holddown.go): a change here must change it there.
func TestHoldDownReasonNamesItsEnd(t *testing.T) {
	var h stallHoldDown
	end := time.Date(2026, 12, 4, 12, 0, 5, 0, time.FixedZone("UTC+2", 2*3600))
	h.started(end.Add(-time.Minute))
	h.stopped(end.Add(-50 * time.Second))
	h.started(end.Add(-45 * time.Second))
	h.stopped(end.Add(-30 * time.Second))
	why := h.reason(end.Add(-10 * time.Second))
	if !strings.HasPrefix(why, "disk stall hold-down: ") || !strings.HasSuffix(why, "(until 10:00:05)") {
		t.Fatalf("reason %q", why)
	}
}
