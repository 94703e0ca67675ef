package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// consume --from TIME starts each partition at its first record stamped at
// or after TIME, given as @UNIX_MS or RFC 3339 in any zone; a time after
// every record starts at the end (nothing to print with --exit-at-end).
func TestConsumeFromTime(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 1)
	if _, errOut, code := runClientCLI(t, strings.NewReader("a\nb\n"), "produce", "t", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	// Every record of the first produce is stamped at or before before;
	// the second's are stamped at or after cut, a millisecond later.
	before := time.Now()
	cut := time.UnixMilli(before.UnixMilli() + 1)
	for time.Now().Before(cut) {
		time.Sleep(100 * time.Microsecond) // the clock passing cut is the condition
	}
	if _, errOut, code := runClientCLI(t, strings.NewReader("c\nd\n"), "produce", "t", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	for _, from := range []string{
		fmt.Sprintf("@%d", cut.UnixMilli()),
		cut.UTC().Format(time.RFC3339Nano),
		cut.In(time.FixedZone("", 5*3600+1800)).Format(time.RFC3339Nano),
	} {
		out, errOut, code := runClientCLI(t, nil, "consume", "t", "--from", from, "--exit-at-end", "--bootstrap", fc.Bootstrap())
		if code != 0 || out != "c\nd\n" {
			t.Errorf("--from %s: exit %d, stdout %q, stderr %q; want c and d", from, code, out, errOut)
		}
	}
	for _, from := range []string{"@0", "now-1h", "NOW-1H"} {
		out, errOut, code := runClientCLI(t, nil, "consume", "t", "--from", from, "--exit-at-end", "--bootstrap", fc.Bootstrap())
		if code != 0 || out != "a\nb\nc\nd\n" {
			t.Errorf("--from %s: exit %d, stdout %q, stderr %q; want every record", from, code, out, errOut)
		}
	}
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	out, errOut, code := runClientCLI(t, nil, "consume", "t", "--from", later, "--exit-at-end", "--bootstrap", fc.Bootstrap())
	if code != 0 || out != "" {
		t.Errorf("--from %s: exit %d, stdout %q, stderr %q; want nothing, exit 0", later, code, out, errOut)
	}
}

func TestConsumeFromTimeUsageErrors(t *testing.T) {
	for _, from := range []string{"2026-13-01T00:00:00Z", "2026-12-01T10:00:00", "@-5", "@soon", "1969-12-31T23:59:59Z", "yesterday", "now-", "now+1h", "now-0s", "now--1h", "now-1x", "nowish"} {
		_, errOut, code := runClientCLI(t, nil, "consume", "t", "--from", from, "--bootstrap", "127.0.0.1:1")
		if code != 2 || !strings.HasPrefix(errOut, "paymentlog: ") || !strings.Contains(errOut, "--from") {
			t.Errorf("--from %s: exit %d, stderr %q; want a usage error naming --from", from, code, errOut)
		}
	}
}
