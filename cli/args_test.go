package cli

import (
	"strings"
	"testing"
)

// A "--" after the positional argument ends the flags; it is not a second argument.
func TestFlagsAfterPositionalWithDoubleDash(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("payments", 1)
	for _, args := range [][]string{
		{"produce", "payments", "--bootstrap", fc.Bootstrap(), "--json", "--"},
		{"produce", "--bootstrap", fc.Bootstrap(), "payments", "--json", "--"},
		{"produce", "--bootstrap", fc.Bootstrap(), "--json", "--", "payments"},
	} {
		out, errOut, code := runClientCLI(t, strings.NewReader("a\n"), args...)
		if code != 0 || !strings.Contains(out, `"offset"`) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// After "--", a flag-looking word is an argument.
	_, errOut, code := runClientCLI(t, nil, "produce", "--bootstrap", fc.Bootstrap(), "payments", "--", "--json")
	if code != 2 || !strings.Contains(errOut, "expected one topic") {
		t.Errorf("produce payments -- --json: exit %d, stderr %q", code, errOut)
	}
}
